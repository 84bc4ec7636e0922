#!/usr/bin/env bash
# Runs a program and checks its exit status and output; used by every chapter test.
#
#   expect.sh --exit CODE [--match REGEX]... [--no-match REGEX]... -- PROGRAM [ARGS...]
#
# Passes (0) when PROGRAM exits with CODE, its output (stdout and stderr
# together) matches every --match extended regex and none of the --no-match
# ones. When PROGRAM exits 77 (it printed SKIP: and cannot run here) this exits
# 77 too, which CTest reports as skipped. Otherwise it says what was wrong and
# exits 1.
set -u
expected_exit=0
matches=()
no_matches=()
while [ $# -gt 0 ]; do
  case "$1" in
    --exit) expected_exit="$2"; shift 2 ;;
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

output_file=$(mktemp)
trap 'rm -f "$output_file"' EXIT
"$@" >"$output_file" 2>&1
status=$?
cat "$output_file"

if [ "$status" -eq 77 ] && [ "$expected_exit" -ne 77 ]; then
  exit 77
fi
failed=0
if [ "$status" -ne "$expected_exit" ]; then
  echo "expect.sh: FAIL: exit status $status, expected $expected_exit"
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
