"""The table of scripts/tp_overhead.sh: per case (T = 1, T = 2, T = 2 with
sequence parallelism), the medians over
the runs of the step (summary.json's step_ms_median), the compute per step
(timing.compute_ms_per_micro_step: wall time less the time blocked in
collectives, one micro-step per step), the time blocked in collectives per
step (comm.exposed_seconds_per_step: every call a tensor-group one here, D =
1) and that time over the run's mean step (tokens per step over
tokens_per_second: both means over the same steps), the tensor bytes per
step (payload and bus, as nccl-tests counts them) and the activation bytes
per micro-batch (the ledger's); then T = 1's
step and compute over each T = 2 case's, on the same two cores."""
import glob
import json
import os
import statistics
import sys


CASES = {"t1": "T = 1", "t2": "T = 2", "t2sp": "T = 2, sequence parallel"}


def main(out, layers):
    rows = {}
    for case in CASES:
        sums = [json.load(open(p)) for p in
                sorted(glob.glob(os.path.join(out, case, "run*", "summary.json")))]
        if not sums:
            sys.exit(f"tp_overhead_table.py: no {out}/{case}/run*/summary.json")
        step = [s["step_ms_median"] for s in sums]
        compute = [s["timing"]["compute_ms_per_micro_step"] for s in sums]
        blocked = [s["comm"]["exposed_seconds_per_step"] * 1e3 for s in sums]
        mean_step = [s["config"]["train"]["global_batch_tokens"] / s["tokens_per_second"] * 1e3
                     for s in sums]
        share = [b / m for b, m in zip(blocked, mean_step)]
        calls = sums[0]["comm"]["per_step_by_dimension"]["tensor"].values()
        tensor = sum(v["bytes"] for v in calls)
        tensor_bus = sum(v["bus_bytes"] for v in calls)
        rows[case] = dict(step=statistics.median(step), lo=min(step), hi=max(step), n=len(sums),
                          compute=statistics.median(compute), blocked=statistics.median(blocked),
                          share=statistics.median(share), tensor_mb=tensor / 1e6,
                          tensor_bus_mb=tensor_bus / 1e6,
                          activations_mb=sums[0]["memory"]["activations_per_micro_batch"] / 1e6)
    print(f"GPT-2 350M-shaped, {layers} block(s): width 1024, 16 heads, sequence 1024, "
          "micro-batch 4, byte vocabulary; ZeRO stage 0, one micro-step per step; medians over "
          "the runs (scripts/tp_overhead.sh)\n")
    print("| case | ranks | step ms | runs (min-max) | compute ms/step | blocked in collectives, "
          "ms/step | of the mean step | tensor MB/step | tensor bus MB/step | "
          "activations MB/micro-batch |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for case, r in rows.items():
        print(f"| {CASES[case]} | {case[1]} | {r['step']:.1f} | {r['n']} ({r['lo']:.1f}-{r['hi']:.1f}) | "
              f"{r['compute']:.1f} | {r['blocked']:.1f} | {100 * r['share']:.1f}% | "
              f"{r['tensor_mb']:.1f} | {r['tensor_bus_mb']:.1f} | {r['activations_mb']:.1f} |")
    for case in ("t2", "t2sp"):
        print(f"\nT = 1 over {CASES[case]} on the same two cores: step "
              f"{rows['t1']['step'] / rows[case]['step']:.2f}x, compute "
              f"{rows['t1']['compute'] / rows[case]['compute']:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: tp_overhead_table.py OUT_DIR LAYERS")
    main(sys.argv[1], sys.argv[2])
