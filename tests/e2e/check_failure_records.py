"""Checks the failure records of a run in which one rank was lost
(docs/recovery.md, "Failure detection"): every other rank wrote
RUN/failure/rank_RRRRR.json naming exactly that rank, at a step of the run and
a known phase, by one of the expected causes (by timeout only after more than
failure_timeout_s of silence), with a summary line that agrees.
Prints the latest detection time (unix seconds); on a problem, prints it and
exits 1.

usage: check_failure_records.py RUN_DIR WORLD LOST CAUSE[,CAUSE] STEPS [LOST_HOST]
"""
import json
import os
import sys

def fail(message):
    print(message)
    sys.exit(1)


PHASES = {"setup", "data", "forward", "backward", "reduce", "zero_step", "eval", "sample",
          "checkpoint", "finish"}


def main():
    run_dir, world, lost, causes, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        sys.argv[4].split(","), int(sys.argv[5])
    lost_host = sys.argv[6] if len(sys.argv) > 6 else None
    latest = 0.0
    for me in range(world):
        if me == lost:
            continue
        path = os.path.join(run_dir, "failure", "rank_%05d.json" % me)
        if not os.path.exists(path):
            fail(f"rank {me} wrote no failure record ({path})")
        with open(path) as f:
            text = f.read()
        rec = json.loads(text)

        def need(cond, what):
            if not cond:
                fail(f"{path}: {what}: {text.strip()}")

        need(text.count("\n") == 1 and text.endswith("\n"), "not one line")
        need(rec["rank"] == me, "wrong rank")
        need([p["rank"] for p in rec["lost"]] == [lost], f"does not name exactly rank {lost}")
        p = rec["lost"][0]
        need(0 <= p["step"] < steps, "a step outside the run")
        need(p["phase"] in PHASES, f"unknown phase {p['phase']}")
        need(p["cause"] in causes, f"cause {p['cause']}, expected one of {causes}")
        need(lost_host is None or p["host"] == lost_host, f"lost host is not {lost_host}")
        need(p["last_heartbeat_unix_s"] is not None, "no heartbeat time")
        need(p["last_heartbeat_unix_s"] <= rec["detected_unix_s"], "a heartbeat after the detection")
        need((p["cause"] == "reported_by_peer") == (p["reported_by"] is not None), "reported_by")
        need(p["cause"] != "heartbeat_timeout" or p["silent_s"] > rec["failure_timeout_s"],
             "lost by timeout before failure_timeout_s of silence")
        words = rec["summary"].split()
        need(words[:2] == ["zerotrain-failure", "v1"], "summary tag")
        s = dict(w.split("=", 1) for w in words[2:])
        need(s["rank"] == str(me) and s["lost"] == str(lost) and s["host"] == rec["host"] and
             s["lost_hosts"] == p["host"] and s["lost_steps"] == str(p["step"]) and
             s["lost_phases"] == p["phase"] and s["causes"] == p["cause"],
             "the summary line disagrees with the record")
        latest = max(latest, rec["detected_unix_s"])
    print("%.6f" % latest)


main()
