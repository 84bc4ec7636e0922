#!/usr/bin/env bash
# Builds one chapter without CMake, with the plain nvcc line that each program's header and
# lesson give, from the repository root, and runs the result with --help (no GPU needed).
#
#   scripts/nvcc_one_chapter.sh [NN_topic]     (default: 01_launch_config)
#
# Exits 0 when the program builds and answers --help, 1 when not, 77 (skipped) without nvcc.
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
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
line="nvcc -std=c++17 -Icommon/include $source common/src/*.cpp -o $out/$chapter"
echo "$line"
if ! nvcc -std=c++17 -Icommon/include "$source" common/src/*.cpp -o "$out/$chapter" 2>"$out/log"; then
  cat "$out/log"
  echo "FAIL: the nvcc line did not build $chapter"
  exit 1
fi
warnings=$(grep -c "warning" "$out/log" || true)
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
