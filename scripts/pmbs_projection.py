#!/usr/bin/env python3
"""The step-time model's projection for real clusters (docs/PMBS.md, part b).

    /usr/bin/python3 scripts/pmbs_projection.py [--network PRESET.json] [--bin ZEROTRAIN]

For GPT-2 124M, 350M, 1.5B, a ~7B and a ~20B GPT on 8 to 1024 GPUs (8 per node), runs
`zerotrain plan --network PRESET --compute-ms MICRO,OPT` and prints one
Markdown table: per model and GPU count, DeepSpeed's default (stage 2), the
best stage and path the model finds, tok/s per GPU and the exposed share of
communication, then ZeRO++ against plain stage 3 and ZeRO-Offload (the
optimizer in host memory, updated by the host AdamW) against the same stage
on the device. Everything printed is model output; its inputs are the preset
(network, compute and host figures, each with its source) and these formulas:

    micro-step compute = (6N + 6·L·C·T) · B · T / effective FLOP/s
    optimizer step     = N · 32 B / memory bandwidth   (AdamW: fp32 master,
                         m, v and the gradient, each read and written)

Weak scaling: every GPU runs one micro-batch of B x T tokens per step. A
configuration fits when its model states per GPU (parameters, gradients,
optimizer: plan's exact bytes) take at most 75% of the device memory, the
rest left to activations and buffers; "best" is the fastest that fits. With
offload the moved optimizer state of a node's GPUs must fit the host memory.
"""
import argparse
import json
import re
import subprocess
import sys

MODELS = [  # name, config, micro-batch per GPU
    ("GPT-2 124M", "configs/gpt2-124m.yaml", 16),
    ("GPT-2 350M", "configs/gpt2-350m.yaml", 16),
    ("GPT-2 1.5B", "configs/gpt2-1.5b.yaml", 8),
    ("GPT ~7B", "configs/pmbs/gpt_7b.yaml", 4),
    ("GPT ~20B", "configs/pmbs/gpt_20b.yaml", 2),
]
GPUS = [8, 64, 256, 1024]
STATES = re.compile(r"^([* ]) (stage \d.*?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+) \|")
# compute, optimizer, comm, exposed, step (ms), speed-up
ROW = re.compile(r"^([* ]) (stage \d.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+"
                 r"([\d.]+)x$")


def model_shape(config):
    shape = {}
    for line in open(config):
        m = re.match(r"\s+(n_layer|n_embd|seq_len):\s*(\d+)", line)
        if m:
            shape[m.group(1)] = int(m.group(2))
    return shape


def plan(args, config, world, per_node, micro, seq_len, compute_ms, extra=()):
    cmd = [args.bin, "plan", config, "--world", str(world), "--ranks-per-node", str(per_node),
           "--set", "system.device=cuda", "--set", f"train.micro_batch={micro}",
           "--set", f"train.global_batch_tokens={world * micro * seq_len}",
           "--network", args.network, "--compute-ms", compute_ms]
    for kv in extra:
        cmd += ["--set", kv]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"pmbs_projection: {' '.join(cmd)}: {out.stderr.strip()}")
    params = int(re.search(r", (\d+) parameters,", out.stdout).group(1))
    states, rows = {}, []
    for line in out.stdout.splitlines():
        m = STATES.match(line)
        if m:
            states[m.group(2).strip()] = int(m.group(6))
        m = ROW.match(line)
        if m:
            label = m.group(2).strip()
            rows.append({"label": label, "compute": float(m.group(3)),
                         "exposed": float(m.group(6)), "step": float(m.group(7)),
                         "states": states[label]})
    return params, rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--network", default="configs/networks/h100_ib400_8gpu.json")
    p.add_argument("--bin", default="build/zerotrain")
    args = p.parse_args()
    preset = json.load(open(args.network))
    per_node = preset["gpus_per_node"]
    tflops = preset["compute"]["effective_TFLOPs"] * 1e12
    tbps = preset["compute"]["memory_TBps"] * 1e12
    budget = 0.75 * preset["device_memory_GB"] * 1e9
    host_budget = preset["host"]["memory_GB"] * 1e9
    print(f"Model output (zerotrain plan's step-time model), not measurements. Network and "
          f"compute: `{args.network}` ({preset['preset']}); {preset['compute']['effective_TFLOPs']} "
          f"TFLOP/s effective, {preset['compute']['memory_TBps']} TB/s for the optimizer. "
          f"Weak scaling, one micro-batch per GPU per step. Fits: model states at most 75% of "
          f"{preset['device_memory_GB']} GB per GPU; ✗ marks a configuration that does not. "
          f"Offload: {preset['host']['pcie_GBps']} GB/s PCIe, "
          f"{preset['host']['adamw_Gelements_per_s']} G elements/s host AdamW per GPU, "
          f"{preset['host']['memory_GB']} GB host memory per node (assumptions, see the preset).\n")
    print("| model | GPUs | B x T per GPU | compute ms | DS default (stage 2) tok/s/GPU, exposed | "
          "best DeepSpeed switches: config, tok/s/GPU, exposed, vs default | best with zerotrain's "
          "reduce-scatter | stage 3 (DS default) tok/s/GPU | ZeRO++ vs stage 3: hpZ, qwZ, qgZ, "
          "all three (tok/s/GPU) | offload to CPU, stage 2 / stage 3: tok/s/GPU, vs on device |")
    print("| --- | ---: | --- | ---: | ---: | --- | --- | ---: | --- | --- |")
    for name, config, micro in MODELS:
        shape = model_shape(config)
        T = shape["seq_len"]
        n, _ = plan(args, config, per_node, per_node, micro, T, "1,0")
        flops = 6 * n + 6 * shape["n_layer"] * shape["n_embd"] * T
        micro_ms = flops * micro * T / tflops * 1e3
        opt_ms = n * 32 / tbps * 1e3
        for world in GPUS:
            _, rows = plan(args, config, world, per_node, micro, T, f"{micro_ms:.6g},{opt_ms:.6g}")
            by = {r["label"]: r for r in rows}
            _, off_rows = plan(args, config, world, per_node, micro, T,
                               f"{micro_ms:.6g},{opt_ms:.6g}",
                               ["zero.offload_optimizer.device=cpu"])
            off = {r["label"]: r for r in off_rows}
            ds = by["stage 2 multi_rank_allreduce"]
            s3 = by["stage 3 reduce_scatter"]
            tok = micro * T

            def rate(r):
                return f"{tok / r['step'] * 1e3:,.0f}" + ("" if r["states"] <= budget else " ✗")

            def best_of(candidates):
                fitting = [r for r in candidates if r["states"] <= budget]
                if not fitting:
                    return "nothing fits"
                # On a tie (same calls, same time) the default path is named.
                b = min(fitting, key=lambda r: (round(r["step"], 6),
                                                r["label"] != "stage 2 multi_rank_allreduce"))
                return (f"{b['label']}, {rate(b)}, {b['exposed'] / b['step']:.0%}, "
                        f"{ds['step'] / b['step']:.2f}x")

            # zerotrain's own path is "reduce_scatter" at stages 1 and 2; ZeRO++ has its column.
            rows = [r for r in rows if not re.match(r"stage 3 (hpZ|qwZ|qgZ)", r["label"])]
            deepspeed = [r for r in rows if not re.match(r"stage [12] reduce_scatter$", r["label"])]
            # ZeRO++ rows exist where there are several nodes; hpZ's group is the node.
            zpp = [by.get(f"stage 3 {k}") for k in
                   (f"hpZ {per_node}", "qwZ", "qgZ", f"hpZ {per_node}+qwZ+qgZ")]
            zeropp = "— (one node)" if None in zpp else ", ".join(
                f"{s3['step'] / r['step']:.2f}x" for r in zpp[:3]) + (
                f", {s3['step'] / zpp[3]['step']:.2f}x ({rate(zpp[3])})")
            def offload(label):
                on, dev = off[label], by[label]
                host = (dev["states"] - on["states"]) * per_node
                fits_host = "" if host <= host_budget else " ✗ host"
                return f"{rate(on)}{fits_host}, {dev['step'] / on['step']:.2f}x"

            print(f"| {name} | {world} | {micro} x {T} | {micro_ms:.1f} | {rate(ds)}, "
                  f"{ds['exposed'] / ds['step']:.0%} | {best_of(deepspeed)} | {best_of(rows)} | "
                  f"{rate(s3)} | {zeropp} | {offload('stage 2 multi_rank_allreduce')} / "
                  f"{offload('stage 3 reduce_scatter')} |")


if __name__ == "__main__":
    main()
