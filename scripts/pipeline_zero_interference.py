"""How ZeRO's data-parallel traffic changes when half the world becomes a
pipeline (docs/pipeline.md, "ZeRO-2 and -3 under a pipeline"): rank 0's
calls per steady step as `zerotrain plan` lists them (the same calls the run
makes: tests/e2e/pipeline_parallel.sh holds them to each other), for ZeRO
stages 1-3 at W = 4 as D = 4 data-parallel ranks and as D = 2 x P = 2
stages, beside the closed forms of zero/analysis/grid_volume.h: a gradient
payload of m x Psi_s at stages 2 and 3 (a reduction every micro-step) and,
under a pipeline, 2 x m x Psi_s of stage 3's gathers.

usage: /usr/bin/python3 scripts/pipeline_zero_interference.py ZEROTRAIN
"""
import re
import subprocess
import sys

MODEL = ["--set", "data.tokenizer=byte", "--set", "model.vocab_size=256", "--set", "model.n_layer=4",
         "--set", "model.n_embd=64", "--set", "model.seq_len=64", "--set", "train.micro_batch=2",
         "--set", "train.global_batch_tokens=3072", "--set", "train.sample_every=0",
         "--set", "zero.stage3_param_persistence_threshold=0",
         "--set", "zero.stage3_max_reuse_distance=0", "--set", "parallel.pipeline_zero_anyway=true"]
GRADIENT = ("reduce_scatter", "reduce", "all_reduce")


def planned(zt, stage, pipeline):
    """(Psi_s, m, {primitive: (calls, payload bytes)}) of the configured row's steady step."""
    out = subprocess.run([zt, "plan", "configs/tiny.yaml", "--world", "4", *MODEL,
                          "--set", f"zero.stage={stage}", "--set", f"parallel.pipeline={pipeline}"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    psi = int(re.search(r"(\d+) parameters", out[0]).group(1))
    m = int(re.search(r"(\d+) micro-steps", out[0]).group(1))
    rows, inside = {}, False
    for line in out:
        starts = line.startswith("* stage")
        continues = inside and "|" in line and not line.split("|")[0].strip()
        if not (starts or continues):
            if inside:
                break
            continue
        inside = True
        if "(first step)" not in line:
            f = line.split("|")[1].split()
            rows[f[0]] = (int(f[1]), int(f[2]))
    return psi, m, rows


def main(zt):
    print("Planned (rank 0, steady step, fp32, bytes as payload); Psi_s = rank 0's parameters; "
          "formula columns from zero/analysis/grid_volume.h\n")
    print("| ZeRO stage | W = 4 as | m | Psi_s | gradient payload MB | / (m Psi_s) | all-gather calls "
          "| all-gather payload MB | / Psi_s | 2 m (stage 3) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for stage in (1, 2, 3):
        for pipeline in (1, 2):
            psi, m, rows = planned(zt, stage, pipeline)
            psi_bytes = 4 * psi
            # Scalars (the norm, the overflow flag) are a few bytes: not gradients.
            grad = sum(b for k, (c, b) in rows.items() if k in GRADIENT and b > 64 * c)
            calls, gathered = rows.get("all_gather", (0, 0))
            print(f"| {stage} | D = {4 // pipeline}, P = {pipeline} | {m} | {psi} | {grad / 1e6:.3f} "
                  f"| {grad / (m * psi_bytes):.2f} | {calls} | {gathered / 1e6:.3f} "
                  f"| {gathered / psi_bytes:.2f} | {2 * m if stage == 3 else '-'} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: pipeline_zero_interference.py ZEROTRAIN")
    main(sys.argv[1])
