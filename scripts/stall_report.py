#!/usr/bin/python3
"""What every thread did during the slow steps of a run on an emulated cluster.

  scripts/stall_report.py RUN_DIR/metrics.jsonl [--samples SAMPLES.jsonl] [--min-ms 1000]

First line: how many steps took at least MIN_MS (metrics.jsonl's "ms"), the
longest and the median step. With SAMPLES.jsonl (scripts/stall_sample.py's
output for the same run), for each such step (it ends at its "time"), over the
samples inside it: per cluster thread, the seconds it ran on
a CPU and the seconds it was runnable but waiting for one (schedstat deltas),
its timeslices, the states and kernel functions it was seen in; the machine's
CPU time split (user/nice/system/idle, s); the processes outside the cluster
that used the most CPU; the TCP counters that moved in each node namespace
(SYN retransmits, listen overflows, retransmits...) and tc's drops.
"""
import argparse
import collections
import json
import statistics
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("metrics")
    ap.add_argument("--samples")
    ap.add_argument("--min-ms", type=float, default=1000)
    a = ap.parse_args()
    try:
        steps = [json.loads(l) for l in open(a.metrics)]
        samples = [json.loads(l) for l in open(a.samples)] if a.samples else []
    except (OSError, ValueError) as e:
        sys.exit(f"stall_report.py: {e}")
    steps = [s for s in steps if "ms" in s and "time" in s]
    slow = [s for s in steps if s["ms"] >= a.min_ms]
    if not steps:
        sys.exit(f"stall_report.py: {a.metrics}: no step records")
    ms = sorted(s["ms"] for s in steps)
    print(f"{len(slow)} of {len(steps)} steps took >= {a.min_ms:.0f} ms; longest {ms[-1]:.0f} ms, "
          f"median {statistics.median(ms):.0f} ms, all steps {sum(ms) / 1000:.1f} s")
    if not samples:
        return
    for st in slow:
        t1 = st["time"]
        t0 = t1 - st["ms"] / 1000
        win = [r for r in samples if t0 <= r["t"] <= t1]
        if len(win) < 2:
            print(f"\nstep {st['step']}: {st['ms']:.0f} ms, fewer than 2 samples inside it")
            continue
        first, last = win[0], win[-1]
        dt = last["t"] - first["t"]
        cpu = [(y - x) / 100 for x, y in zip(first["cpu"], last["cpu"])]
        print(f"\nstep {st['step']}: {st['ms']:.0f} ms; {len(win)} samples over {dt:.1f} s "
              f"(sampler up to {max(r['late'] for r in win):.1f} s late); machine CPU s "
              f"user {cpu[0]:.1f} nice {cpu[1]:.1f} system {cpu[2]:.1f} idle {cpu[3]:.1f}; "
              f"runnable tasks (median) {sorted(r['procs_running'] for r in win)[len(win) // 2]}")
        print("  ns     tid      comm        ran s  waited s  slices  states / kernel functions")
        for tid, v in sorted(last["tasks"].items(), key=lambda kv: (kv[1][0], int(kv[0]))):
            o = first["tasks"].get(tid)
            if o is None:
                continue
            ran, waited, slices = (v[8] - o[8]) / 1e9, (v[9] - o[9]) / 1e9, v[10] - o[10]
            if ran < 0.05 and waited < 0.2:
                continue
            seen = [r["tasks"][tid] for r in win if tid in r["tasks"]]
            states = dict(collections.Counter(x[3] for x in seen))
            funcs = collections.Counter(x[12].split("<")[0] or "user" for x in seen).most_common(2)
            print(f"  {v[0]:6s} {tid:8s} {v[2]:10s} {ran:6.2f} {waited:8.2f} {slices:8d}  {states} {funcs}")
        alls = [r for r in win if "all" in r]
        if len(alls) >= 2:
            a0, a1 = alls[0]["all"], alls[-1]["all"]
            cluster = {str(v[1]) for v in last["tasks"].values()}
            used = []
            for pid, v in a1.items():
                if pid in a0:
                    used.append(((v[2] + v[3] - a0[pid][2] - a0[pid][3]) / 100, pid, v[0], v[1]))
            used.sort(reverse=True)
            top = [f"{c} {pid}{' (cluster)' if pid in cluster else ''} {u:.1f}s" for u, pid, c, _ in used[:6] if u > 0]
            print(f"  most CPU over {alls[-1]['t'] - alls[0]['t']:.1f} s, whole machine: {', '.join(top)}")
        for ns in sorted(last["net"]):
            if ns in first["net"]:
                moved = {k: last["net"][ns][k] - first["net"][ns].get(k, 0) for k in last["net"][ns]}
                print(f"  {ns} TCP: " + (", ".join(f"{k} +{d}" for k, d in moved.items() if d) or "nothing moved"))
        q0, q1 = first.get("qdisc", {}), last.get("qdisc", {})
        drops = {k: q1[k][0] - q0.get(k, [0])[0] for k in q1 if q1[k][0] - q0.get(k, [0])[0]}
        print(f"  tc drops: {drops or 'none'}")


if __name__ == "__main__":
    main()
