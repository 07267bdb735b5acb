#!/usr/bin/env python3
"""The tables of scripts/recovery_study.sh (docs/recovery.md, "Measured failures").

    /usr/bin/python3 scripts/recovery_summary.py STUDY_DIR

For every trial (STUDY_DIR/SYSTEM/MODEL/KIND-PATH-K/) it reads the kill time
(kill.json), the survivors' failure records (run/failure.attempt-0/), the
supervisor's attempts (attempts.jsonl), the relaunch's "recovered step ..."
line (job.log) and the metrics records (their wall-clock "time"), and splits
the time from the kill to the end of the first step after recovery into:

    detection = the first survivor's record - the kill
    teardown  = the job's end (the supervisor saw it) - detection
    relaunch  = the first step's start - restore - the job's end
                (start-up, MPI, the model, until the restore begins)
    restore   = the relaunch's measured restore ("recovered ... in X s")
    step      = the first step after recovery
    lost      = steps completed before the kill - the step restored (0 when
                the relaunch restored a step that finished after the kill)
    redo      = lost x the run's median step time (the lost steps' work, done
                again after the first step; total + redo is what the failure cost)

Per system, model, kind, path and placement (random: a random moment; phase:
placed by ZT_FAULT_STOP_AT, recovery_study.sh --phases): the median of each
part over the recovered trials, the longest total, the steps lost (median
and most), how many trials needed the disk checkpoint, and the relaunches
beyond the first (a relaunched job that failed again, e.g. a stall that the
peer watch took for a hang). A second table splits the phase-placed trials by
phase, with the phase the survivors' records give for the stopped rank (the
main thread's phase for snapshot_copy, which runs on the copy thread).
"""
import glob
import json
import os
import re
import statistics
import sys

STOPPED = re.compile(r"zerotrain: rank (\d+): ZT_FAULT_STOP_AT: stopping \(SIGSTOP\) at step (\d+), phase (\w+)")
RECOVERED = re.compile(r"^recovered step (\d+) from (in-memory snapshots|disk checkpoint \S+) in ([0-9.]+) s")


def records(path):
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            out.append(json.loads(line))
    return out


def trial(d):
    kill = json.load(open(os.path.join(d, "kill.json")))
    kill.setdefault("phase", "random")
    kill["placement"] = "random" if kill["phase"] == "random" else "phase"
    attempts = records(os.path.join(d, "attempts.jsonl"))
    if len(attempts) < 2 or attempts[-1]["exit"] != 0:
        return dict(kill, ok=False)
    recs = [json.load(open(f)) for f in glob.glob(os.path.join(d, "run", "failure.attempt-0", "rank_*.json"))]
    detected = min((r["detected_unix_s"] for r in recs), default=None)
    restored = stopped = None
    for line in open(os.path.join(d, "job.log"), errors="replace"):
        m = STOPPED.search(line)
        if m and stopped is None:
            stopped = int(m.group(1))
        m = RECOVERED.match(line)
        if m and restored is None:
            restored = (int(m.group(1)), m.group(2).startswith("disk"), float(m.group(3)))
    if restored is None:
        return dict(kill, ok=False)
    at_kill = records(os.path.join(d, "metrics_at_kill.jsonl"))
    done_before = max((r["step"] for r in at_kill if r["time"] < kill["kill_unix_s"]), default=0)
    after = {r["step"]: r for r in records(os.path.join(d, "run", "metrics.jsonl"))}
    first = after.get(restored[0] + 1)
    if first is None:
        return dict(kill, ok=False)
    end0 = attempts[0]["end"]
    first_start = first["time"] - first["ms"] / 1e3
    t = dict(kill, ok=True)
    t["detection_s"] = detected - kill["kill_unix_s"] if detected else None
    t["teardown_s"] = end0 - (detected or kill["kill_unix_s"])
    t["relaunch_s"] = first_start - restored[2] - end0
    t["restore_s"] = restored[2]
    t["step_s"] = first["ms"] / 1e3
    t["total_s"] = first["time"] - kill["kill_unix_s"]
    t["lost_steps"] = max(0, done_before - restored[0])
    t["disk"] = restored[1]
    t["extra_relaunches"] = len(attempts) - 2
    # The stopped rank's phase as the survivors' records name it.
    t["record_phases"] = [p["phase"] for r in recs for p in r["lost"] if p["rank"] == stopped]
    steady = [r["ms"] / 1e3 for r in after.values() if r["step"] > 2]
    t["median_step_s"] = statistics.median(steady) if steady else t["step_s"]
    t["redo_s"] = t["lost_steps"] * t["median_step_s"]
    t["with_redo_s"] = t["total_s"] + t["redo_s"]
    return t


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: recovery_summary.py STUDY_DIR (the --out of scripts/recovery_study.sh)")
    trials = [trial(d) for d in sorted(glob.glob(os.path.join(sys.argv[1], "*", "*", "*-*-*")))
              if os.path.exists(os.path.join(d, "kill.json"))]
    if not trials:
        sys.exit(f"recovery_summary.py: {sys.argv[1]}: no trials (kill.json) found")
    groups = {}
    for t in trials:
        groups.setdefault((t["system"], t["model"], t["kind"], t["path"], t["placement"]), []).append(t)
    print("| system | model | failure | path | kill | trials | disk needed | extra relaunches | detection s | "
          "teardown s | relaunch s | restore s | first step s | total s | total s, most | steps lost (median, most) | "
          "redo s | total + redo s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(groups):
        ts = [t for t in groups[key] if t["ok"]]
        failed = len(groups[key]) - len(ts)
        row = list(key) + [f"{len(ts)}" + (f" (+{failed} not recovered)" if failed else ""),
                           f"{sum(t['disk'] for t in ts)}", f"{sum(t['extra_relaunches'] for t in ts)}"]
        for part in ("detection_s", "teardown_s", "relaunch_s", "restore_s", "step_s", "total_s"):
            row.append(fmt(med(t[part] for t in ts), 3 if part in ("restore_s", "step_s") else 2))
        row.append(fmt(max((t["total_s"] for t in ts), default=None)))
        lost = [t["lost_steps"] for t in ts]
        row.append(f"{fmt(med(lost), 1)}, {max(lost)}" if lost else "-")
        row.append(fmt(med(t["redo_s"] for t in ts)))
        row.append(fmt(med(t["with_redo_s"] for t in ts)))
        print("| " + " | ".join(row) + " |")
    placed = [t for t in trials if t["placement"] == "phase"]
    if not placed:
        return
    by_phase = {}
    for t in placed:
        by_phase.setdefault((t["system"], t["model"], t["kind"], t["path"], t["phase"]), []).append(t)
    print()
    print("| system | model | failure | path | phase | trials | stopped rank's phase in the records (trials) | detection s | total s | "
          "steps lost (median, most) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(by_phase):
        ts = [t for t in by_phase[key] if t["ok"]]
        failed = len(by_phase[key]) - len(ts)
        named = {}
        for t in ts:
            for p in sorted(set(t["record_phases"])):
                named[p] = named.get(p, 0) + 1
        lost = [t["lost_steps"] for t in ts]
        print("| " + " | ".join(list(key) + [
            f"{len(ts)}" + (f" (+{failed} not recovered)" if failed else ""),
            ", ".join(f"{p} {n}" for p, n in sorted(named.items())) or "-",
            fmt(med(t["detection_s"] for t in ts)), fmt(med(t["total_s"] for t in ts)),
            f"{fmt(med(lost), 1)}, {max(lost)}" if lost else "-"]) + " |")

if __name__ == "__main__":
    main()
