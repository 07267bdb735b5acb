#!/usr/bin/env python3
"""The step-time model of this build against a stored PMBS study: every
configuration of a system's grid predicted again by `zerotrain plan --network`
from the files the study kept (docs/PMBS.md, "The model against the stored
sittings"), beside the measured step of its sittings and the prediction the
study's report printed when it ran.

    /usr/bin/python3 scripts/pmbs_repredict.py [--zerotrain BIN] [--rows] SYSTEM_DIR...

SYSTEM_DIR: a system's folder that scripts/pmbs_portability.sh wrote (kept in
docs/pmbs_portability*/): report.csv (every sitting's runs), commbench.json
(the curves the predictions take), cluster.json (the shape) and grid.txt (in
the folder or the one above it: each configuration's overrides of its
@config). A configuration's measured step is the median of its sittings'
median steps; its global batch is the report's (accumulation steps x
micro-batch x world x seq_len); its compute is the emulated compute its
overrides state. One markdown row per system; --rows adds a row per
configuration. Model output against stored measurements: nothing here runs
on the cluster.
"""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_csv import fail, read_rows  # noqa: E402

SCRIPT = "pmbs_repredict.py"
NEEDED = ["configuration", "step_ms", "predicted_step_ms", "accum_steps", "micro_batch", "world"]
# plan's step-time table: the configured row is starred; its columns are
# compute, optimizer, comm, exposed and step (ms), then the speed-up.
STARRED = re.compile(r"^\*\s+.*?\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+x$")


def read_grid(system_dir):
    for path in (os.path.join(system_dir, "grid.txt"),
                 os.path.join(os.path.dirname(os.path.normpath(system_dir)), "grid.txt")):
        if os.path.exists(path):
            break
    else:
        fail(SCRIPT, f"{system_dir}: no grid.txt in it or the folder above")
    config, configurations = None, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("@config "):
                config = line.split(None, 1)[1]
                continue
            name, *overrides = line.split()
            configurations[name] = overrides
    if not config:
        fail(SCRIPT, f"{path}: no @config line")
    return path, config, configurations


def seq_len_of(config):
    try:
        with open(config) as f:
            for line in f:
                m = re.match(r"\s*seq_len:\s*(\d+)", line)
                if m:
                    return int(m.group(1))
    except OSError as e:
        fail(SCRIPT, f"{config}: cannot read: {e.strerror}")
    fail(SCRIPT, f"{config}: no model.seq_len")


def predicted_step(zerotrain, config, cluster, overrides, tokens, network):
    sets = dict(o.split("=", 1) for o in overrides)
    if sets.get("system.compute") != "emulate":
        fail(SCRIPT, f"{config}: a configuration without system.compute=emulate ({overrides})")
    compute = f"{sets['system.emulate_micro_step_ms']},{sets['system.emulate_optimizer_ms']}"
    cmd = [zerotrain, "plan", config, "--world", str(cluster["world"]),
           "--ranks-per-node", str(cluster["ranks_per_node"]),
           "--set", f"train.global_batch_tokens={tokens}", "--network", network,
           "--compute-ms", compute]
    for o in overrides:
        cmd += ["--set", o]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        fail(SCRIPT, f"{' '.join(cmd)}: {done.stderr.strip() or done.stdout.strip()}")
    steps = [m for m in map(STARRED.match, done.stdout.splitlines()) if m]
    if not steps:
        fail(SCRIPT, f"{' '.join(cmd)}: no starred step-time row in plan's output")
    return float(steps[-1].group(5))


def system(zerotrain, system_dir):
    rows = read_rows(SCRIPT, os.path.join(system_dir, "report.csv"), NEEDED, "report.csv")
    try:
        with open(os.path.join(system_dir, "cluster.json")) as f:
            cluster = json.load(f)
    except (OSError, ValueError) as e:
        fail(SCRIPT, f"{system_dir}/cluster.json: {e}")
    _, config, configurations = read_grid(system_dir)
    seq_len = seq_len_of(config)
    network = os.path.join(system_dir, "commbench.json")
    by_config = {}
    for r in rows:
        by_config.setdefault(r["configuration"], []).append(r)
    out = []
    for name, runs in by_config.items():
        if name not in configurations:
            fail(SCRIPT, f"{system_dir}: configuration {name} is not in the grid")
        r = runs[0]
        tokens = int(r["accum_steps"]) * int(r["micro_batch"]) * int(r["world"]) * seq_len
        measured = statistics.median(float(x["step_ms"]) for x in runs)
        now = predicted_step(zerotrain, config, cluster, configurations[name], tokens, network)
        out.append((name, measured, float(r["predicted_step_ms"]), now))
    return out


def main():
    args = sys.argv[1:]
    zerotrain, rows = "build/zerotrain", False
    while args and args[0].startswith("--"):
        if args[0] == "--zerotrain" and len(args) > 1:
            zerotrain, args = args[1], args[2:]
        elif args[0] == "--rows":
            rows, args = True, args[1:]
        else:
            fail(SCRIPT, f"unknown option {args[0]} (usage: [--zerotrain BIN] [--rows] SYSTEM_DIR...)")
    if not args:
        fail(SCRIPT, "usage: pmbs_repredict.py [--zerotrain BIN] [--rows] SYSTEM_DIR...")
    print("| system | within 10%, as reported | worst, as reported | within 10%, this build "
          "| worst, this build |")
    print("| --- | ---: | ---: | ---: | ---: |")
    detail = []
    for d in args:
        name = os.path.basename(os.path.normpath(d))
        got = system(zerotrain, d)
        then = [p / m - 1 for _, m, p, _ in got]
        now = [p / m - 1 for _, m, _, p in got]
        n = len(got)
        print(f"| {name} | {sum(abs(e) <= 0.10 for e in then)} of {n} | "
              f"{max(map(abs, then)):.1%} | {sum(abs(e) <= 0.10 for e in now)} of {n} | "
              f"{max(map(abs, now)):.1%} |")
        detail += [(name, *g) for g in got]
    if rows:
        print()
        print("| system | configuration | measured ms | reported prediction | this build |")
        print("| --- | --- | ---: | ---: | ---: |")
        for name, config, measured, then, now in detail:
            print(f"| {name} | {config} | {measured:.1f} | {then:.1f} ({then / measured - 1:+.1%}) "
                  f"| {now:.1f} ({now / measured - 1:+.1%}) |")


if __name__ == "__main__":
    main()
