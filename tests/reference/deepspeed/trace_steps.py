"""Every traced step of a DeepSpeed run, and zerotrain's plan of the same steps, for
check_releases.py.

Steps, as recorder.py numbers them: -1 is start-up (deepspeed.initialize), 0 the first optimizer
step (stage 3 records and checks its trace there), 1 and 2 steady steps, 3 what follows the last
step (nothing, on every traced release). Barriers and the other calls recorder.py notes apart
(other_rank<R>.jsonl) have no place among the collectives: each is appended to its step's calls as
(phase, micro, CALL, "-", 0, -1, "world"), which is where `zerotrain plan --calls` lists its
barriers too.

`plan --calls` sections read here: "start-up, before the first step" (step -1), "the first step"
(step 0) and "every collective of a steady step" (steps 1 and 2); step 3 is planned empty.
"""
import json
import os

import expected_calls
from expected_calls import InputError

STEPS = (-1, 0, 1, 2, 3)
STEP_NAMES = {-1: "start-up", 0: "step 1", 1: "step 2", 2: "step 3", 3: "after the last step"}
SECTIONS = {"start-up, before the first step": -1, "the first step": 0,
            "every collective of a steady step": 1}


def load_trace_steps(folder, rank, world):
    """{step: [call, ...]} of one rank's trace (and its other calls) in the folder."""
    steps = {s: [] for s in STEPS}
    for name, other in ((f"trace_rank{rank}.jsonl", False), (f"other_rank{rank}.jsonl", True)):
        path = os.path.join(folder, name)
        if other and not os.path.exists(path):
            continue
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                    step = int(r["step"])
                    if other:
                        call = (r["phase"], int(r["micro"]), r["call"], "-", 0, -1, "world")
                    else:
                        size, stride = r.get("group", [world, 1])
                        call = (r["phase"], int(r["micro"]), r["op"], r["dtype"],
                                int(r["count"]), int(r["root"]),
                                expected_calls.group_word(int(size), int(stride), world))
                except (ValueError, KeyError) as e:
                    raise InputError(f"{path}:{number}: expected a JSON call record ({e})")
                if step not in steps:
                    raise InputError(f"{path}:{number}: step {step}, expected one of {STEPS}")
                steps[step].append(call)
    return steps


def planned_steps(spec, zerotrain, sets=()):
    """{step: [call, ...]} for steps -1..3 from `zerotrain plan --calls`."""
    output = expected_calls.plan_output(spec, zerotrain, sets)
    sections, current = {}, None
    for line in output.splitlines():
        title = next((s for t, s in SECTIONS.items() if line.startswith(t)), None)
        if title is not None:
            current = sections.setdefault(title, [])
            continue
        if current is None:
            continue
        if not line.strip():
            current = None
            continue
        w = line.split()
        if w[0] == "phase":
            continue
        size, stride = (spec["world"], 1) if w[6] == "world" else map(int, w[6].split("/"))
        current.append((w[0], int(w[1]), w[2], w[3], int(w[4]), int(w[5]),
                        expected_calls.group_word(size, stride, spec["world"])))
    missing = [t for t, s in SECTIONS.items() if s not in sections]
    if missing:
        raise InputError(f"plan --calls printed no section {missing[0]!r}")
    return {-1: sections[-1], 0: sections[0], 1: sections[1], 2: sections[1], 3: []}


def read_expected_steps(path):
    """(spec, {step: {rank: [call, ...]}}) of an expected_releases file: expected_calls.py's
    format, whose "trace_step N" lines start each traced step's blocks; a file without them
    holds the steady step (1) only."""
    return expected_calls.read_expected_steps(path, steps=STEPS, single_step=1)


def step_lines(step, per_rank):
    """The lines of one step in the expected_releases format: ranks with the same calls share
    a block (an empty step: one block of no calls)."""
    lines, done = [f"trace_step {step}"], set()
    for r, calls in sorted(per_rank.items()):
        if r in done:
            continue
        same = [q for q in sorted(per_rank) if per_rank[q] == calls]
        done.update(same)
        lines.append("ranks " + " ".join(map(str, same)))
        lines += [expected_calls.call_line(c, n) for c, n in expected_calls.fold(calls)]
    return lines
