#!/usr/bin/env python3
"""The step-time model's accuracy over separate sittings of scripts/pmbs_cluster.sh
(docs/PMBS.md, "With time"): one sitting is a folder holding one report folder
per system (NxG-RATE/report.csv, as `zerotrain report --network` wrote it), and
the same systems in every sitting.

    /usr/bin/python3 scripts/pmbs_sittings_accuracy.py [--tolerance PCT] SITTING_DIR...

Prints two markdown tables. Per system and sitting: the rows whose predicted
step is within the tolerance (default 15%) and within 10% of the measured
step, the range of predicted / measured, and the worst row. Per system over
the sittings (two or more): every speed-up by median step against DeepSpeed's
default, and its largest spread, max over min less 1, with the row it is in.
Every figure is read from the reports; nothing runs.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_csv import fail, read_rows  # noqa: E402

SCRIPT = "pmbs_sittings_accuracy.py"
NEEDED = ["run", "step_ms", "predicted_step_ms", "step_speedup_vs_ds_default"]


def systems_of(sitting):
    try:
        names = sorted(os.listdir(sitting))
    except OSError as e:
        fail(SCRIPT, f"{sitting}: cannot list: {e.strerror}")
    found = [n for n in names if re.fullmatch(r"\d+x\d+-\S+", n)
             and os.path.isfile(os.path.join(sitting, n, "report.csv"))]
    if not found:
        fail(SCRIPT, f"{sitting}: no NxG-RATE/report.csv (not a sitting of pmbs_cluster.sh runs?)")
    return found


def number(row, key, path):
    try:
        return float(row[key])
    except ValueError:
        fail(SCRIPT, f"{path}: run {row['run']}: {key} is '{row[key]}', expected a number")


def main(argv):
    tolerance = 15.0
    if len(argv) >= 2 and argv[0] == "--tolerance":
        try:
            tolerance = float(argv[1])
        except ValueError:
            fail(SCRIPT, f"--tolerance: expected a percentage, got '{argv[1]}'")
        argv = argv[2:]
    if not argv:
        fail(SCRIPT, "usage: pmbs_sittings_accuracy.py [--tolerance PCT] SITTING_DIR...")
    systems = systems_of(argv[0])
    for sitting in argv[1:]:
        if systems_of(sitting) != systems:
            fail(SCRIPT, f"{sitting}: systems {', '.join(systems_of(sitting))}, "
                 f"expected those of {argv[0]}: {', '.join(systems)}")
    print(f"| system | sitting | rows within {tolerance:g}% | within 10% | predicted / measured | worst row |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    speedups = {}
    for system in systems:
        for i, sitting in enumerate(argv):
            path = os.path.join(sitting, system, "report.csv")
            rows = read_rows(SCRIPT, path, NEEDED, "report.csv")
            ratios = []
            for r in rows:
                if not r["predicted_step_ms"]:
                    fail(SCRIPT, f"{path}: run {r['run']} has no prediction (report without --network?)")
                ratios.append((number(r, "predicted_step_ms", path) / number(r, "step_ms", path), r["run"]))
                if r["step_speedup_vs_ds_default"]:
                    speedups.setdefault((system, r["run"]), []).append(
                        number(r, "step_speedup_vs_ds_default", path))
            within = sum(abs(a - 1) <= tolerance / 100 for a, _ in ratios)
            within10 = sum(abs(a - 1) <= 0.10 for a, _ in ratios)
            worst = max(ratios, key=lambda t: abs(t[0] - 1))
            print(f"| {system} | {i + 1} | {within} of {len(ratios)} | {within10} of {len(ratios)} | "
                  f"{min(a for a, _ in ratios):.2f}-{max(a for a, _ in ratios):.2f} | "
                  f"{worst[1]} ({worst[0]:.3f}) |")
    if len(argv) < 2:
        return
    print()
    print("| system | speed-ups | largest spread over the sittings | in row |")
    print("| --- | ---: | ---: | --- |")
    for system in systems:
        spreads = [(max(v) / min(v) - 1, run) for (s, run), v in sorted(speedups.items())
                   if s == system and len(v) == len(argv)]
        if not spreads:
            print(f"| {system} | 0 | - | - |")
            continue
        spread, run = max(spreads)
        print(f"| {system} | {len(spreads)} | {100 * spread:.1f}% | {run} |")


if __name__ == "__main__":
    main(sys.argv[1:])
