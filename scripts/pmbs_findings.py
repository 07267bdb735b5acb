#!/usr/bin/env python3
"""The three findings of the PMBS paper, across systems (docs/PMBS.md, "The
three findings, across systems"), from the report.csv of each system's runs.

    /usr/bin/python3 scripts/pmbs_findings.py SYSTEM_DIR...

SYSTEM_DIR: a directory that `scripts/pmbs_portability.sh` wrote (the grid of
DIR/grid.txt in K sittings), holding report.csv. Prints three markdown tables,
one row per system (and micro-batch), every value from these definitions
(tok/s of a configuration = the median of its sittings' tokens_per_second):

1. The trade-off between stages: tok/s over stage 0's at the same micro-batch,
   for DeepSpeed's default path of each stage (stage 3: reduce_scatter, its
   default) and the best path of stages 1 and 2 (the most tok/s), bucket 5e8,
   no overlap.
2. DeepSpeed's default collectives: the report's speed-up (tokens/s) over
   DeepSpeed's default path of the same stage and settings, the median over
   the sittings [its 95% bootstrap interval] (speedup_median, speedup_ci_low,
   speedup_ci_high).
3. The batch size: tok/s at micro-batch 12 over micro-batch 4 (the same
   tokens per step), per stage and path.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_csv import fail, read_rows  # noqa: E402

NEEDED = ["configuration", "tokens_per_second", "speedup_median", "speedup_ci_low",
          "speedup_ci_high"]
PATHS = ["allreduce", "ds_default", "per_owner", "native_rs"]
SPEEDUPS = ["s1-per_owner-b5e8-ov0-mb4", "s1-native_rs-b5e8-ov0-mb4",
            "s2-per_owner-b5e8-ov0-mb4", "s2-native_rs-b5e8-ov0-mb4",
            "s2-per_owner-b2e4-ov0-mb4", "s2-per_owner-b2e4-ov1-mb4",
            "s2-per_owner-b5e8-ov0-mb12", "s3-allreduce-b5e8-ov0-mb4"]
BATCH = ["s0", "s1-ds_default", "s1-per_owner", "s2-ds_default", "s2-per_owner",
         "s2-native_rs", "s3-rs", "s3-allreduce"]


class System:
    def __init__(self, path):
        self.name = os.path.basename(os.path.normpath(path))
        self.rows = {}
        csv_path = os.path.join(path, "report.csv")
        for r in read_rows("pmbs_findings.py", csv_path, NEEDED, "report.csv"):
            self.rows.setdefault(r["configuration"], []).append(r)
        missing = [c for c in SPEEDUPS + [f"{b}-b5e8-ov0-mb{mb}" for b in BATCH for mb in (4, 12)]
                   if c not in self.rows]
        if missing:
            fail("pmbs_findings.py", f"{csv_path}: no runs of {', '.join(missing)} "
                 "(not the grid of scripts/pmbs_portability.sh?)")

    def tok_s(self, config):
        return statistics.median(float(r["tokens_per_second"]) for r in self.rows[config])

    def speedup(self, config):
        r = self.rows[config][0]
        return (f"{float(r['speedup_median']):.2f} [{float(r['speedup_ci_low']):.2f}, "
                f"{float(r['speedup_ci_high']):.2f}]")


def stages_table(systems):
    print("| system | mb | s0 tok/s | s1 default | s2 default | s3 default | s1 best path "
          "| s2 best path |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for s in systems:
        for mb in (4, 12):
            s0 = s.tok_s(f"s0-b5e8-ov0-mb{mb}")
            cells = [s.name, str(mb), f"{s0:,.0f}"]
            for config in ("s1-ds_default", "s2-ds_default", "s3-rs"):
                cells.append(f"{s.tok_s(f'{config}-b5e8-ov0-mb{mb}') / s0:.2f}")
            for stage in (1, 2):
                best = max(PATHS, key=lambda p: s.tok_s(f"s{stage}-{p}-b5e8-ov0-mb{mb}"))
                cells.append(f"{best} {s.tok_s(f's{stage}-{best}-b5e8-ov0-mb{mb}') / s0:.2f}")
            print("| " + " | ".join(cells) + " |")


def speedups_table(systems):
    print("| system | " + " | ".join(SPEEDUPS) + " |")
    print("| --- |" + " ---: |" * len(SPEEDUPS))
    for s in systems:
        print("| " + " | ".join([s.name] + [s.speedup(c) for c in SPEEDUPS]) + " |")


def batch_table(systems):
    print("| system | " + " | ".join(BATCH) + " |")
    print("| --- |" + " ---: |" * len(BATCH))
    for s in systems:
        cells = [f"{s.tok_s(f'{b}-b5e8-ov0-mb12') / s.tok_s(f'{b}-b5e8-ov0-mb4'):.2f}"
                 for b in BATCH]
        print("| " + " | ".join([s.name] + cells) + " |")


def main():
    if len(sys.argv) < 2:
        fail("pmbs_findings.py", "usage: pmbs_findings.py SYSTEM_DIR...")
    systems = [System(p) for p in sys.argv[1:]]
    print("**1. The trade-off between ZeRO stages** (tok/s over stage 0's, same micro-batch)\n")
    stages_table(systems)
    print("\n**2. DeepSpeed's default collectives** (speed-up over the default path, "
          "median [95% interval])\n")
    speedups_table(systems)
    print("\n**3. The role of the batch size** (tok/s at micro-batch 12 over 4)\n")
    batch_table(systems)


if __name__ == "__main__":
    main()
