#!/usr/bin/env python3
"""How stable a system's PMBS table is, and how close the step-time model came
(docs/PMBS.md, "What it gave"), from the report.csv of each system's runs.

    /usr/bin/python3 scripts/pmbs_stability.py SYSTEM_DIR...

SYSTEM_DIR: a directory that `scripts/pmbs_cluster.sh` (or pmbs_portability.sh)
wrote, holding report.csv with the runs of every sitting. One markdown row per
system, from these definitions:

- a configuration's measured step is the median of its sittings' median steps
  (step_ms); "predicted within 10%" counts the configurations whose
  predicted_step_ms is within 10% of it; the worst error is the largest
  |predicted / measured - 1|;
- a speed-up's deviation is the largest |sitting / median - 1| over the
  sittings, of speedup_vs_ds_default (tokens/s) and of
  step_speedup_vs_ds_default (median step); configurations that are their own
  baseline (speed-up 1 in every sitting) are left out;
- "within +-10%" counts the configurations whose deviation is at most 10%.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_csv import fail, read_rows  # noqa: E402

NEEDED = ["run", "configuration", "step_ms", "predicted_step_ms", "baseline_run",
          "speedup_vs_ds_default", "step_speedup_vs_ds_default"]


def system_row(path):
    rows = read_rows("pmbs_stability.py", os.path.join(path, "report.csv"), NEEDED, "report.csv")
    by_config = {}
    for r in rows:
        by_config.setdefault(r["configuration"], []).append(r)
    within, worst = 0, 0.0
    deviation = {"speedup_vs_ds_default": [], "step_speedup_vs_ds_default": []}
    for runs in by_config.values():
        measured = statistics.median(float(r["step_ms"]) for r in runs)
        predicted = float(runs[0]["predicted_step_ms"])
        error = abs(predicted / measured - 1)
        within += error <= 0.10
        worst = max(worst, error)
        if all(r["baseline_run"] == r["run"] for r in runs):
            continue
        for column, devs in deviation.items():
            values = [float(r[column]) for r in runs]
            median = statistics.median(values)
            devs.append(max(abs(v / median - 1) for v in values))
    n = len(by_config)
    cells = [os.path.basename(os.path.normpath(path)), f"{within} of {n}", f"{100 * worst:.1f}%"]
    for devs in deviation.values():
        cells.append(f"{100 * max(devs):.1f}%" if devs else "-")
    for devs in deviation.values():
        cells.append(f"{sum(d <= 0.10 for d in devs)} of {len(devs)}")
    return "| " + " | ".join(cells) + " |"


def main():
    if len(sys.argv) < 2:
        fail("pmbs_stability.py", "usage: pmbs_stability.py SYSTEM_DIR...")
    rows = [system_row(path) for path in sys.argv[1:]]
    print("| system | predicted within 10% | worst prediction error | largest deviation, "
          "speed-up (tokens/s) | largest deviation, speed-up (median step) | speed-ups within "
          "±10% (tokens/s) | within ±10% (median step) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
