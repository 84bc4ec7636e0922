#!/usr/bin/env bash
# Runs a chapter program under compute-sanitizer; used by the sanitizer tests.
#
#   sanitize.sh SANITIZER [TOOL ARGS...] -- PROGRAM [ARGS...]
#
# With CUDA_VISIBLE_DEVICES set but empty (no device visible), compute-sanitizer was seen to run
# the program on the GPU all the same; the program then runs without the tool, sees no device,
# says SKIP and exits 77, as it would alone.
set -u
tool=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  tool+=("$1")
  shift
done
shift
if [ "${CUDA_VISIBLE_DEVICES+set}" = set ] && [ -z "${CUDA_VISIBLE_DEVICES}" ]; then
  exec "$@"
fi
exec "${tool[@]}" "$@"
