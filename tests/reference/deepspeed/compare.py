#!/usr/bin/python3
"""Compares DeepSpeed's collectives with zerotrain's for one optimizer step, rank by rank.

  compare.py DEEPSPEED_DIR ZEROTRAIN_DIR [--step N] [--world W] [--context K]

DEEPSPEED_DIR holds trace_rank<R>.jsonl (recorder.py), ZEROTRAIN_DIR a run's
comm_trace_rank<R>.jsonl (system.comm_trace: true); both one JSON line per call with step,
rank, op, count, dtype, bytes, root (and phase, micro where known). --step is 0-based (default
1: the second of three, the first steady one). Checked per rank:
  (a) calls and bytes per (op, dtype), exactly;
  (b) the ordered sequence of (op, dtype, count, root), exactly.
Prints the totals side by side and the first difference in the sequence with K calls of
context. Exit status 0 when every rank agrees, 1 on any difference, 2 on missing or bad input.
"""
import argparse
import collections
import glob
import json
import os
import re
import sys


class TraceError(Exception):
    pass


def load(directory, prefix):
    """{rank: [record, ...]} from DIRECTORY/PREFIX<R>.jsonl."""
    traces = {}
    for path in glob.glob(os.path.join(directory, prefix + "*.jsonl")):
        match = re.fullmatch(re.escape(prefix) + r"(\d+)\.jsonl", os.path.basename(path))
        if not match:
            continue
        records = []
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    for field in ("step", "op", "count", "dtype", "bytes", "root"):
                        record[field]
                except (ValueError, KeyError) as e:
                    raise TraceError(f"{path}:{number}: expected a JSON object with step, op, "
                                     f"count, dtype, bytes and root ({e})")
                records.append(record)
        traces[int(match.group(1))] = records
    if not traces:
        raise TraceError(f"{directory}: no {prefix}<R>.jsonl files")
    return traces


def call_key(r):
    return (r["op"], r["dtype"], int(r["count"]), int(r["root"]))


def totals(records):
    out = collections.OrderedDict()
    for r in sorted(records, key=lambda r: (r["op"], r["dtype"])):
        calls, size = out.get((r["op"], r["dtype"]), (0, 0))
        out[(r["op"], r["dtype"])] = (calls + 1, size + int(r["bytes"]))
    return out


def first_difference(a, b):
    """Index of the first call where the sequences differ, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if call_key(x) != call_key(y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def compare_rank(ds, zt):
    t_ds, t_zt = totals(ds), totals(zt)
    return dict(totals_equal=t_ds == t_zt, first_difference=first_difference(ds, zt),
                totals_deepspeed=t_ds, totals_zerotrain=t_zt, calls_deepspeed=len(ds),
                calls_zerotrain=len(zt))


def describe(r):
    if r is None:
        return "-"
    where = ""
    if "phase" in r:
        where = f"  {r['phase']}{r.get('micro', '')}"
    return f"{r['op']} {r['dtype']} {r['count']} {r['root']}{where}"


def totals_table(result):
    keys = list(result["totals_deepspeed"])
    keys += [k for k in result["totals_zerotrain"] if k not in keys]
    lines = [f"    {'op dtype':22} {'DeepSpeed calls':>16} {'bytes':>12} | "
             f"{'zerotrain calls':>16} {'bytes':>12}"]
    for k in sorted(keys):
        a = result["totals_deepspeed"].get(k, (0, 0))
        b = result["totals_zerotrain"].get(k, (0, 0))
        mark = "" if a == b else "   <- differs"
        lines.append(f"    {k[0] + ' ' + k[1]:22} {a[0]:16} {a[1]:12} | {b[0]:16} {b[1]:12}{mark}")
    return lines


def sequence_context(ds, zt, index, context):
    lines = [f"    {'#':>4}  {'DeepSpeed (op dtype count root phase)':44} zerotrain"]
    for i in range(max(0, index - context), min(max(len(ds), len(zt)), index + context + 1)):
        a = ds[i] if i < len(ds) else None
        b = zt[i] if i < len(zt) else None
        mark = ">" if i == index else " "
        lines.append(f"  {mark} {i:4}  {describe(a):44} {describe(b)}")
    return lines


def report(ds_traces, zt_traces, step, context):
    """(lines, ok) for every rank of the step."""
    ranks = sorted(set(ds_traces) | set(zt_traces))
    lines, ok, detailed = [], True, False
    for rank in ranks:
        if rank not in ds_traces or rank not in zt_traces:
            side = "DeepSpeed" if rank not in ds_traces else "zerotrain"
            lines.append(f"rank {rank}: no {side} trace")
            ok = False
            continue
        ds = [r for r in ds_traces[rank] if int(r["step"]) == step]
        zt = [r for r in zt_traces[rank] if int(r["step"]) == step]
        result = compare_rank(ds, zt)
        index = result["first_difference"]
        if result["totals_equal"] and index is None:
            lines.append(f"rank {rank}: same ({len(ds)} calls)")
            continue
        ok = False
        what = []
        if not result["totals_equal"]:
            what.append("calls or bytes per (op, dtype) differ")
        if index is not None:
            what.append(f"sequence differs at call {index} "
                        f"(DeepSpeed {len(ds)} calls, zerotrain {len(zt)})")
        lines.append(f"rank {rank}: " + "; ".join(what))
        if not detailed:  # the first differing rank in full, the others in one line
            lines += totals_table(result)
            if index is not None:
                lines += sequence_context(ds, zt, index, context)
            detailed = True
    return lines, ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("deepspeed_dir")
    parser.add_argument("zerotrain_dir")
    parser.add_argument("--step", type=int, default=1)
    parser.add_argument("--world", type=int, default=0, help="expect ranks 0..W-1")
    parser.add_argument("--context", type=int, default=3)
    args = parser.parse_args()
    try:
        ds = load(args.deepspeed_dir, "trace_rank")
        zt = load(args.zerotrain_dir, "comm_trace_rank")
    except TraceError as e:
        print(f"compare: {e}")
        sys.exit(2)
    for name, traces in (("DeepSpeed", ds), ("zerotrain", zt)):
        if args.world and sorted(traces) != list(range(args.world)):
            print(f"compare: {name}: expected ranks 0..{args.world - 1}, got {sorted(traces)}")
            sys.exit(2)
    lines, ok = report(ds, zt, args.step, args.context)
    print("\n".join(lines))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
