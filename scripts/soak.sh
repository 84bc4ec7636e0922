#!/usr/bin/env bash
# Runs the test presets again and again in strict mode and prints one line per run: the way to
# show that a GPU runner's suite does not flake. In strict mode a skip fails unless its reason is
# allowed (by default only a part that needs more devices than the machine has).
#
#   scripts/soak.sh [--default N] [--timing N] [--sanitize N] [--logs DIR]
#
# Run it after `cmake --preset default && cmake --build --preset default` (for --sanitize, where
# compute-sanitizer is installed). In this order: --default N runs `ctest --preset default` N
# times, --timing N `ctest --preset default -L timing` N times (the timing tests alone), and
# --sanitize N `ctest --preset sanitize` N times. Each run's output goes to DIR (build/soak by
# default); below a failed run's line, its failing tests, CHECK lines and expect.sh verdicts.
# Exit status: 0 when every run passed, 1 when one failed, 2 on bad arguments. The allowed skips
# are the gpu-ci preset's; CUDA_STREAMS_ALLOWED_SKIPS, if set, replaces them (set and empty: none
# is allowed).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage_error() { echo "soak.sh: error: $1" >&2; exit 2; }
declare -A runs=([default]=0 [timing]=0 [sanitize]=0)
logs=$root/build/soak
while [ $# -gt 0 ]; do
  case $1 in
    --default | --timing | --sanitize)
      [ $# -ge 2 ] || usage_error "$1 needs a value"
      [[ $2 =~ ^[1-9][0-9]{0,2}$|^1000$ ]] ||
        usage_error "$1 expects a whole number from 1 to 1000, got '$2'"
      runs[${1#--}]=$2
      shift 2 ;;
    --logs)
      [ $# -ge 2 ] && [ -n "$2" ] || usage_error "--logs needs a folder"
      logs=$2
      shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[ $((runs[default] + runs[timing] + runs[sanitize])) -gt 0 ] ||
  usage_error "give --default N, --timing N or --sanitize N"
mkdir -p "$logs" || usage_error "--logs $logs: cannot make this folder"
logs=$(cd "$logs" && pwd)  # a relative --logs is the caller's; ctest runs from the root
cd "$root"
export CUDA_STREAMS_STRICT=1
# By default, what the gpu-ci preset allows (written there once).
gpu_ci_allowed() {
  python3 -c 'import json, sys
presets = json.load(open(sys.argv[1]))["testPresets"]
print(next(p for p in presets if p["name"] == "gpu-ci")["environment"]["CUDA_STREAMS_ALLOWED_SKIPS"])' \
    "$root/CMakePresets.json"
}
if [ -z "${CUDA_STREAMS_ALLOWED_SKIPS+set}" ]; then
  CUDA_STREAMS_ALLOWED_SKIPS=$(gpu_ci_allowed) || usage_error "no allowed skips in CMakePresets.json's gpu-ci"
fi
export CUDA_STREAMS_ALLOWED_SKIPS
echo "strict mode; allowed skips: '$CUDA_STREAMS_ALLOWED_SKIPS'; logs in $logs"
failed=0
soak() {  # name, count, ctest arguments...
  local name=$1 count=$2
  shift 2
  for ((i = 1; i <= count; ++i)); do
    local log="$logs/$name.$i.log" begin end status
    begin=$(date +%s.%N)
    ctest "$@" >"$log" 2>&1
    status=$?
    end=$(date +%s.%N)
    printf '%-8s %3d of %-3d %7.1f s  %s\n' "$name" "$i" "$count" "$(awk "BEGIN { print $end - $begin }")" \
      "$(grep -E 'tests passed|No tests were found' "$log" | tail -1)"
    if [ "$status" != 0 ]; then
      failed=1
      sed -n '/The following tests FAILED/,$p' "$log" | grep -E '^\s+[0-9]+ - ' | head -20
      # and what failed in them (a check, or a skip that strict mode does not allow), so that a
      # flake's cause shows without opening the log
      grep -E '^(CHECK .* FAIL|expect\.sh: FAIL: .*)$' "$log" | head -10 | sed 's/^/    /'
    fi
  done
}
soak default "${runs[default]}" --preset default
soak timing "${runs[timing]}" --preset default -L timing
soak sanitize "${runs[sanitize]}" --preset sanitize
exit "$failed"
