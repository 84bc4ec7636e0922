#!/usr/bin/env bash
# Builds one chapter without CMake, with the plain nvcc line that each CUDA program's header gives
# (not chapter 14, which adds its libraries, nor chapter 11, a libtorch program), from the root;
# runs the result with --help and, where a GPU is visible, runs it whole with --no-timing (so a
# build that lacks the device code a chapter teaches fails).
#
#   scripts/nvcc_one_chapter.sh [NN_topic]     (default: 01_launch_config)
#
# Exits 0 when the program builds, answers --help, and passes or skips for want of a device;
# 1 when not; 77 (skipped) without nvcc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
chapter=${1:-01_launch_config}
source=chapters/$chapter/${chapter#[0-9][0-9]_}.cu
command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
if ! command -v nvcc >/dev/null 2>&1; then
  echo "SKIP: nvcc is not installed"
  exit 77
fi
if [ ! -f "$source" ]; then
  echo "FAIL: no $source"
  exit 1
fi
# The header's nvcc line is the command built below, as a reader copies it: only its output goes
# elsewhere. Its words (-std, -arch=native, the sources) are checked for every chapter by
# scripts/check_layout.sh (the repo.chapter_layout test); here it must name its output.
line=$(grep -m1 -E '^//[[:space:]]+nvcc ' "$source" | sed -E 's#^//[[:space:]]+##' || true)
build=${line% -o "$chapter"}
if [ -z "$line" ] || [ "$build" = "$line" ]; then
  echo "FAIL: $source has no nvcc line ending in '-o $chapter': '$line'"
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "$line"
# The same words, split and globbed by the shell as a reader's would be; only the output moves.
# shellcheck disable=SC2086
if ! $build -o "$out/$chapter" 2>"$out/log"; then
  cat "$out/log"
  echo "FAIL: the nvcc line did not build $chapter"
  exit 1
fi
# -arch=native on a machine without a GPU warns that it used the default; that is expected here.
warnings=$(grep -v "Cannot find valid GPU for '-arch=native'" "$out/log" | grep -c "warning" || true)
if [ "$warnings" -gt 0 ]; then
  echo "note: nvcc printed $warnings warning lines; the first:"
  head -n 20 "$out/log"
fi
if ! "$out/$chapter" --help >"$out/help" 2>&1; then
  cat "$out/help"
  echo "FAIL: $chapter --help did not exit 0"
  exit 1
fi
echo "ok: $chapter built with plain nvcc and answered --help"
set +e
"$out/$chapter" --no-timing >"$out/run" 2>&1
status=$?
set -e
case $status in
  0) echo "ok: $chapter --no-timing passed on this machine's GPU" ;;
  77) echo "ok: $chapter --no-timing could not run here: $(sed -n 's/^SKIP: //p' "$out/run" | head -n 1)" ;;
  *) cat "$out/run"; echo "FAIL: $chapter --no-timing exited $status"; exit 1 ;;
esac
