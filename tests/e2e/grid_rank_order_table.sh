#!/usr/bin/env bash
# End to end: scripts/grid_rank_order_table.py, the table of
# scripts/grid_rank_order.sh, on a system of 1 node x 2 ranks (plain mpirun,
# its cluster described through ZT_CLUSTER, no network namespaces). Compute
# emulated: t1's prediction comes from the system's whole-world commbench
# curves and names them; the T = 2 grid's from its tensor group's curves.
# Real compute: every prediction takes t1's first sitting as its compute
# (report --compute-from), the grid's included. A system without curves
# falls back to the link rule. About 30 s.
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/support/e2e_lib.sh"
write_one_node_cluster "$WORK/cluster.json"
export ZT_CLUSTER=$WORK/cluster.json
run() {  # DIR CASE_SETTINGS...: one sitting of a case
  local dir=$1
  shift
  mkdir -p "$(dirname "$dir")"
  mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$dir" "${SMALL[@]}" --set train.steps=3 \
    --set zero.stage=1 "$@" >"$dir.log" 2>&1 || fail "$dir exited $?: $(tail -3 "$dir.log")"
}
EMU=(--set system.compute=emulate --set system.emulate_micro_step_ms=5 --set system.emulate_optimizer_ms=1)
for sitting in 1 2; do
  run "$WORK/emu/1x2/t1/sitting$sitting" "${EMU[@]}"
  run "$WORK/emu/1x2/t2-tensor-inner/sitting$sitting" "${EMU[@]}" --set parallel.tensor=2
done
run "$WORK/real/1x2/t1/sitting1"
run "$WORK/real/1x2/t2-tensor-inner/sitting1" --set parallel.tensor=2
for sys in emu real; do
  mpirun -np 2 "$ZT_BIN" commbench --primitives all_reduce,all_gather --max-bytes 1M --iters 2 \
    --warmup 1 --out "$WORK/$sys/1x2/commbench.json" >/dev/null 2>&1 || fail "commbench exited $?"
  mpirun -np 2 "$ZT_BIN" commbench --primitives all_reduce,all_gather --group-size 2 --max-bytes 1M \
    --iters 2 --warmup 1 --out "$WORK/$sys/1x2/tensor-curves-t2.json" >/dev/null 2>&1 ||
    fail "commbench --group-size 2 exited $?"
done
cp -r "$WORK/emu" "$WORK/bare" && rm "$WORK"/bare/1x2/*.json

table() {  # DIR: the table's rows, one per line
  /usr/bin/python3 scripts/grid_rank_order_table.py "$1" 100mbit tensor "$ZT_BIN" >"$1.table" 2>&1 ||
    fail "the table of $1 exited $?: $(tail -3 "$1.table")"
}
table "$WORK/emu"
table "$WORK/real"
table "$WORK/bare"
/usr/bin/python3 - "$WORK" <<'PY' || fail "the tables are not what they should be"
import os, re, sys
work = sys.argv[1]
def rows(name):
    text = open(os.path.join(work, name + ".table")).read()
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 4 and cells[0] == "1x2":
            out[cells[1]] = cells
    return text, out
emu_text, emu = rows("emu")
assert sorted(emu) == ["t1", "t2-tensor-inner"], emu
for case, cells in emu.items():
    assert cells[3].startswith("2 ("), cells  # two sittings
    assert re.fullmatch(r"[\d.]+ \([\d.]+\)", cells[4]), cells  # a prediction and its ratio
assert "Compute emulated: 5 ms" in emu_text and "commbench.json" in emu_text, emu_text
assert emu["t1"][9] == "1.00x", emu["t1"]
real_text, real = rows("real")
assert "compute from each system's t1/sitting1" in real_text, real_text
assert all(re.fullmatch(r"[\d.]+ \([\d.]+\)", c[4]) for c in real.values()), real
assert "Curves of 1x2: commbench.json, tensor-curves-t2.json" in emu_text, emu_text
# Without the system's curves: t1 on the cluster's link figures, the grid's
# tensor calls by the link rule, both still predicted.
bare_text, bare = rows("bare")
assert all(re.fullmatch(r"[\d.]+ \([\d.]+\)", c[4]) for c in bare.values()), bare
assert "Curves of 1x2: none (every call by the cluster's link figures)" in bare_text, bare_text
PY
echo "PASS grid_rank_order_table"
