"""Checks a run's counted inter-node bus bytes against `zerotrain plan`'s.

    zerotrain plan ... | python3 inter_node_bytes.py RUN/summary.json

For the configured variant (the plan row marked '*'), every primitive's
inter-node bus bytes per step must equal the run's (summary.json's
comm.per_step: the mean over the run's steps and ranks) to within the plan's
rounding. Where the plan lists a first step apart (stage 3 records its trace
there), the run's mean is (first + (n - 1) x steady) / n for its n steps.
Prints "PRIMITIVE BYTES" per primitive; exits non-zero with the difference.
"""
import json
import sys

summary = json.load(open(sys.argv[1]))
per_step = summary["comm"]["per_step"]
steps = summary["steps_this_run"]
steady, first, mine = {}, {}, False
for line in sys.stdin:
    if "|" not in line:
        continue
    left, right = line.split("|", 1)
    if left.startswith("*"):
        mine = True
    elif left.strip():
        mine = False
    if mine:
        fields = right.split()
        (first if "(first step)" in right else steady)[fields[0]] = float(fields[4])
if not steady and not first:
    sys.exit("no configured row in the plan")
for prim in sorted(set(steady) | set(first)):
    s = steady.get(prim, 0.0)
    planned = (first.get(prim, s) + (steps - 1) * s) / steps
    counted = per_step[prim]["inter_node_bus_bytes"]
    if abs(counted - planned) > 1.0:
        sys.exit(f"{prim}: the run counted {counted}, the plan says {planned}")
    print(f"{prim} {planned:.0f}")
