# A rank that dies or throws takes the whole job down within 10 s, with a message.
. "$(dirname "$0")/../support/e2e_lib.sh"
for mode in exit throw; do
  start=$(date +%s)
  timeout 60 mpirun -np 3 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/$mode" "${SMALL[@]}" \
    --set train.steps=50 --set system.fault_inject=1:2:$mode >"$WORK/$mode.txt" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  [ "$rc" -ne 0 ] || fail "$mode: the job exited 0"
  [ "$rc" -ne 124 ] || fail "$mode: the job hung"
  [ "$took" -le 10 ] || fail "$mode: the job took $took s to end"
  grep -q "rank 1" "$WORK/$mode.txt" || fail "$mode: no message naming rank 1"
  echo "$mode: ended in $took s with exit $rc"
done
echo "PASS fault_injection"
