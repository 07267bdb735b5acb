#!/usr/bin/python3
"""DeepSpeed's recorded collectives as test data, and zerotrain's plan checked against them.

  expected_calls.py record [VARIANT ...] [--traces DIR] [--expected DIR]
  expected_calls.py check  [VARIANT ...] [--expected DIR] [--bin ZEROTRAIN]

record: turns DeepSpeed's traces (reference.py's --out folder, default build/deepspeed-ref,
DIR/<variant>/ds/trace_rank<R>.jsonl) into one compact file per variant,
tests/reference/deepspeed/expected/<variant>.calls: the variant's spec (world, parameter groups, model
shape, ds_config) and the steady step's calls of every rank. Without names it records every
variant whose traces are complete.

check: for every expected file, runs `zerotrain plan configs/pmbs/cpu_base.yaml --world W
--deepspeed ds_config.json --set model.*=... --set train.param_groups=G --calls` and compares
its steady-step list with DeepSpeed's, rank by rank: the ordered sequence of (phase, micro, op,
dtype, count, root, group), exactly. A spec's "ranks_per_node" is passed as --ranks-per-node. A file whose spec differs from variants.py's is stale (re-trace
and record). Checking every file also checks that the recorded variants exercise each gradient
path DeepSpeed has, as zerotrain's registry lists them (`zerotrain config-reference
--grad-paths`). Needs no DeepSpeed and never skips; about a second for all variants.

File format (one call a line, identical consecutive calls folded into "xN"):
  spec {json}
  ranks R [R ...]               the ranks whose sequence follows (identical on each)
  PHASE MICRO OP DTYPE COUNT ROOT [GROUP] [xN]
COUNT is in zerotrain's convention (reduce-scatter: per-rank receive count; all-gather: per-rank
send count), ROOT -1 for unrooted calls; GROUP "SIZE/STRIDE" for a call over a group of SIZE
ranks STRIDE apart (MiCS's shard and replica groups), left out for the world. Exit status: 0 when everything matches, 1 on a
difference, 2 on bad input.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

from variants import VARIANTS  # noqa: E402

# The release the files of expected/ were recorded from; zerotrain's plan emulates it.
RECORDED_RELEASE = "0.14.4"
# Paths that RECORDED_RELEASE no longer has: the release slice exercises them
# (check_releases.py, expected_releases/0.10.3 and 0.12.6).
OLDER_RELEASES_ONLY = {"per_slice_reduce"}  # DeepSpeed before 0.12.4
STEADY_STEP = 1  # the second of three optimizer steps: the first one past stage 3's trace
EXPECTED = os.path.join(HERE, "expected")
HEADER = """\
# {name}: DeepSpeed 0.14.4's collectives in the steady step (the second of three optimizer
# steps), recorded on CPU ranks over gloo by tests/reference/deepspeed/reference.py and written by
# `tests/reference/deepspeed/expected_calls.py record`. make test checks zerotrain's plan against it
# (`expected_calls.py check`). Recorded data: regenerate, do not edit.
"""


class InputError(Exception):
    pass


def fold(calls):
    """[(call, repeat)] with identical consecutive calls folded."""
    out = []
    for c in calls:
        if out and out[-1][0] == c:
            out[-1][1] += 1
        else:
            out.append([c, 1])
    return out


def group_word(size, stride, world):
    """A call's group as the files write it: "world", or "SIZE/STRIDE"."""
    return "world" if size == world and stride == 1 else f"{size}/{stride}"


def call_line(call, repeat):
    words = [str(x) for x in call]
    if words[-1] == "world":
        words.pop()
    return " ".join(words) + (f" x{repeat}" if repeat > 1 else "")


def load_trace(path, world):
    calls = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                if int(r["step"]) != STEADY_STEP:
                    continue
                size, stride = r.get("group", [world, 1])
                calls.append((r["phase"], int(r["micro"]), r["op"], r["dtype"], int(r["count"]),
                              int(r["root"]), group_word(int(size), int(stride), world)))
            except (ValueError, KeyError) as e:
                raise InputError(f"{path}:{number}: expected a JSON call record ({e})")
    return calls


def record(names, traces, expected):
    """Writes the expected file of each named variant (every traced one when names is empty)."""
    os.makedirs(expected, exist_ok=True)
    written = 0
    for name in names or VARIANTS:
        ds = os.path.join(traces, name, "ds")
        if not os.path.exists(os.path.join(ds, "complete")):
            if names:
                raise InputError(f"{ds}: no complete DeepSpeed trace (run reference.py {name})")
            continue
        spec = VARIANTS[name]
        recorded = json.load(open(os.path.join(traces, name, "spec.json")))
        if recorded != spec:
            raise InputError(f"{traces}/{name}/spec.json: traced with another spec than "
                             f"variants.py's; trace it again")
        per_rank = [load_trace(os.path.join(ds, f"trace_rank{r}.jsonl"), spec["world"])
                    for r in range(spec["world"])]
        lines = [HEADER.format(name=name).rstrip("\n"), "spec " + json.dumps(spec, sort_keys=True)]
        done = set()
        for r, calls in enumerate(per_rank):
            if r in done:
                continue
            same = [q for q in range(spec["world"]) if per_rank[q] == calls]
            done.update(same)
            lines.append("ranks " + " ".join(map(str, same)))
            lines += [call_line(c, n) for c, n in fold(calls)]
        path = os.path.join(expected, name + ".calls")
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)
        written += 1
    print(f"expected calls: {written} files written to {expected}")


def read_expected_steps(path, steps=None, single_step=1):
    """(spec, {step: {rank: [call, ...]}}) of an expected-calls file. A "trace_step N" line
    starts the blocks of step N (one of `steps` when given, each at most once:
    expected_releases' files, check_releases.py); blocks before any such line belong to
    `single_step` (this script's files hold one step and no such line)."""
    spec, by_step, ranks, current, step = None, {}, None, None, single_step
    with open(path) as f:
        for number, line in enumerate(f, 1):
            where = f"{path}:{number}"
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            try:
                if words[0] == "spec":
                    spec = json.loads(line[len("spec"):])
                elif words[0] == "trace_step":
                    step = int(words[1])
                    if step in by_step:
                        raise ValueError(f"step {step}: a second 'trace_step {step}' line")
                    if steps is not None and step not in steps:
                        raise ValueError(f"step {step}: expected one of {steps}")
                    ranks, current = by_step.setdefault(step, {}), None
                elif words[0] == "ranks":
                    if ranks is None:
                        ranks = by_step.setdefault(step, {})
                    current = [int(w) for w in words[1:]]
                    for r in current:
                        ranks[r] = []
                elif current is None:
                    raise InputError(f"{where}: a call before any 'ranks' line")
                else:
                    repeat = 1
                    if words[-1].startswith("x") and words[-1][1:].isdigit():
                        repeat = int(words[-1][1:])
                        words = words[:-1]
                    if len(words) not in (6, 7) or repeat < 1:
                        raise ValueError("expected PHASE MICRO OP DTYPE COUNT ROOT [GROUP] [xN]")
                    call = (words[0], int(words[1]), words[2], words[3], int(words[4]),
                            int(words[5]), words[6] if len(words) == 7 else "world")
                    for r in current:
                        ranks[r] += [call] * repeat
            except (ValueError, IndexError) as e:
                raise InputError(f"{where}: {e}")
    if spec is None:
        raise InputError(f"{path}: no 'spec' line")
    if not by_step:
        by_step[single_step] = {}
    for step, ranks in by_step.items():
        if sorted(ranks) != list(range(spec["world"])):
            raise InputError(f"{path}: step {step}: expected the calls of ranks "
                             f"0..{spec['world'] - 1}, got {sorted(ranks)}")
    return spec, by_step


def read_expected(path):
    """(spec, {rank: [call, ...]}) of a file that holds one step."""
    spec, by_step = read_expected_steps(path)
    if list(by_step) != [1]:
        raise InputError(f"{path}: 'trace_step' lines: expected the calls of one step "
                         f"(check_releases.py reads the files of several)")
    return spec, by_step[1]


def plan_output(spec, zerotrain, sets=()):
    """What `zerotrain plan --deepspeed --calls` prints for the spec, with `sets`
    ("section.key=value") given as further --set overrides."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as ds_config:
        json.dump(spec["ds_config"], ds_config)
        ds_config.flush()
        command = [zerotrain, "plan", os.path.join(ROOT, "configs/pmbs/cpu_base.yaml"),
                   "--world", str(spec["world"]), "--deepspeed", ds_config.name, "--calls",
                   "--set", f"train.param_groups={spec['groups']}"]
        if "ranks_per_node" in spec:
            command += ["--ranks-per-node", str(spec["ranks_per_node"])]
        for k, v in spec["model"].items():
            command += ["--set", f"model.{k}={v}"]
        for s in sets:
            command += ["--set", s]
        run = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise InputError(f"plan exited with status {run.returncode}: {run.stderr.strip()}")
    return run.stdout


def planned_calls(spec, zerotrain, sets=()):
    """The steady-step calls `zerotrain plan --deepspeed --calls` lists for the spec (sets: as
    plan_output's), and the configured gradient path."""
    calls, on, path = [], False, None
    for line in plan_output(spec, zerotrain, sets).splitlines():
        if line.startswith("* stage ") and path is None:
            path = configured_path(line[2:32].split())
        if line.startswith("every collective of a steady step"):
            on = True
        elif on and not line.strip():
            if calls:
                break
        elif on:
            w = line.split()
            if w[0] == "phase":
                continue
            size, stride = (spec["world"], 1) if w[6] == "world" else map(int, w[6].split("/"))
            calls.append((w[0], int(w[1]), w[2], w[3], int(w[4]), int(w[5]),
                          group_word(size, stride, spec["world"])))
    return calls, path


def configured_path(label):
    """(stage, gradient path key) of plan's starred row ("stage 2 per_owner_reduce"; "stage 0"
    has one path); None for a ZeRO++ row."""
    stage = int(label[1])
    if stage == 0:
        return (0, "allreduce")
    return (stage, label[2]) if len(label) == 3 and "Z" not in label[2] else None


def deepspeed_paths(zerotrain):
    """Every (stage, key) of the registry's rows that DeepSpeed has (its code is not "none"),
    from `zerotrain config-reference --grad-paths`."""
    run = subprocess.run([zerotrain, "config-reference", "--grad-paths"], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise InputError(f"config-reference --grad-paths exited with status {run.returncode}")
    paths = set()
    for line in run.stdout.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 5 or cells[4].startswith("none"):
            continue
        key = cells[1].split("`")[1]
        if key in OLDER_RELEASES_ONLY:
            continue
        for stage in cells[0].split(","):
            paths.add((int(stage), key))
    return paths


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def context(expected, planned, index, k=3):
    show = lambda seq, i: " ".join(map(str, seq[i])) if i < len(seq) else "-"
    lines = [f"      {'#':>4}  {'DeepSpeed':44} zerotrain plan"]
    for i in range(max(0, index - k), min(max(len(expected), len(planned)), index + k + 1)):
        mark = ">" if i == index else " "
        lines.append(f"    {mark} {i:4}  {show(expected, i):44} {show(planned, i)}")
    return lines


def load_and_plan(path, zerotrain):
    """(name, expected calls per rank, planned calls) or (name, why not, None)."""
    name = os.path.basename(path)[:-len(".calls")]
    try:
        spec, ranks = read_expected(path)
        if name not in VARIANTS:
            raise InputError(f"{path}: no variant {name!r} in variants.py")
        if VARIANTS[name] != spec:
            raise InputError(f"{path}: its spec is not variants.py's; trace the variant again "
                             f"and record it")
        calls, path = planned_calls(spec, zerotrain,
                                    [f"zero.deepspeed_version={RECORDED_RELEASE}"])
        return name, ranks, calls, path
    except InputError as e:
        return name, str(e), None, None


def check(paths, zerotrain, whole_set):
    matched, problems = 0, []
    # Each plan is a process that mostly waits for MPI's start-up: run several at once.
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda p: load_and_plan(p, zerotrain), paths))
    traced = {r[3] for r in results if r[3] is not None}
    for name, ranks, planned, _ in results:
        if planned is None:
            problems.append((name, [ranks]))
            continue
        lines = []
        for rank, expected in sorted(ranks.items()):
            index = first_difference(expected, planned)
            if index is not None:
                lines.append(f"rank {rank}: differs at call {index} (DeepSpeed {len(expected)} "
                             f"calls, plan {len(planned)})")
                lines += context(expected, planned, index)
                break
        if lines:
            problems.append((name, lines))
        else:
            matched += 1
    for name, lines in problems:
        print(f"DIFFERS  {name}")
        print("\n".join("    " + line for line in lines))
    print(f"deepspeed expected calls: {len(paths)} variants, {matched} match, "
          f"{len(paths) - matched} differ")
    if not whole_set:
        return not problems
    # The recorded set must exercise every path DeepSpeed has, as the registry lists them.
    wanted = deepspeed_paths(zerotrain)
    missing = sorted(wanted - traced)
    print(f"gradient paths traced: {len(wanted & traced)} of the registry's {len(wanted)} "
          f"DeepSpeed paths" + (f"; never traced: {missing}" if missing else ""))
    return not problems and not missing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["record", "check"])
    parser.add_argument("variants", nargs="*")
    parser.add_argument("--traces", default=os.path.join(ROOT, "build/deepspeed-ref"))
    parser.add_argument("--expected", default=EXPECTED)
    parser.add_argument("--bin", default=os.environ.get(
        "ZT_BIN", os.path.join(ROOT, "build/zerotrain")))
    args = parser.parse_intermixed_args()
    unknown = [n for n in args.variants if n not in VARIANTS]
    if unknown:
        print(f"expected_calls: unknown variant {unknown[0]!r} (reference.py --list names them)")
        sys.exit(2)
    try:
        if args.command == "record":
            record(args.variants, args.traces, args.expected)
            return
        # Every variant of variants.py has its recorded file, and every file its variant.
        recorded = sorted(f[:-len(".calls")] for f in os.listdir(args.expected)
                          if f.endswith(".calls"))
        missing = [n for n in VARIANTS if n not in recorded]
        if missing and not args.variants:
            raise InputError(f"{args.expected}: no recorded calls for {len(missing)} variant(s) "
                             f"of variants.py ({', '.join(missing[:3])}...): trace and record "
                             f"them")
        names = args.variants or recorded
        sys.exit(0 if check([os.path.join(args.expected, n + ".calls") for n in names],
                            args.bin, not args.variants) else 1)
    except (InputError, OSError) as e:
        print(f"expected_calls: {e}")
        sys.exit(2)


if __name__ == "__main__":
    main()
