#!/usr/bin/env bash
# Builds the chapters if needed and runs each of them in order, then prints a summary table.
#
#   scripts/run_chapters.sh [REGEX]     # only the chapters whose folder names match REGEX
#
# Uses the "default" preset's build folder (build/). Each chapter's own output is shown under a
# header; the table at the end gives each chapter's result and time, "PASS (N skipped)" where a
# chapter passed with checks or parts that could not run here, and below it what skipped and why.
# Exit status 0 when every chapter that ran passed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
filter=${1:-.}
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null 2>&1; then
  export CMAKE_GENERATOR=Ninja
fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake --preset default >/dev/null || { echo "configure failed: run 'cmake --preset default'"; exit 1; }
fi
echo "Building the chapters (cmake --build --preset default)..."
if ! cmake --build --preset default --parallel "$(nproc)" >build/run_chapters_build.log 2>&1; then
  cat build/run_chapters_build.log
  echo "build failed"
  exit 1
fi

chapters=()
for dir in chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  [[ "$name" =~ $filter ]] && chapters+=("$name")
done
if [ ${#chapters[@]} -eq 0 ]; then
  echo "no chapter matches '$filter'"
  exit 2
fi

results=()
seconds=()
skipped_lines=()
no_gpu_reason=""
failures=0
for name in "${chapters[@]}"; do
  program=build/bin/$name
  if [ ! -x "$program" ]; then
    results+=("not built"); seconds+=("-")
    continue
  fi
  if [ -n "$no_gpu_reason" ]; then
    results+=("skipped"); seconds+=("-")
    continue
  fi
  start=$(date +%s.%N)
  output=$("$program" 2>&1)
  status=$?
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  skip_reason=$(printf '%s\n' "$output" | sed -n 's/^SKIP: //p' | head -n 1)
  if [ $status -eq 77 ] && [[ "$skip_reason" == "no usable CUDA device"* || "$skip_reason" == "no CUDA device"* ]]; then
    # No GPU (or no driver): say it once, and do not try the other chapters.
    no_gpu_reason=$skip_reason
    results+=("skipped"); seconds+=("-")
    continue
  fi
  printf '\n==================== %s ====================\n%s\n' "$name" "$output"
  # What passed without being proven here: skipped checks and parts, each with its reason.
  skips=$(printf '%s\n' "$output" | grep -E '^(CHECK [^:]+: skipped \(|SKIP: )' || true)
  skip_count=0
  if [ -n "$skips" ]; then
    skip_count=$(printf '%s\n' "$skips" | wc -l)
    while IFS= read -r line; do skipped_lines+=("$name: $line"); done <<<"$skips"
  fi
  case $status in
    0) if [ "$skip_count" -gt 0 ]; then results+=("PASS ($skip_count skipped)"); else results+=("PASS"); fi ;;
    77) results+=("skipped") ;; # this device or driver lacks what the chapter needs; it said why
    1) results+=("FAIL"); failures=$((failures + 1)) ;;
    *) results+=("exit $status"); failures=$((failures + 1)) ;;
  esac
  seconds+=("$elapsed")
done

echo
if [ -n "$no_gpu_reason" ]; then
  echo "This machine cannot run the chapters: $no_gpu_reason."
  echo "They were built; run them on a machine with an NVIDIA GPU and driver."
  echo
fi
printf '%-32s %-18s %8s\n' "chapter" "result" "seconds"
printf '%-32s %-18s %8s\n' "-------" "------" "-------"
for i in "${!chapters[@]}"; do
  printf '%-32s %-18s %8s\n' "${chapters[$i]}" "${results[$i]}" "${seconds[$i]}"
done
if [ ${#skipped_lines[@]} -gt 0 ]; then
  echo
  echo "Skipped here, and why:"
  printf '  %s\n' "${skipped_lines[@]}"
fi
exit $((failures > 0))
