#!/usr/bin/env bash
# tools/refresh_ladder.sh --device cuda|cpu: the ladder tables the op READMEs (ops/<op>/README.md)
# quote, made again, into the folder they cite.
#
#   tools/refresh_ladder.sh --device cuda   # on the H200 -> docs/h200-runs/ladder/
#   tools/refresh_ladder.sh --device cpu    # anywhere    -> docs/cpu-runs/ladder/
#
# Options: --build DIR (build/dev: ts_ladder built), --out DIR (the folder above). Each table is
# `ts_ladder ... --json NAME.jsonl` printed into NAME.txt; the folder's README.md says what each is.
# The folder is emptied first (README.md stays). Exit status 0 when every rung of every table
# matched its reference (ts_ladder's own exit status).
set -u
cd "$(dirname "$0")/.."
source tools/refresh_common.sh
refresh_options refresh_ladder.sh ladder "$@"
require_built "$build/ts_ladder"
find "$out" -maxdepth 1 -type f -not -name README.md -delete 2>/dev/null
mkdir -p "$out"
ladder() {  # ladder NAME ARGS...: one table, NAME.txt and NAME.jsonl
  local name=$1
  shift
  {
    echo "\$ ts_ladder $* --json $name.jsonl"
    "$build/ts_ladder" "$@" --json "$out/$name.jsonl" 2>&1
  } >"$out/$name.txt"
  local status=$?
  printf '%-4s %s\n' "$status" "$name"
  [[ $status == 0 ]] || failed=$((failed + 1))
}
if [[ $dev == cuda ]]; then
  ladder ladder_all_cuda --all --device cuda
  ladder ladder_mm_8192 --op mm --shape 8192,8192,8192
  ladder ladder_mm_4096 --op mm --shape 4096,4096,4096
  # The rungs under tutorial 04's naive paths, at its scores' size: [B*H*S, L] rows of 1024.
  ladder ladder_softmax_65536x1024 --op softmax --shape 65536,1024
  ladder ladder__safe_softmax_65536x1024 --op _safe_softmax --shape 65536,1024
  ladder ladder_masked_fill__64x1024x1024 --op masked_fill_ --shape 64,1024,1024
else
  ladder ladder_all_cpu --all --device cpu
  ladder ladder_mm_cpu --op mm --device cpu
  ladder ladder_add_cpu --op add --device cpu
fi
echo "refresh_ladder.sh: $failed table(s) with a failing rung; outputs in $out"
exit $((failed > 0))
