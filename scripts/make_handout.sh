#!/usr/bin/env bash
# Writes the students' handout of this repository: every chapter, every exercise as given, their
# tests (tests/exercises/, with what each exercise as given must fail), common/, cmake/, docs/ and
# the scripts that build and test; no solution, and nothing that would generate one into a build.
#
#   scripts/make_handout.sh DIR            the handout (DIR must be new or empty)
#   scripts/make_handout.sh --solved DIR   the same tree with every exercise solved: what the
#                                          grader must give full marks (never hand this one out)
#
# Left out: solutions/ (the instructor's fixes), scripts/make_handout.sh, scripts/grade.sh,
# tests/grading/ (the tests of this kit) and .github/workflows/grade-example.yml. The files are
# those git tracks plus new ones it does not ignore (every file but build trees outside git).
# The handout is checked with tests/grading/check_no_solution.py: no solution file's marker, no
# exercise other than as given, no fix's text outside the lessons that teach it.
#
# In the handout:  cmake --preset exercises && cmake --build --preset exercises &&
#                  ctest --preset exercises      (every exercise test fails as given, on a GPU)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() {
  echo "usage: scripts/make_handout.sh [--solved] DIR" >&2
  exit 2
}
solved=0
if [ "${1:-}" = "--solved" ]; then
  solved=1
  shift
fi
[ $# -eq 1 ] && [ -n "$1" ] || usage
case "$1" in -*) usage ;; esac
if [ -e "$1" ] && [ -n "$(ls -A "$1" 2>/dev/null)" ]; then
  echo "make_handout.sh: $1 exists and is not empty" >&2
  exit 2
fi
mkdir -p "$1"
dest=$(cd "$1" && pwd)

# The instructor's files, relative to the root.
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -d '' files < <(git ls-files -z --cached --others --exclude-standard)
else
  mapfile -d '' files < <(find . -path ./.git -prune -o -path './build*' -prune -o -type f -print0 |
    sed -z 's|^\./||')
fi
copied=0
for file in "${files[@]}"; do
  case "$file" in
    solutions/* | tests/grading/* | scripts/grade.sh | scripts/make_handout.sh | \
      .github/workflows/grade-example.yml | build/* | build-*/*) continue ;;
  esac
  [ -f "$file" ] || continue # tracked but deleted in this tree
  case "$root/$file/" in "$dest"/*) continue ;; esac  # a handout written inside this tree
  mkdir -p "$dest/$(dirname "$file")"
  cp -p "$file" "$dest/$file"
  copied=$((copied + 1))
done

if [ "$solved" -eq 1 ]; then
  count=0
  for solution in "$root"/solutions/[0-9][0-9]_*.cmake; do
    chapter=$(basename "$solution" .cmake)
    for exercise in "$dest/chapters/$chapter"/exercise.cu "$dest/chapters/$chapter"/exercise.py; do
      [ -f "$exercise" ] || continue
      cmake -DSOLUTION="$solution" -DEXERCISE_SOURCE="$exercise" -DOUTPUT="$exercise" \
        -P "$root/solutions/apply.cmake"
      count=$((count + 1))
    done
  done
  echo "Solved tree written to $dest: $copied files, $count exercises solved. Do not hand it out."
  exit 0
fi

if command -v python3 >/dev/null 2>&1 && [ -f "$root/tests/grading/check_no_solution.py" ]; then
  if ! python3 "$root/tests/grading/check_no_solution.py" "$root" "$dest"; then
    echo "make_handout.sh: the handout in $dest holds solution text (above); do not hand it out" >&2
    exit 1
  fi
fi
exercises=$(find "$dest/chapters" -name 'exercise.*' | wc -l)
echo "Handout written to $dest: $copied files, $exercises exercises as given, no solutions."
