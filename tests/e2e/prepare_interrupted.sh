# prepare stopped by a signal (SIGINT, then SIGTERM with the GPT-2 tokenizer's
# threads): exit 128 + the signal, one line saying so, and neither --out nor
# its hidden temporary directory left behind. The signal goes once that
# directory exists (the work has started; a signal during MPI's start-up is
# MPI's); the 120 MB input takes this machine about 2 s. About 5 s.
. "$(dirname "$0")/../support/e2e_lib.sh"
yes "In the beginning God created the heaven and the earth." | head -c 120000000 >"$WORK/big.txt"
interrupt() {  # signal tokenizer
  local sig=$1 tok=$2 out="$WORK/out_$2" pid rc err
  "$ZT_BIN" prepare --input "$WORK/big.txt" --out "$out" --tokenizer "$tok" \
    >/dev/null 2>"$WORK/err_$tok" &
  pid=$!
  for _ in $(seq 1 1000); do
    compgen -G "$WORK/.out_$tok.tmp.*" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -0 "$pid" 2>/dev/null || fail "$tok: prepare ended before the signal; the input is too small for this machine"
  kill "-$sig" "$pid"
  wait "$pid"; rc=$?
  err=$(grep -v '^prepare: ' "$WORK/err_$tok")  # the progress lines of the gpt2 path
  case $sig in INT) want=130 ;; TERM) want=143 ;; esac
  [ "$rc" -eq "$want" ] || fail "$tok, SIG$sig: exit $rc (expected $want): $err"
  [ "$err" = "zerotrain: prepare: interrupted by SIG$sig; $out was not written" ] ||
    fail "$tok, SIG$sig: said '$err'"
  [ -z "$(ls -A "$WORK" | grep "out_$tok")" ] || fail "$tok, SIG$sig: left $(ls -A "$WORK")"
}
interrupt INT byte
if [ -f "$(dirname "$ZT_BIN")/data/gpt2/gpt2.tiktoken" ]; then
  interrupt TERM gpt2
else
  echo "SKIPPED gpt2 part: no GPT-2 vocabulary next to $ZT_BIN"
fi
echo "PASS prepare_interrupted"
