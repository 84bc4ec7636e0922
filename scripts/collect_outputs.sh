#!/usr/bin/env bash
# Runs every built chapter with its default flags and stores what it printed, its Chrome trace
# and its SVG timeline in a folder, for pasting into the lessons and the documentation.
#
#   scripts/collect_outputs.sh [--settings] OUTDIR [BUILD_DIR]    (BUILD_DIR defaults to build)
#
# --settings also runs each program under CUDA_LAUNCH_BLOCKING=1 and under
# CUDA_DEVICE_MAX_CONNECTIONS=1, into OUTDIR/settings/NAME.LAUNCH_BLOCKING.txt and
# NAME.DEVICE_MAX_CONNECTIONS.txt, each opening with the command as the lessons show it
# (`$ CUDA_LAUNCH_BLOCKING=1 build/bin/NAME`): what the lessons' sections on those settings show.
set -uo pipefail
settings=0
usage="usage: $0 [--settings] OUTDIR [BUILD_DIR]"
if [ "${1:-}" = --settings ]; then settings=1; shift; fi
case ${1:-} in
  -h | --help) echo "$usage"; exit 0 ;;
  -*) echo "$usage (unknown option '$1')" >&2; exit 2 ;;
esac
out=${1:?"$usage"}
build=${2:-build}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The default runs run with neither setting, whatever the caller's shell has exported (as the
# tests do); each setting's run with that one alone.
clean_env=(env -u CUDA_LAUNCH_BLOCKING -u CUDA_DEVICE_MAX_CONNECTIONS -u CUDA_STREAMS_CONTROL)
mkdir -p "$out"
[ "$settings" = 1 ] && mkdir -p "$out/settings"
for dir in "$root"/chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  for program in "$build/bin/$name" "$build/bin/${name}"_*; do
    [ -x "$program" ] || continue
    exe=$(basename "$program")
    # A second executable counts only where the lesson runs it (02's per-thread build does;
    # 13's sm75 build is a test's fixture, compiled for the wrong device on purpose).
    if [ "$exe" != "$name" ] && ! grep -qE "build/bin/$exe([^A-Za-z0-9_]|\$)" "$dir/README.md"; then
      continue
    fi
    "${clean_env[@]}" "$program" --trace "$out/$exe.trace.json" --svg "$out/$exe.svg" \
      >"$out/$exe.txt" 2>&1
    echo "$exe: exit $?" | tee -a "$out/exit_codes.txt"
    [ "$settings" = 1 ] || continue
    for setting in CUDA_LAUNCH_BLOCKING=1 CUDA_DEVICE_MAX_CONNECTIONS=1; do
      variable=${setting%=*}
      file="$out/settings/$exe.${variable#CUDA_}.txt"
      { echo "\$ $setting build/bin/$exe"; "${clean_env[@]}" "$setting" "$program"; } >"$file" 2>&1
      echo "$setting $exe: exit $?" | tee -a "$out/exit_codes.txt"
    done
  done
done
