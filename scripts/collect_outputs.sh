#!/usr/bin/env bash
# Runs every built chapter with its default flags and stores what it printed, its Chrome trace
# and its SVG timeline in a folder, for pasting into the lessons and the documentation.
#
#   scripts/collect_outputs.sh OUTDIR [BUILD_DIR]      (BUILD_DIR defaults to build)
set -uo pipefail
out=${1:?"usage: $0 OUTDIR [BUILD_DIR]"}
build=${2:-build}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
for dir in "$root"/chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  for program in "$build/bin/$name" "$build/bin/${name}"_*; do
    [ -x "$program" ] || continue
    exe=$(basename "$program")
    "$program" --trace "$out/$exe.trace.json" --svg "$out/$exe.svg" >"$out/$exe.txt" 2>&1
    echo "$exe: exit $?" | tee -a "$out/exit_codes.txt"
  done
done
