#!/usr/bin/python3
"""What changed in DeepSpeed's collectives between two releases, variant by variant, in terms of
behaviours rather than raw calls.

  release_diff.py A B [--cache DIR | --summaries DIR] [--variants NAME ...]   two releases
  release_diff.py --chain A B C ... [--cache DIR | --summaries DIR]           each against the next
  release_diff.py --export V [--variants NAME ...] [--cache DIR] --out FILE   write a summary

A and B are release versions traced by releases.py (their traces in CACHE/V/traces; "V/torchT"
names a release traced on another torch), folders holding <variant>/ds/trace_rank<R>.jsonl, or
behaviour summaries (FILE.json, or V with --summaries DIR: DIR/V.json). A summary is what
--export writes: per variant the behaviours below (the sequence as its length and SHA-256) or the
exception the variant failed with; release_behaviours/ holds the committed ones.
Variants traced completely in both are compared; one traced in one release and failed in the
other (a ds_config key the release refuses, say) is reported with the exception it failed with;
one not run in either is listed only.

Behaviours read from each variant's traces (rank 0's steady step, the second of three optimizer
steps, unless named otherwise):
  ranks                      whether every rank issues rank 0's sequence
  gradient primitive         the (op, dtype) of the gradient reductions (calls over 2 elements in
                             bwd and step, reduce / all_reduce / reduce_scatter), per phase
  gradient calls, first block  the element counts of those calls in the first micro-step (or
                             step) that has any, in order: where buckets close
  gradient roots, first block  the roots of its rooted reductions, in order
  <phase> <op> <dtype>       calls, elements and bytes per (op, dtype) in fwd, bwd and step
  norm and scalars           the small all-reduces (at most 2 elements) of the step: the norm's
                             dtype and calls, the overflow check
  step all_gather            the element counts of the step's parameter all-gathers, in order
  stage 3 fwd/bwd gathers    the all-gathers of micro-step 0's forward and backward: how many
                             and their sizes (gather granularity, prefetch, persistence)
  broadcasts                 broadcast calls per step (stage 3's trace, the start)
  init / step 0              calls and elements per (op, dtype) before the first step and in it
  other calls                barriers, object collectives, point-to-point (other_rank<R>.jsonl)
  optimizer <attribute>      DeepSpeed's optimizer class and the ZeRO attributes it had
                             (info_rank0.json): "none" where the release has no such attribute
  sequence                   rank 0's ordered steady step (reported only when nothing above
                             differs: then the first differing call)
Exit status: 0 when nothing differs, 1 when something does, 2 on bad input.
"""
import argparse
import collections
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402
from releases import exception_of  # noqa: E402

CACHE = os.path.abspath(os.environ.get("ZT_DEEPSPEED_CACHE", "/work/cache/deepspeed"))
STEADY = 1
GRADIENT_OPS = ("reduce", "all_reduce", "reduce_scatter")
INFO_SKIPPED = ("rank", "world", "deepspeed", "torch", "losses", "global_steps", "group_numels")


def traces_dir(release, cache):
    """CACHE/RELEASE/traces for a traced release, else RELEASE itself as a folder."""
    cached = os.path.join(cache, release, "traces")
    return cached if os.path.isdir(cached) or not os.path.isdir(release) else release


def complete_variants(folder):
    if not os.path.isdir(folder):
        return set()
    return {v for v in os.listdir(folder) if os.path.exists(os.path.join(folder, v, "ds", "complete"))}


def load_others(ds):
    out = {}
    for name in sorted(os.listdir(ds)):
        if name.startswith("other_rank") and name.endswith(".jsonl"):
            with open(os.path.join(ds, name)) as f:
                out[int(name[len("other_rank"):-len(".jsonl")])] = [json.loads(x) for x in f if x.strip()]
    return out


def where(r):
    return f"{r['phase']}{r.get('micro', '')}"


def per_op(records):
    acc = collections.OrderedDict()
    for r in sorted(records, key=lambda r: (r["op"], r["dtype"])):
        calls, elements, size = acc.get((r["op"], r["dtype"]), (0, 0, 0))
        acc[(r["op"], r["dtype"])] = (calls + 1, elements + int(r["count"]), size + int(r["bytes"]))
    return acc


def totals_text(records):
    acc = per_op(records)
    return "; ".join(f"{op} {dtype}: {c} calls, {e} elements" for (op, dtype), (c, e, _) in
                     acc.items()) or "none"


def behaviours(ds):
    """{behaviour: value} of one variant's trace folder (its ds/ folder)."""
    traces = compare.load(ds, "trace_rank")
    b = collections.OrderedDict()
    steady = {r: [x for x in t if int(x["step"]) == STEADY] for r, t in traces.items()}
    rank0 = steady[0]
    keys0 = [compare.call_key(x) for x in rank0]
    others = [r for r in sorted(steady) if r and [compare.call_key(x) for x in steady[r]] != keys0]
    b["ranks"] = "every rank issues rank 0's sequence" if not others else \
        f"ranks {others} differ from rank 0"
    grads = [x for x in rank0 if x["phase"] in ("bwd", "step") and x["op"] in GRADIENT_OPS
             and int(x["count"]) > 2]
    b["gradient primitive"] = ", ".join(sorted({f"{x['phase']}: {x['op']} {x['dtype']}"
                                                for x in grads})) or "none"
    first = [x for x in grads if grads and where(x) == where(grads[0])]
    b["gradient calls, first block"] = (f"{where(first[0])}: " + " ".join(
        str(x["count"]) for x in first)) if first else "none"
    b["gradient roots, first block"] = " ".join(
        str(x["root"]) for x in first if int(x["root"]) >= 0) or "none"
    for phase in ("fwd", "bwd", "step"):
        for (op, dtype), (c, e, size) in per_op([x for x in rank0 if x["phase"] == phase]).items():
            b[f"{phase} {op} {dtype}"] = f"{c} calls, {e} elements, {size} bytes"
    small = [x for x in rank0 if x["phase"] == "step" and x["op"] == "all_reduce"
             and int(x["count"]) <= 2]
    b["norm and scalars"] = " ".join(f"{x['dtype']}x{x['count']}" for x in small) or "none"
    b["step all_gather"] = " ".join(
        str(x["count"]) for x in rank0 if x["phase"] == "step" and x["op"] == "all_gather") or "none"
    for phase in ("fwd", "bwd"):
        gathers = [x for x in rank0 if x["phase"] == phase and int(x.get("micro", 0)) == 0
                   and x["op"] == "all_gather"]
        if gathers:
            b[f"{phase}0 gathers"] = f"{len(gathers)}: " + " ".join(str(x["count"]) for x in gathers)
    casts = collections.Counter(int(x["step"]) for x in traces[0] if x["op"] == "broadcast")
    b["broadcasts per step"] = " ".join(f"step {s}: {n}" for s, n in sorted(casts.items())) or "none"
    b["init"] = totals_text([x for x in traces[0] if int(x["step"]) < 0])
    b["step 0"] = totals_text([x for x in traces[0] if int(x["step"]) == 0])
    other = load_others(ds).get(0)
    if other is not None:
        count = collections.Counter(f"{x['call']} ({'init' if x['step'] < 0 else x['phase']})"
                                    for x in other if x["step"] <= STEADY)
        b["other calls"] = ", ".join(f"{k} x{n}" for k, n in sorted(count.items())) or "none"
    info_path = os.path.join(ds, "info_rank0.json")
    if os.path.exists(info_path):
        info = json.load(open(info_path))
        for k, v in sorted(info.items()):
            if k not in INFO_SKIPPED:
                b[f"optimizer {k}"] = str(v)
    b["sequence"] = keys0
    return b


def sequence_digest(sequence):
    """A summary's form of the ordered steady step: its length and SHA-256."""
    if isinstance(sequence, str):
        return sequence
    text = "\n".join(" ".join(map(str, call)) for call in sequence)
    return f"{len(sequence)} calls, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}"


def summary_of(b):
    """The behaviours as a summary keeps them (JSON: the sequence digested)."""
    return collections.OrderedDict((k, sequence_digest(v) if k == "sequence" else v)
                                   for k, v in b.items())


def diff_behaviours(a, b):
    """[(behaviour, A's value, B's value)] that differ."""
    out = []
    for k in list(a) + [k for k in b if k not in a]:
        if k == "sequence" or (k == "other calls" and (k not in a or k not in b)):
            continue
        if a.get(k, "none") != b.get(k, "none"):
            out.append((k, a.get(k, "none"), b.get(k, "none")))
    digests = sequence_digest(a["sequence"]), sequence_digest(b["sequence"])
    if out or digests[0] == digests[1]:
        return out
    if isinstance(a["sequence"], str) or isinstance(b["sequence"], str):
        return [("sequence",) + digests]
    i = next((i for i, (x, y) in enumerate(zip(a["sequence"], b["sequence"])) if x != y),
             min(len(a["sequence"]), len(b["sequence"])))
    show = lambda s: " ".join(map(str, s[i])) if i < len(s) else "end"
    out.append(("sequence", f"call {i}: {show(a['sequence'])}", f"call {i}: {show(b['sequence'])}"))
    return out


class Release:
    """One side of a diff: per variant its behaviours (traced) or why it did not trace."""

    def __init__(self, name, cache, summaries=None):
        self.name, self.traced, self.failed = name, {}, {}
        path = os.path.join(summaries, f"{name}.json") if summaries else name
        if path.endswith(".json"):
            if not os.path.isfile(path):
                raise compare.TraceError(f"{name}: no behaviour summary {path}")
            data = json.load(open(path))
            self.traced = data["variants"]
            self.failed = data.get("failed", {})
            self.name = data.get("release", name) if not summaries else name
            return
        folder = traces_dir(name, cache)
        self.folder = folder
        have = complete_variants(folder)
        if not have:
            raise compare.TraceError(f"{name}: no complete traces in {folder}")
        self.traced = {v: None for v in have}  # read on demand: traces are large
        if os.path.isdir(folder):
            for v in os.listdir(folder):
                ds = os.path.join(folder, v, "ds")
                if v not in have and os.path.isdir(ds):
                    why = exception_of(ds)
                    self.failed[v] = f"failed: {why}" if why else \
                        f"not complete (no exception in {ds})"

    def behaviours(self, variant):
        if self.traced[variant] is None:
            self.traced[variant] = behaviours(os.path.join(self.folder, variant, "ds"))
        return self.traced[variant]

    def state(self, variant):
        return "traced" if variant in self.traced else self.failed.get(variant, "not run")


def diff_releases(a, b, names=None):
    """({variant: [(behaviour, A's value, B's value)]} that differ, variants compared, variants
    traced in one only)."""
    wanted = set(names) if names else set(a.traced) | set(b.traced)
    both = sorted(set(a.traced) & set(b.traced) & wanted)
    changed = collections.OrderedDict()
    for v in both:
        d = diff_behaviours(a.behaviours(v), b.behaviours(v))
        if d:
            changed[v] = d
    only = sorted((set(a.traced) ^ set(b.traced)) & wanted)
    for v in only:  # traced in one, failed (a refused key, say) or not run in the other
        state = [a.state(v), b.state(v)]
        if "not run" not in state:
            changed[v] = [("runs", state[0], state[1])]
    return changed, both, only


def compare_pair(a, b, cache, names, summaries=None):
    changed, both, only = diff_releases(Release(a, cache, summaries), Release(b, cache, summaries),
                                        names)
    lines = [f"release_diff: {a} -> {b}: {len(both)} variants traced in both, "
             f"{len(changed)} differ" + (f"; traced in one only: {' '.join(only)}" if only else "")]
    for v, d in changed.items():
        lines.append(f"  {v}:")
        for k, x, y in d:
            lines.append(f"    {k}: {x}  ->  {y}")
    return lines, bool(changed)


def export(release, cache, names, out):
    """Writes (or extends) OUT with the behaviour summary of the release's named variants."""
    r = Release(release, cache)
    data = json.load(open(out)) if os.path.exists(out) else {"release": release, "variants": {},
                                                             "failed": {}}
    for v in sorted(names or set(r.traced) | set(r.failed)):
        if v in r.traced:
            data["variants"][v] = summary_of(r.behaviours(v))
            data["failed"].pop(v, None)
        elif v in r.failed:
            data["failed"][v] = r.failed[v]
            data["variants"].pop(v, None)
        else:
            raise compare.TraceError(f"{release}: variant {v} was not run")
    for part in ("variants", "failed"):  # variants by name; behaviours in behaviours()' order
        data[part] = dict(sorted(data[part].items()))
    with open(out, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    return f"release_diff: {out}: {len(data['variants'])} variants of {release}" + (
        f", {len(data['failed'])} failed" if data["failed"] else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*")
    parser.add_argument("--chain", action="store_true", help="each release against the next")
    parser.add_argument("--cache", default=CACHE)
    parser.add_argument("--summaries", help="read releases from DIR/<V>.json summaries")
    parser.add_argument("--variants", nargs="+")
    parser.add_argument("--export", metavar="V", help="write V's behaviour summary to --out")
    parser.add_argument("--out", help="the summary file --export writes (extended if present)")
    args = parser.parse_args()
    try:
        if args.export:
            if not args.out or args.releases:
                print("release_diff: --export V takes --out FILE and no other release",
                      file=sys.stderr)
                sys.exit(2)
            print(export(args.export, os.path.abspath(args.cache), args.variants, args.out))
            return
        if len(args.releases) < 2 or (not args.chain and len(args.releases) != 2):
            print("release_diff: give two releases, or --chain and two or more", file=sys.stderr)
            sys.exit(2)
        any_change = False
        for a, b in zip(args.releases, args.releases[1:]):
            lines, changed = compare_pair(a, b, os.path.abspath(args.cache), args.variants,
                                          args.summaries)
            print("\n".join(lines), flush=True)
            any_change |= changed
    except (compare.TraceError, ValueError, KeyError) as e:
        print(f"release_diff: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if any_change else 0)


if __name__ == "__main__":
    main()
