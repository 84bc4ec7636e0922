#!/usr/bin/env bash
# Checks that every chapter folder has what a chapter must have: a program opening with its
# lesson comment and the plain nvcc line that builds it, a README.md lesson with a title, a
# one-line CMakeLists.txt, and tests.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
problems=0
say() { echo "$1"; problems=$((problems + 1)); }
count=0
for dir in "$root"/chapters/[0-9][0-9]_*/; do
  [ -d "$dir" ] || continue
  count=$((count + 1))
  name=$(basename "$dir")
  number=${name%%_*}
  compgen -G "$dir*.cu" >/dev/null || compgen -G "$dir*.cpp" >/dev/null || say "$name: no program (.cu)"
  for program in "$dir"*.cu "$dir"*.cpp; do
    [ -f "$program" ] || continue
    head -c 2 "$program" | grep -q '^/[/*]' || say "$name: $(basename "$program") does not open with its lesson comment"
  done
  [ -f "$dir/README.md" ] || say "$name: no README.md"
  [ -f "$dir/README.md" ] && ! head -n 1 "$dir/README.md" | grep -Eq "^# $number: .+\{#chapter_$number\}$" &&
    say "$name: README.md must start with '# $number: Title {#chapter_$number}'"
  if [ -f "$dir/CMakeLists.txt" ]; then
    lines=$(grep -cv '^\s*\(#.*\)\?$' "$dir/CMakeLists.txt")
    [ "$lines" -eq 1 ] || say "$name: CMakeLists.txt must be one call, has $lines lines"
  else
    say "$name: no CMakeLists.txt"
  fi
  [ -f "$root/tests/chapters/$name.cmake" ] || say "$name: no tests/chapters/$name.cmake"
  # The nvcc line a CUDA program's header gives is the one nvcc_one_chapter.sh builds (chapter 14
  # adds its libraries before -o; chapter 11 builds with CMake only).
  source=chapters/$name/${name#[0-9][0-9]_}.cu
  if [ -f "$root/$source" ]; then
    libraries=""
    [ "$number" = 14 ] && libraries=" -lcublas -lcurand -lcufft"
    line="nvcc -std=c++17 -arch=native -Icommon/include $source common/src/*.cpp$libraries -o $name"
    grep -qxF "//   $line" "$root/$source" || say "$name: its header's nvcc line is not '$line'"
  fi
  # CMake splits a string at each ';': in a MATCH pattern, "a; b" would become two patterns.
  if [ -f "$root/tests/chapters/$name.cmake" ] &&
    grep -nE '"[^"]*; [^"]*"' "$root/tests/chapters/$name.cmake" >/dev/null; then
    say "$name: a string in tests/chapters/$name.cmake holds '; ' (CMake splits it; match it with '.')"
  fi
done
[ "$count" -gt 0 ] || say "no chapters found"
if [ "$problems" -eq 0 ]; then
  echo "$count chapters, each with a program, a lesson, a one-line CMakeLists.txt and tests."
fi
exit $((problems > 0))
