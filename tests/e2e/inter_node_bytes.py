"""Checks a run's counted inter-node bus bytes against `zerotrain plan`'s.

    zerotrain plan ... | python3 inter_node_bytes.py RUN/summary.json

For the configured variant (the plan row marked '*'), every primitive's
inter-node bus bytes per step must equal the run's (summary.json's
comm.per_step, the mean over the ranks) to within the plan's rounding.
Prints "PRIMITIVE BYTES" per primitive; exits non-zero with the difference.
"""
import json
import sys

summary = json.load(open(sys.argv[1]))["comm"]["per_step"]
rows, mine = {}, False
for line in sys.stdin:
    if "|" not in line:
        continue
    left, right = line.split("|", 1)
    if left.startswith("*"):
        mine = True
    elif left.strip():
        mine = False
    if mine and "(first step)" not in right:
        fields = right.split()
        rows[fields[0]] = float(fields[4])
if not rows:
    sys.exit("no configured row in the plan")
for prim, planned in rows.items():
    counted = summary[prim]["inter_node_bus_bytes"]
    if abs(counted - planned) > 0.5:
        sys.exit(f"{prim}: the run counted {counted}, the plan says {planned}")
    print(f"{prim} {planned:.0f}")
