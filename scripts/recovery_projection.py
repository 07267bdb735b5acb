#!/usr/bin/env python3
"""The recovery model's projection for real clusters (docs/recovery.md).

    /usr/bin/python3 scripts/recovery_projection.py [--network PRESET.json] [--bin ZEROTRAIN]

For a ~7B and a ~65B GPT (configs/pmbs/gpt_7b.yaml, gpt_70b.yaml) on 64 and
512 GPUs (8 per node), MiCS stage 3 with the smallest shard group of whole
nodes whose model states (16 bytes per parameter over S ranks) take at most
75% of the device memory, runs `zerotrain plan --recovery` and prints one
Markdown table of what one lost node costs, from memory and from disk.
Everything printed is model output. Its inputs are the preset (link, PCIe,
NVMe and compute figures, each with its source) and the compute formulas of
scripts/pmbs_projection.py:

    micro-step compute = (6N + 6·L·C·T) · B · T / effective FLOP/s
    optimizer step     = N · 32 B / memory bandwidth

The relaunch (the scheduler's restart, process start-up, communicator set-up)
is not counted: it depends on the cluster, not on zerotrain (FlashRecovery
reports it constant in scale; see docs/recovery.md).
"""
import argparse
import json
import re
import subprocess
import sys

MODELS = [("GPT ~7B", "configs/pmbs/gpt_7b.yaml", 4), ("GPT ~65B", "configs/pmbs/gpt_70b.yaml", 1)]
GPUS = [64, 512]
ROW = re.compile(r"^  (memory \(replicas, own store\)|disk, checkpoint_every \d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)")


def shape(config):
    text = open(config).read()
    get = lambda k: int(re.search(rf"^\s*{k}:\s*(\d+)", text, re.M).group(1))
    return get("n_layer"), get("n_embd"), get("seq_len"), get("vocab_size")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--network", default="configs/networks/h100_ib400_8gpu.json")
    ap.add_argument("--bin", default="build/zerotrain")
    a = ap.parse_args()
    net = json.load(open(a.network))
    flops = net["compute"]["effective_TFLOPs"] * 1e12
    mem_bw = net["compute"]["memory_TBps"] * 1e12
    device_bytes = net["device_memory_GB"] * 1e9
    per_node = net["gpus_per_node"]
    print(f"network: {a.network} ({net['preset']}); relaunch not counted")
    print()
    print("| model | GPUs | S (MiCS) | snapshot GB per GPU | store GB per node | copy s (hidden) | step s | "
          "memory: restore s, lost s, total s | disk every 10: total s | disk every 100: total s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, config, micro in MODELS:
        L, C, T, V = shape(config)
        N = 12 * L * C * C + (V + T) * C  # the GPT-2 layout's weights, biases left out
        micro_s = (6 * N + 6 * L * C * T) * micro * T / flops
        opt_s = N * 32 / mem_bw
        for gpus in GPUS:
            S = next(s for s in range(per_node, gpus + 1, per_node)
                     if gpus % s == 0 and 16 * N / s <= 0.75 * device_bytes)
            cmd = [a.bin, "plan", config, "--world", str(gpus), "--ranks-per-node", str(per_node),
                   "--set", "zero.stage=3", "--set", f"zero.mics_shard_size={S}",
                   "--set", f"train.micro_batch={micro}",
                   "--set", f"train.global_batch_tokens={gpus * micro * T}",
                   "--network", a.network, "--compute-ms", f"{micro_s * 1e3:.3f},{opt_s * 1e3:.3f}",
                   "--recovery"]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"recovery_projection.py: {' '.join(cmd)}: {out.stderr.strip()}")
            text = out.stdout
            rows = {m.group(1): [float(m.group(i)) for i in range(2, 6)]
                    for m in map(ROW.match, text.splitlines()) if m}
            snap = int(re.search(r"snapshot per rank: (\d+) bytes", text).group(1))
            copy = re.search(r"copy ([0-9.]+) s per rank per snapshot, ([0-9.]+) s of it not hidden", text)
            store = int(re.search(r"store (\d+) bytes per node", text).group(1))
            step = float(re.search(r"inputs: step ([0-9.]+) s", text).group(1))
            mem = rows["memory (replicas, own store)"]
            print(f"| {name} | {gpus} | {S} | {snap / 1e9:.1f} | {store / 1e9:.0f} | "
                  f"{float(copy.group(1)):.2f} ({'all' if float(copy.group(2)) == 0 else 'not all'}) | "
                  f"{step:.2f} | {mem[0]:.2f}, {mem[1]:.2f}, {mem[2]:.2f} | "
                  f"{rows['disk, checkpoint_every 10'][2]:.1f} | {rows['disk, checkpoint_every 100'][2]:.1f} |")


if __name__ == "__main__":
    main()
