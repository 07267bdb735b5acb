#!/usr/bin/python3
"""DeepSpeed's collectives across releases: installs each release into a cache of its own, traces
the same variants on each (the reference harness: launch.py, rank.py, recorder.py), and keeps the
traces keyed by release.

  releases.py [VERSION ...] [--core | --variants NAME ...] [--torch T] [--cache DIR]
              [--traces DIR] [--timeout S] [--list]

Without versions: DEFAULT_VERSIONS, the last patch of each minor from the oldest that runs here
(0.10.3; see RELEASES.md for why not 0.9) to the newest on PyPI when this was written. Without
--variants: RELEASE_SET, the variants of variants.py plus the gradient-path combinations below;
--core: CORE, the 15 of them that the first pass across releases ran (RELEASES.md).

Cache (default /work/cache/deepspeed, or $ZT_DEEPSPEED_CACHE):
  sdists/deepspeed-V.tar.gz           the release's source from PyPI
  V/site/                             DeepSpeed V (DS_BUILD_OPS=0, no C++ op) and its pure-Python
                                      dependencies, for /usr/bin/python3; V/site/complete marks it
  V/traces/<variant>/spec.json, ds/   the variant's spec, trace_rank<R>.jsonl, info_rank<R>.json
                                      (ds/complete holds the spec it was traced with: a variant
                                      is traced again only when its spec changed)
  V/summary.json                      per variant: status, the steady step's sequence of rank 0
A release or a variant already done is skipped, so a second run costs seconds.

Torch: Debian's python3-torch 1.13 up to 0.15.4; PyPI's torch NEW_TORCH (into CACHE/torch/T/site,
installed here when missing, about 5 GB with its nvidia-* libraries) from 0.16.9 on, which
no longer run on 1.13 (see NEW_TORCH). --torch T runs releases on another torch, into
CACHE/V/torchT: a release traced on both shows what the torch alone changes.

Time here, measured (2 cores shared with three other helpers' C++ builds, nice 19, load 8 to 26):
13 to 64 s per variant at W = 4 depending on the load, 24 s on average (torch 2.7.1 releases at
the slow end: its import). --core took 4 to 10 minutes per release (0.15.4: 224 s, 0.11.2:
597 s); the whole first pass (177 variant runs: 10 releases with CORE, 0.15.4 again on torch
2.7.1, 3 variants of 0.12.3 and 0.12.4) 72 minutes of tracing. Installing a
release takes 20 to 60 s with pip's cache warm, torch 2.7.1 once 3 minutes. RELEASE_SET (49
variants) was not run across releases: at 24 s a variant about 20 minutes per release, near 4
hours for the 11 default releases (an estimate, not a measurement). A second run of anything
already traced costs seconds (the cache).
Exit status: 0 when every variant of every release was traced, 1 otherwise (printed per variant).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import launch  # noqa: E402
import reference  # noqa: E402
from variants import S3, SHAPES, VARIANTS, variant  # noqa: E402

DEFAULT_VERSIONS = ["0.10.3", "0.11.2", "0.12.6", "0.13.5", "0.14.4", "0.14.5", "0.15.4",
                    "0.16.9", "0.17.6", "0.18.9", "0.19.8"]
CACHE = os.path.abspath(os.environ.get("ZT_DEEPSPEED_CACHE", "/work/cache/deepspeed"))
TRACES = None  # --traces: a folder for the traces other than the cache (the installs stay there)
PY = "/usr/bin/python3"
STUBS = os.path.join(HERE, "cpu_stubs")

# Every combination of the three stage-1/2 gradient-path switches, with a bucket (1e4) smaller
# than the largest tensors, so that buckets close inside a tensor. variants.py has each switch
# alone; the pairs and the triple are added here.
SWITCHES = (("rsfalse", "reduce_scatter"), ("mrbafalse", "use_multi_rank_bucket_allreduce"),
            ("cgfalse", "contiguous_gradients"))
COMBINATIONS = {}
for stage in (1, 2):
    for mask in range(1, 8):
        chosen = [SWITCHES[i] for i in range(3) if mask >> i & 1]
        if len(chosen) < 2:
            continue
        name = f"s{stage}_" + "_".join(label for label, _ in chosen) + "_b1e4"
        COMBINATIONS[name] = variant(dict({"stage": stage, "reduce_bucket_size": 10000},
                                          **{key: False for _, key in chosen}))
# ZeRO++'s hpZ: secondary partitions over groups of 2 consecutive ranks, 2 ranks per node (its
# start-up and first step differ from plain stage 3's; variants.py's set is traced on 0.14.4 by
# reference.py, this one across releases only).
# qwZ and qgZ run on a CPU stand-in for DeepSpeed's quantizer kernels (cpu_quantizer.py: the
# kernels' shapes and dtypes, so the collectives' counts are DeepSpeed's); qgZ needs two nodes
# (one node reduce-scatters), and s3_zeropp_n2 is the ZeRO++ paper's three switches together.
ZEROPP = {"s3_hpz2": variant(dict(S3, zero_hpz_partition_size=2), ranks_per_node=2),
          "s3_qwz": variant(dict(S3, zero_quantized_weights=True)),
          "s3_qgz_n2": variant(dict(S3, zero_quantized_gradients=True), ranks_per_node=2),
          "s3_zeropp_n2": variant(dict(S3, zero_hpz_partition_size=2, zero_quantized_weights=True,
                                       zero_quantized_gradients=True), ranks_per_node=2),
          # An unseen shape: qwZ's block rule on W = 3's partition sums, qgZ's max(rows, cols, W)
          # groups on 300-row and 144-row tensors.
          "xe48_s3_qwz_w3": variant(dict(S3, zero_quantized_weights=True), world=3,
                                    model=SHAPES["e48"]),
          "xe48_s3_qgz_n2": variant(dict(S3, zero_quantized_gradients=True), ranks_per_node=2,
                                    model=SHAPES["e48"])}
ALL_VARIANTS = dict(VARIANTS, **COMBINATIONS, **ZEROPP)

# What the issue asks each release to show: stages 0-3; every switch combination on a bucket
# that cuts tensors (1e4) and the default on one that does not (5e8); one and two groups;
# round_robin; communication_data_type; stage 3's prefetch, persistence and reuse; clip.
RELEASE_SET = (
    ["s0_g2", "s0_g1", "s0_clip1"] +
    [f"s{s}_{v}" for s in (1, 2) for v in (
        "default_b5e8", "default_b5e8_g1", "default_b1e4", "rsfalse_b1e4", "mrbafalse_b1e4",
        "cgfalse_b1e4", "rsfalse_mrbafalse_b1e4", "rsfalse_cgfalse_b1e4",
        "mrbafalse_cgfalse_b1e4", "rsfalse_mrbafalse_cgfalse_b1e4", "default_b2e4_w3",
        "clip1", "roundrobin_b2e4", "roundrobin_mrbafalse_b2e4", "bf16", "bf16_commfp32")] +
    ["s3_default", "s3_default_g1", "s3_default_b1e4", "s3_clip1", "s3_reuse0", "s3_prefetch0",
     "s3_prefetch2e4", "s3_maxlive2e4", "s3_persist0", "s3_persist1e5", "s3_rsfalse",
     "s3_bf16", "s3_bf16_commfp32", "s3_default_w3"])

# The first pass, when the whole set does not fit the time at hand: each stage, each switch alone
# on a cutting bucket (1e4), the default on one that does not cut (5e8), round_robin,
# communication_data_type, clip, stage 3's prefetch and persistence.
CORE = ["s0_clip1", "s1_default_b1e4", "s1_mrbafalse_b1e4", "s2_default_b5e8", "s2_default_b1e4",
        "s2_rsfalse_b1e4", "s2_mrbafalse_b1e4", "s2_cgfalse_b1e4", "s2_roundrobin_b2e4",
        "s2_bf16_commfp32", "s2_clip1", "s3_default", "s3_prefetch0", "s3_persist0",
        "s3_bf16_commfp32"]

# What the drift tracker (drift.py) traces on a new release: CORE and ZeRO++'s three switches.
DRIFT = CORE + ["s3_hpz2", "s3_qwz", "s3_qgz_n2"]

# The releases that need a newer torch than Debian's 1.13, and the one they get from PyPI (into
# CACHE/torch/<T>/site): 0.16.9 (0.16.x: not bisected) and later call Module.register_forward_pre_hook(prepend=...,
# with_kwargs=...) (torch 2.0); 0.18 and later import torch.utils._sympy at import time. One torch
# for all of them, so that a change between two of them is DeepSpeed's, not torch's. PyPI has no
# CPU-only torch wheel for Linux x86_64 (those are on download.pytorch.org, not reachable here);
# its CUDA wheel imports and runs on a CPU once its nvidia-* dependencies are installed too.
NEW_TORCH = "2.7.1"
NEEDS_NEW_TORCH = (0, 16)


# Releases whose `import deepspeed` imports the triton inference kernels whenever triton imports
# (model_implementations/transformers/ds_transformer.py: 0.19.3 dropped the is_triton_supported()
# gate, 0.19.8 no longer imports them there); on a CPU their autotuner fails ("0 active
# drivers"), so triton is hidden from them as from the releases before 0.16 on torch 2.7.1.
TRITON_AT_IMPORT = ((0, 19, 3), (0, 19, 7))


def default_torch(version):
    return NEW_TORCH if key(version) >= NEEDS_NEW_TORCH else "system"


def key(version):
    return tuple(int(x) for x in version.split("."))


def dependencies(version):
    """The pure-Python requirements of the release (requirements/requirements.txt) less torch,
    numpy, psutil and packaging, which come from Debian."""
    deps = ["hjson", "py-cpuinfo", "tqdm", "ninja"]
    deps.append("pydantic<2" if key(version) < (0, 15) else "pydantic>=2")
    if key(version) >= (0, 15):
        deps.append("msgpack")
    if key(version) >= (0, 16):
        deps.append("einops")
    return deps


def torch_site(torch):
    return "" if torch == "system" else os.path.join(CACHE, "torch", torch, "site")


def run_dir(version, torch):
    """Where the release's traces go: CACHE/V (TRACES/V with --traces) with its default torch,
    .../V/torch<T> else."""
    base = os.path.join(TRACES or CACHE, version)
    return base if torch == default_torch(version) else os.path.join(base, f"torch{torch}")


def python_path(version, torch):
    """The --site of launch.py for the release: its site, the CPU stubs for releases before 0.14.1
    (their CPU accelerator imports intel_extension_for_pytorch and oneccl_bindings_for_pytorch),
    the private torch where it has one (behind cpu_stubs/no_triton for releases before 0.16 and
    TRITON_AT_IMPORT)."""
    parts = [os.path.join(CACHE, version, "site")]
    if key(version) < (0, 14, 1):
        parts.append(STUBS)
    if torch != "system":
        if key(version) < (0, 16) or TRITON_AT_IMPORT[0] <= key(version) <= TRITON_AT_IMPORT[1]:
            parts.append(os.path.join(STUBS, "no_triton"))
        parts.append(torch_site(torch))
    return os.pathsep.join(parts)


def pip(args, log, env=None):
    run_env = dict(os.environ, DS_BUILD_OPS="0", PIP_DEFAULT_TIMEOUT="20", PIP_RETRIES="1",
                   **(env or {}))
    with open(log, "a") as f:
        return subprocess.run(["timeout", "900", PY, "-m", "pip"] + args,
                              stdout=f, stderr=subprocess.STDOUT, env=run_env,
                              stdin=subprocess.DEVNULL).returncode == 0


def install_torch(torch):
    """'' when torch T from PyPI is in CACHE/torch/T/site (installing it when not), else why."""
    site = torch_site(torch)
    if torch == "system" or os.path.exists(os.path.join(site, "complete")):
        return ""
    partial = site + ".partial"
    subprocess.run(["rm", "-rf", partial], check=True)
    os.makedirs(partial)
    log = os.path.join(partial, "pip.log")
    if not pip(["install", "--quiet", "--disable-pip-version-check", "--no-input",
                "--progress-bar", "off", "--target", partial, f"torch=={torch}"], log):
        return f"pip could not install torch=={torch} (log: {log})"
    subprocess.run(["rm", "-rf", site], check=True)
    os.rename(partial, site)
    with open(os.path.join(site, "complete"), "w") as f:
        f.write(torch + "\n")
    return ""


def install(version, torch):
    """'' when DeepSpeed VERSION is in its site (installing it when not) and imports with the
    torch T, else why not. The sdist comes first: a release PyPI does not have costs no torch."""
    site = os.path.join(CACHE, version, "site")
    if os.path.exists(os.path.join(site, "complete")):
        return install_torch(torch) or probe(version, torch)
    sdists = os.path.join(CACHE, "sdists")
    sdist = os.path.join(sdists, f"deepspeed-{version}.tar.gz")
    os.makedirs(sdists, exist_ok=True)
    partial = site + ".partial"
    subprocess.run(["rm", "-rf", partial], check=True)
    os.makedirs(partial)
    log = os.path.join(partial, "pip.log")
    common = ["--quiet", "--disable-pip-version-check", "--no-input"]
    if not os.path.exists(sdist) and not pip(
            ["download"] + common + ["--no-deps", "--no-binary", ":all:", "-d", sdists,
                                     f"deepspeed=={version}"], log):
        return f"pip could not download deepspeed=={version} (log: {log})"
    why = install_torch(torch)
    if why:
        return why
    torch_env = {"PYTHONPATH": torch_site(torch)} if torch != "system" else {}
    if not pip(["install"] + common + ["--no-deps", "--no-build-isolation", "--target", partial,
                                       sdist], log, torch_env):
        return f"pip could not install {sdist} (log: {log})"
    if not pip(["install"] + common + ["--target", partial] + dependencies(version), log):
        return f"pip could not install {dependencies(version)} for {version} (log: {log})"
    subprocess.run(["rm", "-rf", site], check=True)
    os.rename(partial, site)
    with open(os.path.join(site, "complete"), "w") as f:
        f.write(version + "\n")
    return probe(version, torch)


def probe(version, torch):
    """'' when DeepSpeed VERSION imports with torch T, else why not."""
    run = subprocess.run(
        [PY, "-c", "import deepspeed, torch; print('versions', deepspeed.__version__, "
         "torch.__version__)"],
        env=dict(os.environ, PYTHONPATH=python_path(version, torch), DS_ACCELERATOR="cpu"),
        capture_output=True, text=True)
    found = [line.split()[1:] for line in run.stdout.splitlines() if line.startswith("versions ")]
    if run.returncode != 0 or not found or found[-1][0] != version:
        lines = (run.stdout + run.stderr).strip().splitlines()
        return f"DeepSpeed {version} does not import with torch {torch}: " \
               f"{lines[-1] if lines else ''}"
    return ""


def exception_of(ds):
    """The exception a failed rank ended with (its log's last lines from the exception's type
    on), or ''."""
    for name in sorted(os.listdir(ds)):
        if not name.startswith("log_rank"):
            continue
        lines = [x.rstrip() for x in open(os.path.join(ds, name), errors="replace")]
        if not any(x.startswith("Traceback") for x in lines):
            continue
        starts = [i for i, x in enumerate(lines)
                  if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Exit)\b", x)]
        if not starts:
            continue
        tail = [x.strip() for x in lines[starts[-1]:starts[-1] + 4]
                if x.strip() and not x.startswith(("[20", "terminate"))]
        return " | ".join(tail)[:300]
    return ""


def trace(version, torch, names, timeout):
    """Traces each named variant on the release; returns the number that failed."""
    site = python_path(version, torch)
    summary_path = os.path.join(run_dir(version, torch), "summary.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    failed = 0
    for name in names:
        spec = ALL_VARIANTS[name]
        vdir = os.path.join(run_dir(version, torch), "traces", name)
        os.makedirs(vdir, exist_ok=True)
        reference.write_json(os.path.join(vdir, "spec.json"), spec)
        start = time.monotonic()
        problem = reference.run_deepspeed(spec, vdir, site, timeout, True)
        if problem and "exited with status" in problem and "rank" in problem:
            problem = reference.run_deepspeed(spec, vdir, site, timeout, False)  # gloo start-up
        seconds = time.monotonic() - start
        entry = dict(status="failed" if problem else "traced", problem=problem)
        if not problem:
            ds = reference.compare.load(os.path.join(vdir, "ds"), "trace_rank")
            steady = [x for x in ds[0] if x["step"] == reference.STEADY_STEP]
            entry["steady_rank0"] = reference.compact_sequence(steady)
            entry["info_rank0"] = json.load(open(os.path.join(vdir, "ds", "info_rank0.json")))
        else:
            entry["error"] = exception_of(os.path.join(vdir, "ds"))
            failed += 1
        summary[name] = entry
        print(f"{version:8} {entry['status'].upper():7} {name} ({seconds:.0f} s)"
              + (f": {problem}: {entry['error']}" if problem else ""), flush=True)
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    return failed


def main():
    global CACHE, TRACES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--variants", nargs="+", help="variant names (default: RELEASE_SET)")
    parser.add_argument("--core", action="store_true", help="the variants of CORE")
    parser.add_argument("--cache", default=CACHE, help="the cache folder")
    parser.add_argument("--traces", help="trace into DIR/<V>/traces instead of the cache")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per variant")
    parser.add_argument("--torch", help="run every release on this torch ('system': Debian's; "
                        "a version: from PyPI) instead of its default (traces in V/torch<T>)")
    parser.add_argument("--list", action="store_true", help="print RELEASE_SET and stop")
    args = parser.parse_args()
    os.nice(max(0, 10 - os.nice(0)))  # a shared machine: the traces run at niceness 10 or more
    CACHE = os.path.abspath(args.cache)
    TRACES = os.path.abspath(args.traces) if args.traces else None
    names = args.variants or (CORE if args.core else RELEASE_SET)
    if args.list:
        print("\n".join(names))
        return
    unknown = [n for n in names if n not in ALL_VARIANTS]
    if unknown:
        print(f"releases: unknown variant {unknown[0]!r} (--list names them)")
        sys.exit(2)
    failures = 0
    start = time.monotonic()
    for version in args.versions or DEFAULT_VERSIONS:
        torch = args.torch or default_torch(version)
        why = install(version, torch)
        if why:
            print(f"{version:8} NOT INSTALLED: {why}", flush=True)
            failures += 1
            continue
        failures += trace(version, torch, names, args.timeout)
    print(f"releases: {len(args.versions or DEFAULT_VERSIONS)} releases, {len(names)} variants "
          f"each, {failures} failures, {time.monotonic() - start:.0f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
