"""The table of scripts/tp_overhead.sh: per tensor size T, the medians over
the runs of the step (summary.json's step_ms_median), the compute per step
(timing.compute_ms_per_micro_step: wall time less the time blocked in
collectives, one micro-step per step), the time blocked in collectives per
step (comm.exposed_seconds_per_step: every call a tensor-group one here, D =
1) and that time over the run's mean step (tokens per step over
tokens_per_second: both means over the same steps), and the tensor bytes per
step; then T = 1's step and compute over T = 2's, on the same two cores."""
import glob
import json
import os
import statistics
import sys


def main(out, layers):
    rows = {}
    for t in (1, 2):
        sums = [json.load(open(p)) for p in
                sorted(glob.glob(os.path.join(out, f"t{t}", "run*", "summary.json")))]
        if not sums:
            sys.exit(f"tp_overhead_table.py: no {out}/t{t}/run*/summary.json")
        step = [s["step_ms_median"] for s in sums]
        compute = [s["timing"]["compute_ms_per_micro_step"] for s in sums]
        blocked = [s["comm"]["exposed_seconds_per_step"] * 1e3 for s in sums]
        mean_step = [s["config"]["train"]["global_batch_tokens"] / s["tokens_per_second"] * 1e3
                     for s in sums]
        share = [b / m for b, m in zip(blocked, mean_step)]
        tensor = sum(v["bytes"] for v in sums[0]["comm"]["per_step_by_dimension"]["tensor"].values())
        rows[t] = dict(step=statistics.median(step), lo=min(step), hi=max(step), n=len(sums),
                       compute=statistics.median(compute), blocked=statistics.median(blocked),
                       share=statistics.median(share), tensor_mb=tensor / 1e6)
    print(f"GPT-2 350M-shaped, {layers} block(s): width 1024, 16 heads, sequence 1024, "
          "micro-batch 4, byte vocabulary; ZeRO stage 0, one micro-step per step; medians over "
          "the runs (scripts/tp_overhead.sh)\n")
    print("| T | ranks | step ms | runs (min-max) | compute ms/step | blocked in collectives, "
          "ms/step | of the mean step | tensor MB/step |")
    print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for t, r in rows.items():
        print(f"| {t} | {t} | {r['step']:.1f} | {r['n']} ({r['lo']:.1f}-{r['hi']:.1f}) | "
              f"{r['compute']:.1f} | {r['blocked']:.1f} | {100 * r['share']:.1f}% | "
              f"{r['tensor_mb']:.1f} |")
    print(f"\nT = 1 over T = 2 on the same two cores: step {rows[1]['step'] / rows[2]['step']:.2f}x, "
          f"compute {rows[1]['compute'] / rows[2]['compute']:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: tp_overhead_table.py OUT_DIR LAYERS")
    main(sys.argv[1], sys.argv[2])
