#!/usr/bin/python3
"""zerotrain's emulation of each DeepSpeed release checked call for call against that release.

  check_releases.py check  [VERSION ...] [--variants NAME ...] [--cache DIR] [--bin ZEROTRAIN]
                           [--steady-only]
  check_releases.py slice  [--expected DIR] [--bin ZEROTRAIN] [--steady-only]
  check_releases.py record VERSION NAME [NAME ...] [--cache DIR] [--expected DIR]

check: for every release traced in the cache (releases.py's CACHE/V/traces/<variant>/, default
/work/cache/deepspeed or $ZT_DEEPSPEED_CACHE) and every variant with a complete trace, runs
`zerotrain plan configs/pmbs/cpu_base.yaml --deepspeed ds_config.json --calls --set
zero.deepspeed_version=V` on the variant's recorded spec and compares every traced step with the
release's, rank by rank: start-up (deepspeed.initialize, its barriers included), the first
optimizer step, the two steady ones and what follows the last (trace_steps.py), each the ordered
(phase, micro, op, dtype, count, root, group), exactly. --steady-only compares the steady step
(the second of three) alone, as before start-up and the first step were emulated. Prints a
matrix, variant x release: "ok" (every call matches), "DIFF" (the first difference is printed
below it), "-" (not traced), "refused" (the release's config refused the variant: releases.py's
summary holds its ValidationError or DeepSpeedConfigError), "failed" (the trace failed otherwise,
a rank crashed or timed out: trace it again), then exits 1 if any cell is DIFF.

slice: the same comparison for the recorded slice in make test (tests/reference/deepspeed/
expected_releases/<V>/<variant>.calls: expected_calls.py's file format, each traced step's blocks
after a "trace_step N" line; a file without them holds the steady step only), which needs no cache.

record: writes expected_releases/<V>/<NAME>.calls, every traced step, from the cache's traces
of V.

zerotrain names integer dtypes as C++ does (uint8, int64); the traces as torch does (u8, i64):
the planned names are translated before comparing. Exit status: 0 all match, 1 a difference, 2
bad input (an unknown release, a missing trace).
"""
import argparse
import concurrent.futures
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import expected_calls  # noqa: E402
import trace_steps  # noqa: E402
from expected_calls import InputError  # noqa: E402

CACHE = os.path.abspath(os.environ.get("ZT_DEEPSPEED_CACHE", "/work/cache/deepspeed"))
EXPECTED = os.path.join(HERE, "expected_releases")
TRACE_DTYPE = {"uint8": "u8", "int64": "i64", "int8": "i8"}
RELEASE = re.compile(r"^\d+\.\d+\.\d+$")
HEADER = """\
# {name}: DeepSpeed {version}'s collectives in every traced step (start-up, then three optimizer
# steps, then nothing), from releases.py's trace of {version} (CPU ranks over gloo), written by
# `tests/reference/deepspeed/check_releases.py record`. make test checks zerotrain's plan with
# zero.deepspeed_version={version} against it (tests/e2e/deepspeed_releases.sh). Recorded data:
# regenerate, do not edit.
"""


def release_key(v):
    return tuple(int(x) for x in v.split("."))


def cached_releases(cache):
    if not os.path.isdir(cache):
        raise InputError(f"{cache}: no trace cache (releases.py fills it)")
    return sorted((d for d in os.listdir(cache) if RELEASE.match(d) and
                   os.path.isdir(os.path.join(cache, d, "traces"))), key=release_key)


def traced_calls(cache, version, name):
    """(spec, {step: {rank: calls}}) of a complete trace, or None when the variant has none."""
    folder = os.path.join(cache, version, "traces", name)
    if not os.path.exists(os.path.join(folder, "ds", "complete")):
        return None
    spec = json.load(open(os.path.join(folder, "spec.json")))
    per_rank = {r: trace_steps.load_trace_steps(os.path.join(folder, "ds"), r, spec["world"])
                for r in range(spec["world"])}
    return spec, {step: {r: per_rank[r][step] for r in per_rank} for step in trace_steps.STEPS}


# What a release raises when its config refuses a key (pydantic before and after 0.15, and
# DeepSpeed's own check): only these make a failed trace the release's refusal.
REFUSALS = ("ValidationError", "DeepSpeedConfigError")


def untraced_cell(cache, version, name):
    """The cell of a variant without a complete trace: "refused" when the release's config
    refused it (releases.py's summary holds the exception), "failed" when the trace failed
    otherwise (a rank crashed or timed out: the harness, to trace again), "-" when never tried."""
    try:
        entry = json.load(open(os.path.join(cache, version, "summary.json"))).get(name, {})
    except OSError:
        return "-"
    if entry.get("status") in (None, "traced"):
        return "-"
    return "refused" if any(r in (entry.get("error") or "") for r in REFUSALS) else "failed"


def compare(version, spec, steps, zerotrain, steady_only=False):
    """[] when every rank's calls in every step of `steps` match zerotrain's plan for `version`
    (steady_only: the steady step alone), else the lines saying where the first difference is."""
    planned = trace_steps.planned_steps(spec, zerotrain, [f"zero.deepspeed_version={version}"])
    for step in sorted(steps):
        if steady_only and step != expected_calls.STEADY_STEP:
            continue
        plan = [(p, m, op, TRACE_DTYPE.get(dt, dt), n, root, g)
                for p, m, op, dt, n, root, g in planned[step]]
        for rank, calls in sorted(steps[step].items()):
            index = expected_calls.first_difference(calls, plan)
            if index is not None:
                return ([f"{trace_steps.STEP_NAMES[step]} (trace step {step}), rank {rank}: "
                         f"differs at call {index} (DeepSpeed {version} {len(calls)} calls, "
                         f"plan {len(plan)})"] + expected_calls.context(calls, plan, index))
    return []


def check_cache(versions, variants, cache, zerotrain, steady_only=False):
    versions = versions or cached_releases(cache)
    for v in versions:
        if not os.path.isdir(os.path.join(cache, v, "traces")):
            raise InputError(f"{cache}/{v}: release {v} was never traced (releases.py {v})")
    names = variants or sorted({n for v in versions
                                for n in os.listdir(os.path.join(cache, v, "traces"))})
    jobs = [(v, n) for v in versions for n in names]

    def one(job):
        v, n = job
        traced = traced_calls(cache, v, n)
        if traced is None:
            return job, untraced_cell(cache, v, n), []
        try:
            lines = compare(v, *traced, zerotrain, steady_only)
        except InputError as e:
            return job, "DIFF", [str(e)]
        return job, ("DIFF" if lines else "ok"), lines

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, jobs))
    cell = {job: c for job, c, _ in results}
    width = max(len(n) for n in names)
    print(f"{'variant':{width}}  " + " ".join(f"{v:>7}" for v in versions))
    for n in names:
        print(f"{n:{width}}  " + " ".join(f"{cell[(v, n)]:>7}" for v in versions))
    counts = {c: sum(1 for x in cell.values() if x == c)
              for c in ("ok", "DIFF", "-", "refused", "failed")}
    print(f"releases x variants: {len(jobs)} cells: {counts['ok']} match, {counts['DIFF']} differ, "
          f"{counts['-']} not traced, {counts['refused']} refused by the release, "
          f"{counts['failed']} failed to trace")
    for (v, n), c, lines in results:
        if c == "DIFF":
            print(f"DIFFERS  {v} {n}")
            print("\n".join("    " + line for line in lines))
    return counts["DIFF"] == 0


def check_slice(expected, zerotrain, steady_only=False):
    if not os.path.isdir(expected):
        raise InputError(f"{expected}: no recorded release slice")
    jobs = [(v, os.path.join(expected, v, f)) for v in sorted(os.listdir(expected), key=release_key)
            for f in sorted(os.listdir(os.path.join(expected, v))) if f.endswith(".calls")]
    if not jobs:
        raise InputError(f"{expected}: no recorded .calls files")

    def one(job):
        v, path = job
        spec, steps = trace_steps.read_expected_steps(path)
        return v, os.path.basename(path)[:-len(".calls")], compare(v, spec, steps, zerotrain,
                                                                   steady_only)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, jobs))
    differ = [(v, n, lines) for v, n, lines in results if lines]
    for v, n, lines in differ:
        print(f"DIFFERS  {v} {n}")
        print("\n".join("    " + line for line in lines))
    releases = sorted({v for v, _ in jobs}, key=release_key)
    print(f"deepspeed release slice: {len(jobs)} variants over {len(releases)} releases "
          f"({' '.join(releases)}), {len(jobs) - len(differ)} match, {len(differ)} differ")
    return not differ


def record(version, names, cache, expected):
    os.makedirs(os.path.join(expected, version), exist_ok=True)
    for name in names:
        traced = traced_calls(cache, version, name)
        if traced is None:
            raise InputError(f"{cache}/{version}/traces/{name}: no complete trace")
        spec, steps = traced
        lines = [HEADER.format(name=name, version=version).rstrip("\n"),
                 "spec " + json.dumps(spec, sort_keys=True)]
        for step in trace_steps.STEPS:
            lines += trace_steps.step_lines(step, steps[step])
        path = os.path.join(expected, version, name + ".calls")
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)
    print(f"check_releases: {len(names)} files written to {expected}/{version}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["check", "slice", "record"])
    parser.add_argument("args", nargs="*")
    parser.add_argument("--variants", nargs="*", default=[])
    parser.add_argument("--steady-only", action="store_true")
    parser.add_argument("--cache", default=CACHE)
    parser.add_argument("--expected", default=EXPECTED)
    parser.add_argument("--bin", default=os.environ.get(
        "ZT_BIN", os.path.join(expected_calls.ROOT, "build/zerotrain")))
    args = parser.parse_intermixed_args()
    try:
        bad = [v for v in args.args[:1 if args.command == "record" else None]
               if not RELEASE.match(v)]
        if bad:
            raise InputError(f"{bad[0]!r} is not a release (MAJOR.MINOR.PATCH)")
        if args.command == "check":
            ok = check_cache(args.args, args.variants, args.cache, args.bin, args.steady_only)
        elif args.command == "slice":
            ok = check_slice(args.expected, args.bin, args.steady_only)
        else:
            if len(args.args) < 2:
                raise InputError("record needs a release and at least one variant")
            record(args.args[0], args.args[1:], args.cache, args.expected)
            ok = True
        sys.exit(0 if ok else 1)
    except (InputError, OSError, ValueError) as e:
        print(f"check_releases: {e}")
        sys.exit(2)


if __name__ == "__main__":
    main()
