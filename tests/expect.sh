#!/usr/bin/env bash
# Runs a program and checks its exit status and output; used by every chapter test.
#
#   expect.sh [--exit CODE]... [--match REGEX]... [--no-match REGEX]... -- PROGRAM [ARGS...]
#
# Passes (0) when PROGRAM exits with one of the CODEs (default 0), its output (stdout and stderr
# together) matches every --match extended regex and none of the --no-match ones.
#
# When PROGRAM exits 77 (it printed "SKIP: <reason>" and cannot run here) and 77 is not an
# expected code, this exits 77 too, which CTest reports as skipped. A GPU runner can make such a
# skip a failure: with CUDA_STREAMS_STRICT=1 a skip passes only when its reason matches the
# extended regex in CUDA_STREAMS_ALLOWED_SKIPS (what the runner declared it cannot do, for
# example "needs 2 devices"); any other skip fails, naming its reason. Otherwise it says what was
# wrong and exits 1.
set -u
expected_exits=()
matches=()
no_matches=()
while [ $# -gt 0 ]; do
  case "$1" in
    --exit) expected_exits+=("$2"); shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --no-match) no_matches+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "expect.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "expect.sh: no program given" >&2
  exit 1
fi
[ ${#expected_exits[@]} -gt 0 ] || expected_exits=(0)

output_file=$(mktemp)
trap 'rm -f "$output_file"' EXIT
"$@" >"$output_file" 2>&1
status=$?
cat "$output_file"

expected=0
for code in "${expected_exits[@]}"; do
  [ "$status" -eq "$code" ] && expected=1
done

# A test may list 77 among its codes (a bug that a setting may hide); a program that found no
# device at all still skips, here as anywhere.
no_device=0
grep -Eq '^SKIP: no (usable )?CUDA device' "$output_file" && no_device=1
if [ "$status" -eq 77 ] && { [ "$expected" -eq 0 ] || [ "$no_device" -eq 1 ]; }; then
  reason=$(grep -m1 -E '^SKIP: ' "$output_file" | sed 's/^SKIP: //')
  [ -n "$reason" ] || reason="exit status 77 without a SKIP: line"
  if [ "${CUDA_STREAMS_STRICT:-0}" != "0" ] && [ -n "${CUDA_STREAMS_STRICT:-}" ]; then
    allowed=${CUDA_STREAMS_ALLOWED_SKIPS:-}
    if [ -n "$allowed" ] && printf '%s\n' "$reason" | grep -Eq -- "$allowed"; then
      echo "expect.sh: skipped, as this runner declared it may (CUDA_STREAMS_ALLOWED_SKIPS): $reason"
      exit 77
    fi
    echo "expect.sh: FAIL: skipped under CUDA_STREAMS_STRICT=1, and this runner did not declare" \
         "the reason (CUDA_STREAMS_ALLOWED_SKIPS='$allowed'): $reason"
    exit 1
  fi
  exit 77
fi
failed=0
if [ "$expected" -eq 0 ]; then
  echo "expect.sh: FAIL: exit status $status, expected ${expected_exits[*]}"
  failed=1
fi
for regex in ${matches[@]+"${matches[@]}"}; do
  if ! grep -Eq -- "$regex" "$output_file"; then
    echo "expect.sh: FAIL: output does not match: $regex"
    failed=1
  fi
done
for regex in ${no_matches[@]+"${no_matches[@]}"}; do
  if grep -Eq -- "$regex" "$output_file"; then
    echo "expect.sh: FAIL: output matches what it must not: $regex"
    failed=1
  fi
done
exit "$failed"
