#!/usr/bin/python3
"""The DeepSpeed reference test: runs each variant on DeepSpeed and on zerotrain with the same
model, ds_config, micro-batch, accumulation and world size, and compares their collectives in
the steady step (the second of three), rank by rank (compare.py); `zerotrain explain` of the same
ds_config must give DeepSpeed's calls and bytes per (op, dtype) too.

  reference.py [VARIANT ...] [--all] [--list] [--out DIR] [--report FILE] [--reuse]
               [--device cpu|cuda] [--timeout S] [--retries N]

Without names or --all it runs the quick subset (variants.QUICK). DeepSpeed comes from
--site (default $ZT_DEEPSPEED_SITE or build/deepspeed-site), installed there by
setup_deepspeed.sh when missing; when it cannot be installed the test prints one SKIPPED line
and passes. zerotrain is $ZT_BIN (build/zerotrain) on configs/pmbs/cpu_base.yaml, the model
shape and steps set with --set, the ds_config given with --deepspeed (so the importer maps it),
and its corpus from $ZT_DATA_DIR (build/data/kjv; the schedule does not depend on the tokens).
--report writes the per-variant mismatch report (markdown). Exit status: 0 when every variant
matches (or SKIPPED), 1 otherwise.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# The release this harness traces; zerotrain emulates it (zero.deepspeed_version).
TRACED_RELEASE = "0.14.4"
sys.path.insert(0, HERE)

import compare  # noqa: E402
import launch  # noqa: E402
from variants import QUICK, VARIANTS  # noqa: E402

STEADY_STEP = 1


def ensure_deepspeed(site):
    """'' when DeepSpeed imports from site, else why not (after trying to install it)."""
    probe = [sys.executable, "-c", "import deepspeed; print('version', deepspeed.__version__)"]
    env = dict(os.environ, PYTHONPATH=site, DS_ACCELERATOR="cpu", DS_BUILD_OPS="0")

    def version():
        try:
            run = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return ""
        found = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("version ")]
        return found[-1] if run.returncode == 0 and found else ""

    if version() == "0.14.4":
        return ""
    setup = subprocess.run(["bash", os.path.join(HERE, "setup_deepspeed.sh"), site],
                           capture_output=True, text=True)
    if setup.returncode != 0:
        lines = (setup.stdout + setup.stderr).strip().splitlines()
        return lines[-1] if lines else "setup_deepspeed.sh failed"
    return "" if version() == "0.14.4" else f"DeepSpeed 0.14.4 does not import from {site}"


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)


def run_deepspeed(spec, vdir, site, timeout, reuse):
    out = os.path.join(vdir, "ds")
    spec_path = os.path.join(vdir, "spec.json")
    done = os.path.join(out, "complete")
    if reuse and os.path.exists(done) and open(done).read() == json.dumps(spec, sort_keys=True):
        return ""
    subprocess.run(["rm", "-rf", out], check=True)
    problem = launch.launch(spec_path, out, site, timeout)
    if not problem:
        with open(done, "w") as f:
            f.write(json.dumps(spec, sort_keys=True))
    return problem


def run_zerotrain(spec, vdir, device, timeout):
    run_dir = os.path.join(vdir, "zt")
    subprocess.run(["rm", "-rf", run_dir], check=True)
    data = os.environ.get("ZT_DATA_DIR", os.path.join(ROOT, "build/data/kjv"))
    sets = [f"model.{k}={v}" for k, v in spec["model"].items()]
    sets += [f"train.steps={spec['steps']}", f"train.param_groups={spec['groups']}",
             "system.comm_trace=true", f"system.device={device}",
             f"data.train={data}/train_*.bin", f"data.val={data}/val_*.bin", "data.tokenizer=byte",
             "train.eval_every=0", "train.sample_every=0", "train.checkpoint_every=0",
             f"zero.deepspeed_version={TRACED_RELEASE}"]
    command = ["mpirun", "-np", str(spec["world"]),
               os.environ.get("ZT_BIN", os.path.join(ROOT, "build/zerotrain")), "train",
               os.path.join(ROOT, "configs/pmbs/cpu_base.yaml"), "--run-dir", run_dir,
               "--deepspeed", os.path.join(vdir, "ds_config.json")]
    for s in sets:
        command += ["--set", s]
    env = dict(os.environ)
    for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"), ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                       ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
                       ("OMPI_MCA_btl_vader_single_copy_mechanism", "none")):
        env.setdefault(key, value)
    log_path = os.path.join(vdir, "zerotrain.log")
    with open(log_path, "w") as log:
        log.write(" ".join(command) + "\n")
        log.flush()
        try:
            run = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                 stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"zerotrain timed out after {timeout} s (log: {log_path})"
    if run.returncode != 0:
        lines = open(log_path).read().strip().splitlines()
        return f"zerotrain exited with status {run.returncode}: {lines[-1] if lines else ''}"
    return ""


def run_explain(spec, vdir):
    """`zerotrain explain` of the variant's ds_config on its model: {(op, dtype): (calls, bytes)}
    of a steady step, summed over purposes, or a string saying why there is none. explain trains
    in DeepSpeed's dtype (bf16 when the ds_config enables it), so it must match the trace
    exactly, dtype included."""
    command = [os.environ.get("ZT_BIN", os.path.join(ROOT, "build/zerotrain")), "explain",
               os.path.join(vdir, "ds_config.json"), "--world", str(spec["world"]),
               "--config", os.path.join(ROOT, "configs/pmbs/cpu_base.yaml"),
               "--set", f"train.param_groups={spec['groups']}",
               "--set", f"zero.deepspeed_version={TRACED_RELEASE}"]
    if "ranks_per_node" in spec:
        command += ["--ranks-per-node", str(spec["ranks_per_node"])]
    for k, v in spec["model"].items():
        command += ["--set", f"model.{k}={v}"]
    run = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        return f"explain exited with status {run.returncode}: {run.stderr.strip()}"
    out, on = {}, False
    for line in run.stdout.splitlines():
        f = line.split()
        if line.startswith("per rank per optimizer step"):
            on = True
        elif on and f and f[0] == "purpose":
            continue
        elif on and len(f) == 8 and f[0] in ("gradients", "parameters", "scalars"):
            calls, size = out.get((f[1], f[2]), (0, 0))
            out[(f[1], f[2])] = (calls + int(f[3]), size + int(f[4]))
        elif on:
            on = False
    return out


def compact_sequence(records):
    """The calls of one rank, 'phase+micro  op dtype count root', a micro-step's block written
    once when the next micro-steps repeat it."""
    blocks = collections.OrderedDict()
    for r in records:
        blocks.setdefault((r["phase"], r["micro"]), []).append(compare.call_key(r))
    lines, seen = [], {}
    for (phase, micro), calls in blocks.items():
        label = f"{phase}{micro}"
        if (phase, tuple(calls)) in seen:
            lines.append(f"{label}: same {len(calls)} calls as {seen[(phase, tuple(calls))]}")
            continue
        seen[(phase, tuple(calls))] = label
        i = 0
        while i < len(calls):
            j = i
            while j + 1 < len(calls) and calls[j + 1] == calls[i]:
                j += 1
            op, dtype, count, root = calls[i]
            repeat = f" x{j - i + 1}" if j > i else ""
            lines.append(f"{label}  {op} {dtype} {count} {root}{repeat}")
            i = j + 1
    return lines


def settings_line(spec):
    c = spec["ds_config"]
    extra = {k: c[k] for k in ("bf16", "gradient_clipping", "communication_data_type") if k in c}
    return (f"W = {spec['world']}, {spec['groups']} parameter group(s), zero_optimization "
            f"{json.dumps(c['zero_optimization'])}" + (f", {json.dumps(extra)}" if extra else ""))


def check_variant(name, args):
    spec = VARIANTS[name]
    vdir = os.path.join(args.out, name)
    os.makedirs(vdir, exist_ok=True)
    write_json(os.path.join(vdir, "spec.json"), spec)
    write_json(os.path.join(vdir, "ds_config.json"), spec["ds_config"])
    result = dict(name=name, spec=spec, status="", lines=[], ds_sequence=[], ranks_same="")
    start = time.monotonic()
    problem = run_deepspeed(spec, vdir, args.site, args.timeout, args.reuse)
    for _ in range(args.retries):
        if not problem:
            break
        # gloo's rendezvous on loopback can abort a rank at start-up (a port taken between
        # launch.py's probe and the bind); a real failure fails again.
        print(f"RETRY    {name}: DeepSpeed: {problem}", flush=True)
        problem = run_deepspeed(spec, vdir, args.site, args.timeout, False)
    if problem:
        result.update(status="failed", lines=[f"DeepSpeed: {problem}"])
        return result
    ds = compare.load(os.path.join(vdir, "ds"), "trace_rank")
    steady = {r: [x for x in ds[r] if x["step"] == STEADY_STEP] for r in ds}
    result["ds_sequence"] = compact_sequence(steady[0])
    others = [r for r in sorted(steady) if r and
              [compare.call_key(x) for x in steady[r]] != [compare.call_key(x) for x in steady[0]]]
    result["ranks_same"] = ("every rank issues rank 0's sequence" if not others else
                            f"ranks {others} differ from rank 0")
    if "ranks_per_node" in spec:
        # MPI sees this machine as one node, so a run here cannot take the spec's placement
        # (MiCS's hierarchical gather needs several nodes); explain and the plan can.
        lines, ok = [f"zerotrain's run: not compared (the spec places {spec['ranks_per_node']} "
                     "ranks per node; one machine is one node to MPI); expected_calls.py checks "
                     "the plan call for call"], True
    else:
        problem = run_zerotrain(spec, vdir, args.device, args.timeout)
        if problem:
            result.update(status="failed", lines=[problem])
            return result
        zt = compare.load(os.path.join(vdir, "zt"), "comm_trace_rank")
        lines, ok = compare.report(ds, zt, STEADY_STEP, 3)
    explained = run_explain(spec, vdir)
    expected = dict(compare.totals(steady[0]))
    if explained == expected:
        lines.append("explain: the same calls and bytes per (op, dtype) as DeepSpeed's rank 0")
    else:
        ok = False
        lines.append(f"explain differs from DeepSpeed's rank 0: {explained} against {expected}")
    result.update(status="match" if ok else "differs", lines=lines,
                  seconds=time.monotonic() - start)
    return result


def write_report(path, results, command):
    counts = collections.Counter(r["status"] for r in results)
    out = ["# DeepSpeed 0.14.4 against zerotrain, call for call", "",
           f"Written by `{command}`: {len(results)} variants, "
           f"{counts['match']} match, {counts['differs']} differ, {counts['failed']} failed.",
           "Steady step (the second of three optimizer steps, 3 micro-steps each), per rank. "
           "Sequences: `phase+micro  op dtype count root`, with count in zerotrain's convention "
           "(reduce-scatter: per-rank receive count; all-gather: per-rank send count). "
           "`xN`: N identical calls in a row.", ""]
    out += ["| variant | settings | result |", "| --- | --- | --- |"]
    for r in results:
        first = r["lines"][0] if r["lines"] else ""
        out.append(f"| `{r['name']}` | {settings_line(r['spec'])} | {r['status']}: {first} |")
    for r in results:
        out += ["", f"## {r['name']}: {r['status']}", "", settings_line(r["spec"]), "", "```"]
        out += r["lines"]
        out += ["```"]
        if r["ds_sequence"]:
            out += ["", f"DeepSpeed's steady step, rank 0 ({r['ranks_same']}):", "", "```"]
            out += r["ds_sequence"]
            out += ["```"]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*")
    parser.add_argument("--all", action="store_true", help="every variant")
    parser.add_argument("--list", action="store_true", help="print the variant names")
    parser.add_argument("--out", default=os.path.join(ROOT, "build/deepspeed-ref"))
    parser.add_argument("--site", default=os.environ.get(
        "ZT_DEEPSPEED_SITE", os.path.join(ROOT, "build/deepspeed-site")))
    parser.add_argument("--report", help="write the mismatch report (markdown) here")
    parser.add_argument("--reuse", action="store_true",
                        help="keep DeepSpeed traces already recorded for the same variant")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="zerotrain's system.device")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run")
    parser.add_argument("--retries", type=int, default=1,
                        help="launches of DeepSpeed again after a failed one (default 1)")
    args = parser.parse_args()
    if args.list:
        print("\n".join(VARIANTS))
        return
    names = list(VARIANTS) if args.all else (args.variants or QUICK)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        print(f"reference: unknown variant {unknown[0]!r} (--list names them)")
        sys.exit(2)
    args.out, args.site = os.path.abspath(args.out), os.path.abspath(args.site)
    why = ensure_deepspeed(args.site)
    if why:
        print(f"SKIPPED: DeepSpeed reference: {why}")
        return
    results = []
    for name in names:
        r = check_variant(name, args)
        results.append(r)
        print(f"{r['status'].upper():8} {name} ({r.get('seconds', 0):.0f} s)", flush=True)
        if r["status"] != "match":
            print("\n".join("    " + line for line in r["lines"]), flush=True)
    counts = collections.Counter(r["status"] for r in results)
    if args.report:
        write_report(args.report, results, "tests/reference/deepspeed/reference.py " + " ".join(sys.argv[1:]))
    print(f"deepspeed reference: {len(results)} variants, {counts['match']} match, "
          f"{counts['differs']} differ, {counts['failed']} failed")
    sys.exit(0 if counts["match"] == len(results) else 1)


if __name__ == "__main__":
    main()
