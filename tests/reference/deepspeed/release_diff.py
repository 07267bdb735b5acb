#!/usr/bin/python3
"""What changed in DeepSpeed's collectives between two releases, variant by variant, in terms of
behaviours rather than raw calls.

  release_diff.py A B [--cache DIR] [--variants NAME ...]       two releases (or trace folders)
  release_diff.py --chain A B C ... [--cache DIR]                each release against the next

A and B are release versions traced by releases.py (their traces in CACHE/V/traces; "V/torchT"
names a release traced on another torch) or folders holding <variant>/ds/trace_rank<R>.jsonl.
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


def diff_variant(a_dir, b_dir):
    """[(behaviour, A's value, B's value)] that differ."""
    a, b = behaviours(a_dir), behaviours(b_dir)
    out = []
    for k in list(a) + [k for k in b if k not in a]:
        if k == "sequence" or (k == "other calls" and (k not in a or k not in b)):
            continue
        if a.get(k, "none") != b.get(k, "none"):
            out.append((k, a.get(k, "none"), b.get(k, "none")))
    if not out and a["sequence"] != b["sequence"]:
        i = next((i for i, (x, y) in enumerate(zip(a["sequence"], b["sequence"])) if x != y),
                 min(len(a["sequence"]), len(b["sequence"])))
        show = lambda s: " ".join(map(str, s[i])) if i < len(s) else "end"
        out.append(("sequence", f"call {i}: {show(a['sequence'])}", f"call {i}: {show(b['sequence'])}"))
    return out


def compare_pair(a, b, cache, names):
    a_dir, b_dir = traces_dir(a, cache), traces_dir(b, cache)
    have_a, have_b = complete_variants(a_dir), complete_variants(b_dir)
    if not have_a or not have_b:
        missing = a if not have_a else b
        raise compare.TraceError(f"{missing}: no complete traces in {traces_dir(missing, cache)}")
    both = sorted((have_a & have_b) & set(names or have_a | have_b))
    lines, changed = [], collections.OrderedDict()
    for v in both:
        d = diff_variant(os.path.join(a_dir, v, "ds"), os.path.join(b_dir, v, "ds"))
        if d:
            changed[v] = d
    only = sorted((have_a ^ have_b) & set(names or have_a | have_b))
    for v in only:  # traced in one, failed (a refused key, say) or not run in the other
        state = []
        for release, folder, have in ((a, a_dir, have_a), (b, b_dir, have_b)):
            ds = os.path.join(folder, v, "ds")
            if v in have:
                state.append("traced")
            elif os.path.isdir(ds):
                why = exception_of(ds)
                state.append(f"failed: {why}" if why else f"not complete (no exception in {ds})")
            else:
                state.append("not run")
        if not any(x == "not run" for x in state):
            changed[v] = [("runs", state[0], state[1])]
    lines.append(f"release_diff: {a} -> {b}: {len(both)} variants traced in both, "
                 f"{len(changed)} differ" + (f"; traced in one only: {' '.join(only)}" if only else ""))
    for v, d in changed.items():
        lines.append(f"  {v}:")
        for k, x, y in d:
            lines.append(f"    {k}: {x}  ->  {y}")
    return lines, bool(changed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="+")
    parser.add_argument("--chain", action="store_true", help="each release against the next")
    parser.add_argument("--cache", default=CACHE)
    parser.add_argument("--variants", nargs="+")
    args = parser.parse_args()
    if len(args.releases) < 2 or (not args.chain and len(args.releases) != 2):
        print("release_diff: give two releases, or --chain and two or more")
        sys.exit(2)
    pairs = list(zip(args.releases, args.releases[1:]))
    any_change = False
    try:
        for a, b in pairs:
            lines, changed = compare_pair(a, b, os.path.abspath(args.cache), args.variants)
            print("\n".join(lines), flush=True)
            any_change |= changed
    except compare.TraceError as e:
        print(f"release_diff: {e}")
        sys.exit(2)
    sys.exit(1 if any_change else 0)


if __name__ == "__main__":
    main()
