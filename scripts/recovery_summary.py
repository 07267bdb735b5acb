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

Per system, kind and path: the median of each part over the trials, and how
many trials needed the disk checkpoint. A row "disk, every 100" is derived,
not measured: disk10's median parts plus 50 lost steps (the expected loss at
checkpoint_every 100) at the median step time.
"""
import glob
import json
import os
import re
import statistics
import sys

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
    attempts = records(os.path.join(d, "attempts.jsonl"))
    if len(attempts) < 2 or attempts[-1]["exit"] != 0:
        return dict(kill, ok=False)
    recs = [json.load(open(f)) for f in glob.glob(os.path.join(d, "run", "failure.attempt-0", "rank_*.json"))]
    detected = min((r["detected_unix_s"] for r in recs), default=None)
    restored = None
    for line in open(os.path.join(d, "job.log"), errors="replace"):
        m = RECOVERED.match(line)
        if m:
            restored = (int(m.group(1)), m.group(2).startswith("disk"), float(m.group(3)))
            break
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
    steady = [r["ms"] / 1e3 for r in after.values() if r["step"] > 2]
    t["median_step_s"] = statistics.median(steady) if steady else t["step_s"]
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
        groups.setdefault((t["system"], t["model"], t["kind"], t["path"]), []).append(t)
    print("| system | model | failure | path | trials | disk needed | detection s | teardown s | "
          "relaunch s | restore s | first step s | total s | steps lost |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(groups):
        ts = [t for t in groups[key] if t["ok"]]
        failed = len(groups[key]) - len(ts)
        row = list(key) + [f"{len(ts)}" + (f" (+{failed} not recovered)" if failed else ""),
                           f"{sum(t['disk'] for t in ts)}"]
        for part in ("detection_s", "teardown_s", "relaunch_s", "restore_s", "step_s", "total_s"):
            row.append(fmt(med(t[part] for t in ts), 3 if part in ("restore_s", "step_s") else 2))
        row.append(fmt(med(t["lost_steps"] for t in ts), 1))
        print("| " + " | ".join(row) + " |")
        if key[3] == "disk10" and ts:
            step = med(t["median_step_s"] for t in ts)
            parts = [med(t[p] for t in ts) for p in ("detection_s", "teardown_s", "relaunch_s", "restore_s")]
            total = sum(p for p in parts if p is not None) + 50 * step
            print("| " + " | ".join(list(key[:3]) + ["disk100 (derived)", "-", "-"] +
                                    [fmt(p, 3 if i == 3 else 2) for i, p in enumerate(parts)] +
                                    [fmt(step, 3), fmt(total), "50.0"]) + " |")


if __name__ == "__main__":
    main()
