# tools/refresh_common.sh: what the refresh scripts of docs/ share (sourced, not run).
#
#   refresh_options NAME FOLDER "$@"   --device cuda|cpu, --build DIR (build/dev), --out DIR: sets dev,
#                                      build and out (docs/h200-runs/FOLDER or docs/cpu-runs/FOLDER)
#   require_built EXE...               exit 2, naming it, when one is not built
#   step TITLE, status NAME RC         a step's heading on the screen; its exit status, counted in failed
#   check_traces DIR FILE              ts_trace_check --steps 3 on every DIR/*.json into FILE, counted
refresh_name=""
dev=""
build=build/dev
out=""
failed=0
t0=$SECONDS

refresh_options() {
  refresh_name=$1
  local folder=$2
  shift 2
  while (($#)); do
    case $1 in
      --device) dev=$2; shift 2 ;;
      --build) build=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      *) echo "$refresh_name: unknown argument '$1' (see the header of tools/$refresh_name)" >&2; exit 2 ;;
    esac
  done
  case $dev in
    cuda) out=${out:-docs/h200-runs/$folder} ;;
    cpu) out=${out:-docs/cpu-runs/$folder} ;;
    *) echo "$refresh_name: --device cuda or --device cpu" >&2; exit 2 ;;
  esac
}

require_built() {
  for exe in "$@"; do
    [[ -x $exe ]] || { echo "$refresh_name: $exe not built" >&2; exit 2; }
  done
}

step() { echo; echo "== $1 (t = $((SECONDS - t0)) s)"; }

status() {
  echo "$1 rc=$2"
  [[ $2 == 0 ]] || failed=$((failed + 1))
}

check_traces() {
  local dir=$1 file=$2 json
  for json in "$dir"/*.json; do
    echo "-- $(basename "$json")"
    "$build/ts_trace_check" "$json" --steps 3 2>&1 | tail -3
    [[ ${PIPESTATUS[0]} == 0 ]] || failed=$((failed + 1))
  done >"$file"
  echo "$(grep -c '^-- ' "$file") traces checked"
}
