#!/usr/bin/python3
"""DeepSpeed's drift: a new release's collectives against the last verified release, behaviour by
behaviour (`make deepspeed-drift`, or VERSION=V to name the release).

  drift.py [--version V] [--against FILE] [--variants NAME ...] [--cache DIR] [--timeout S]

Finds the newest DeepSpeed on PyPI (`pip index versions deepspeed`) unless --version names one,
installs it into the cache as releases.py does, traces releases.py's DRIFT variants (CORE and
ZeRO++'s hpZ, qwZ and qgZ; or the variants named), and diffs them
against the committed behaviours of LAST_VERIFIED (release_behaviours/<LAST_VERIFIED>.json) with
release_diff.py. Prints what changed under the behaviour table's headings
(docs/deepspeed_releases.md) and writes the new release's summary to CACHE/V/behaviours.json
(the file to commit once the release is verified). Progress goes to stderr.
Exit status: 0 when nothing changed, 1 when something did, 2 (one line) when the release could not
be found, installed or traced.
"""
import argparse
import collections
import contextlib
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402
import release_diff  # noqa: E402
import releases  # noqa: E402

# The newest release whose traces were checked against zerotrain's emulation and the table.
LAST_VERIFIED = "0.19.8"

# release_diff.py's behaviours under the table's headings (docs/deepspeed_releases.md).
HEADINGS = [
    ("runs", "ds_config keys the release accepts"),
    ("gradient primitive", "which primitive each gradient-path setting issues"),
    ("gradient roots", "which primitive each gradient-path setting issues"),
    ("gradient calls", "bucket-closing rule and padding of each group"),
    ("norm and scalars", "the norm's dtype and calls; the overflow check"),
    ("step all_reduce u8", "the norm's dtype and calls; the overflow check"),
    ("step all_gather", "parameter all-gather after the step (stage 1/2)"),
    ("fwd all_gather i8", "ZeRO++: qwZ's int8 gathers"),
    ("bwd all_gather i8", "ZeRO++: qwZ's int8 gathers"),
    ("bwd all_to_all", "ZeRO++: qgZ's all-to-all reduction"),
    ("fwd0 gathers", "stage 3's gather granularity, prefetch and persistence"),
    ("bwd0 gathers", "stage 3's gather granularity, prefetch and persistence"),
    ("fwd all_gather", "stage 3's gather granularity, prefetch and persistence"),
    ("bwd all_gather", "stage 3's gather granularity, prefetch and persistence"),
    ("broadcasts per step", "stage 3's trace broadcasts; start-up broadcasts"),
    ("init", "start-up broadcasts and gathers"),
    ("other calls", "barriers and other non-collective calls"),
    ("optimizer ", "the ZeRO optimizer's settings after DeepSpeed's own forcing"),
    ("ranks", "every rank issues the same calls"),
]


def heading(behaviour):
    for prefix, title in HEADINGS:
        if behaviour.startswith(prefix):
            return title
    return "call totals per phase (step 0, fwd, bwd, step)"


def newest_on_pypi():
    run = subprocess.run([releases.PY, "-m", "pip", "index", "versions", "deepspeed",
                          "--disable-pip-version-check"], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    found = re.search(r"^deepspeed \(([0-9.]+)\)", run.stdout, re.M)
    if not found:
        lines = (run.stdout + run.stderr).strip().splitlines()
        raise RuntimeError("could not find the newest DeepSpeed on PyPI: "
                           f"{lines[-1] if lines else 'pip printed nothing'}")
    return found.group(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", help="the release to check (default: the newest on PyPI)")
    parser.add_argument("--against", default=os.path.join(HERE, "release_behaviours",
                                                          f"{LAST_VERIFIED}.json"))
    parser.add_argument("--variants", nargs="+", default=releases.DRIFT,
                        help="variants of releases.py (default: DRIFT)")
    parser.add_argument("--cache", default=releases.CACHE)
    parser.add_argument("--timeout", type=float, default=300, help="seconds per variant")
    args = parser.parse_args()
    releases.CACHE = os.path.abspath(args.cache)
    try:
        baseline = release_diff.Release(args.against, None)
        version = args.version or newest_on_pypi()
        if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version):
            raise ValueError(f"'{version}' is not a release number (expected X.Y.Z, e.g. "
                             f"{LAST_VERIFIED})")
        torch = releases.default_torch(version)
        unknown = [v for v in args.variants if v not in releases.ALL_VARIANTS]
        if unknown:
            raise ValueError(f"unknown variant '{unknown[0]}' (releases.py --list names them)")
        with contextlib.redirect_stdout(sys.stderr):
            why = releases.install(version, torch)
            if why:
                raise RuntimeError(why)
            failed = releases.trace(version, torch, args.variants, args.timeout)
        if failed == len(args.variants):
            raise RuntimeError(f"no variant of {version} traced (releases.py's log above, "
                               f"traces in {releases.run_dir(version, torch)})")
        new = release_diff.Release(version, releases.CACHE)
        out = os.path.join(releases.run_dir(version, torch), "behaviours.json")
        if os.path.exists(out):
            os.remove(out)
        release_diff.export(version, releases.CACHE, args.variants, out)
        changed, both, _ = release_diff.diff_releases(baseline, new, args.variants)
    except (RuntimeError, ValueError, OSError, compare.TraceError,
            subprocess.SubprocessError) as e:
        print(f"deepspeed-drift: {e}", file=sys.stderr)
        sys.exit(2)
    grouped = collections.OrderedDict((title, []) for _, title in HEADINGS)
    for v, d in changed.items():
        for k, x, y in d:
            grouped.setdefault(heading(k), []).append(f"    {v}: {k}: {x}  ->  {y}")
    for title, lines in grouped.items():
        if lines:
            print(f"  {title}:")
            print("\n".join(lines))
    count = sum(len(d) for d in changed.values())
    print(f"deepspeed-drift: {version} against {baseline.name} ({LAST_VERIFIED} verified): "
          f"{len(both)} variants compared, " +
          (f"{count} behaviours changed in {len(changed)} variants" if changed else "no change") +
          f"; summary in {out}")
    sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
