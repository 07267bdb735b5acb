#!/usr/bin/python3
"""The change rows of docs/deepspeed_releases.md, checked against the committed behaviour summaries.

  release_table.py check [--summaries DIR] [--doc FILE]   every row follows from the summaries
  release_table.py rows                                    the rows as the page prints them
  release_table.py export [--cache DIR]                    rewrite the summaries from traces

`export` writes, from the traces in the cache (releases.py's), the summaries the rows need (both
releases of each row, the row's variants) and drift.py's baseline (LAST_VERIFIED, DRIFT).

release_behaviours/changes.json lists each change: the behaviour, the last release before it and
the first after it (two patches when bisected), how the patch was found ("traced": both patches
traced; "source": read from the sdists, checked only for its line on the page), the source
change, and what the traces show:
`shows` entries [variant, behaviour, before, after] (release_diff.py's terms and values), and
`also`, behaviours that follow from the change in the same variants (totals, step 0, init).
`check` runs release_diff on the summaries of each pair and fails when a row's `shows` is not in
the diff, when the diff holds something no row of that pair names (an unexplained change), or
when the page lacks the row's generated line. Exit status: 0 when every row holds, 1 otherwise,
2 on bad input.
"""
import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402
import drift  # noqa: E402
import release_diff  # noqa: E402
from release_diff import Release, diff_releases  # noqa: E402

SUMMARIES = os.path.join(HERE, "release_behaviours")
DOC = os.path.join(HERE, "..", "..", "..", "docs", "deepspeed_releases.md")


def load_changes(summaries):
    with open(os.path.join(summaries, "changes.json")) as f:
        return json.load(f)["changes"]


def row_line(c):
    """The change row as docs/deepspeed_releases.md prints it."""
    pair = f"{c['before']} / {c['after']}"
    return (f"| {c['id']} | {c['behaviour']} | {c['was']} | {c['now']} | {pair} | {c['how']} | "
            f"{c['source']} |")


def check(summaries, doc):
    changes = load_changes(summaries)
    problems = []
    by_pair = collections.OrderedDict()
    for c in changes:
        if not c["how"].startswith("source"):  # read from the sdists: nothing traced to check
            by_pair.setdefault((c["before"], c["after"]), []).append(c)
    for (before, after), rows in by_pair.items():
        named = {v for c in rows for v, *_ in c["shows"]}
        changed, _, _ = diff_releases(Release(before, None, summaries),
                                      Release(after, None, summaries), sorted(named))
        found = {(v, k): (x, y) for v, d in changed.items() for k, x, y in d}
        explained = set()
        for c in rows:
            variants = {v for v, *_ in c["shows"]}
            for v, k, *values in c["shows"]:
                if (v, k) not in found:
                    problems.append(f"{c['id']}: {before} -> {after}: {v} shows no change of '{k}'")
                elif values and list(found[(v, k)]) != values:
                    problems.append(f"{c['id']}: {before} -> {after}: {v} '{k}' is "
                                    f"{found[(v, k)][0]} -> {found[(v, k)][1]}, the row says "
                                    f"{values[0]} -> {values[1]}")
                explained.add((v, k))
            explained |= {(v, k) for v in variants for k in c.get("also", [])}
        for v, k in sorted(set(found) - explained):
            problems.append(f"{before} -> {after}: {v} '{k}' changed "
                            f"({found[(v, k)][0]} -> {found[(v, k)][1]}) and no row names it")
    text = open(doc).read() if os.path.exists(doc) else ""
    for c in changes:
        if row_line(c) not in text:
            problems.append(f"{c['id']}: {doc} lacks the row (release_table.py rows prints it)")
    return changes, problems


def export(summaries, cache):
    wanted = collections.defaultdict(set)
    for c in load_changes(summaries):
        if c["how"].startswith("source"):
            continue
        for v, *_ in c["shows"]:
            wanted[c["before"]].add(v)
            wanted[c["after"]].add(v)
    wanted[drift.LAST_VERIFIED] |= set(drift.releases.DRIFT)
    for release, variants in sorted(wanted.items(), key=lambda x: drift.releases.key(x[0])):
        # Written afresh beside the committed summary, which it replaces only once complete:
        # a release whose traces are not in this cache keeps its summary.
        out = os.path.join(summaries, f"{release}.json")
        fresh = out + ".new"
        if os.path.exists(fresh):
            os.remove(fresh)
        print(release_diff.export(release, cache, sorted(variants), fresh))
        os.replace(fresh, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("check", "rows", "export"))
    parser.add_argument("--cache", default=release_diff.CACHE)
    parser.add_argument("--summaries", default=SUMMARIES)
    parser.add_argument("--doc", default=DOC)
    args = parser.parse_args()
    try:
        if args.command == "rows":
            print("\n".join(row_line(c) for c in load_changes(args.summaries)))
            return
        if args.command == "export":
            export(args.summaries, os.path.abspath(args.cache))
            return
        changes, problems = check(args.summaries, os.path.abspath(args.doc))
    except (compare.TraceError, OSError, ValueError, KeyError) as e:
        print(f"release_table: {e}", file=sys.stderr)
        sys.exit(2)
    for p in problems:
        print(f"DIFFERS  {p}")
    print(f"release_table: {len(changes)} change rows, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
