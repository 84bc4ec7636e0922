#!/usr/bin/env bash
# Every test label that README.md names selects at least one test in a build tree.
#
#   scripts/check_labels.sh README.md BUILD_DIR [OPTIONAL_LABEL...]
#
# The labels are those after "-L" in README's commands and those in backquotes on its
# "Test labels:" paragraph. OPTIONAL_LABELs may select nothing in this configuration (CMake
# passes, e.g., "exercise" when CUDA_STREAMS_EXERCISES is OFF); they are reported, not failed.
# Exits 0 when every other label selects a test, 1 when one selects none.
set -euo pipefail
readme=$1
build=$2
shift 2
optional=" $* "

labels=$(
  {
    grep -oE -- '-L [A-Za-z0-9_]+' "$readme" | sed 's/^-L //'
    awk '/^Test labels:/ { on = 1 } on && /^$/ { on = 0 } on' "$readme" | grep -oE '`[a-z0-9_]+`' | tr -d '`'
  } | sort -u
)
if [ -z "$labels" ]; then
  echo "FAIL: no test labels found in $readme"
  exit 1
fi

status=0
for label in $labels; do
  count=$(ctest --test-dir "$build" -N -L "^${label}\$" | sed -n 's/^Total Tests: //p')
  count=${count:-0}
  if [ "$count" -gt 0 ]; then
    echo "ok: -L $label selects $count tests"
  elif [[ "$optional" == *" $label "* ]]; then
    echo "note: -L $label selects no test in this configuration (allowed here)"
  else
    echo "FAIL: README names the label '$label', but 'ctest -L $label' selects no test"
    status=1
  fi
done
exit $status
