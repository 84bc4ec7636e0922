#!/usr/bin/env bash
# The tests of the course kit (tests/grading/CMakeLists.txt registers them).
#
#   kit_test.sh handout|grade|scores SOURCE_DIR WORK_DIR CUDA_ARCHITECTURES [CUDA_COMPILER]
#   (CUDA_ARCHITECTURES separated by commas, e.g. 75,90)
#
# handout: scripts/make_handout.sh writes a handout in which check_no_solution.py finds no solution
#          (and the solved tree, in which it must find them); the handout configures with its
#          exercises preset, builds chapter 01's exercise, registers no solved test, and its
#          exercise fails as given (exercises-check: passes on a GPU, skips without); its build
#          holds no solution either.
# grade:   scripts/grade.sh gives the handout 0 (chapters 01 and 11); a student's exercise.py that
#          fails a check is reported failed with that check's name, one that prints what the
#          tests ask for is reported passed: a student's tests/ do not count.
# scores:  on a GPU: the handout scores 0 of N, the solved tree N of N (every exercise).
set -uo pipefail
mode=$1
source_dir=$2
work=$3/kit_$1
architectures=${4:-}
architectures=${architectures//,/;} # CMake's list, given with commas
# The host tests only compile (chapter 01's exercise): for the last architecture alone, to be quick.
[ "$mode" = scores ] || architectures=${architectures##*;}
compiler=${5:-}
cmake_args=(-DCMAKE_CUDA_ARCHITECTURES="${architectures:-90}")
[ -z "$compiler" ] || cmake_args+=(-DCMAKE_CUDA_COMPILER="$compiler")
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
fail() {
  echo "FAIL: $*"
  exit 1
}
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

case "$mode" in
  handout)
    bash "$source_dir/scripts/make_handout.sh" handout || fail "make_handout.sh failed"
    [ ! -e handout/solutions ] || fail "the handout has solutions/"
    bash "$source_dir/scripts/make_handout.sh" --solved solved >/dev/null || fail "make_handout.sh --solved failed"
    if python3 "$source_dir/tests/grading/check_no_solution.py" "$source_dir" solved >solved_check.log; then
      fail "check_no_solution.py found no solution in the solved tree: it would miss one"
    fi
    grep -q "holds the solution text of 01_launch_config" solved_check.log ||
      fail "check_no_solution.py did not name chapter 01's solution in the solved tree"
    cd handout || exit 1
    cmake --preset exercises "${generator[@]}" "${cmake_args[@]}" -DCUDA_STREAMS_ONLY='^01_' \
      -DCUDA_STREAMS_DOCS=OFF -DCUDA_STREAMS_TORCH=OFF >../configure.log 2>&1 ||
      { tail -n 30 ../configure.log; fail "the handout does not configure"; }
    cmake --build --preset exercises --target 01_launch_config_exercise common_unit_tests \
      >../build.log 2>&1 ||
      { tail -n 30 ../build.log; fail "the handout's exercise 01 does not build"; }
    solved=$(ctest --preset exercises -N -L solved | sed -n 's/^Total Tests: //p')
    [ "${solved:-0}" -eq 0 ] || fail "the handout registers $solved solved tests"
    given=$(ctest --test-dir build-exercises -N -L as_given -R '^01_' | sed -n 's/^Total Tests: //p')
    [ "${given:-0}" -eq 2 ] || fail "the handout registers ${given:-0} as_given tests of 01, not 2"
    # The exercise as given fails its tests, naming the check (the as_given tests pass on a GPU
    # and skip without one); the students' own tests fail on a GPU until it is solved.
    ctest --preset exercises-check -R '^01_launch_config_exercise\.' ||
      fail "ctest --preset exercises-check failed: the exercise as given does not fail as its lesson says"
    ctest --test-dir build-exercises -L args -R '^01_launch_config_exercise' ||
      fail "the exercise's argument tests failed"
    # The README's labels select tests in a tree without the course kit (tests/grading/, label kit).
    ctest --test-dir build-exercises --no-tests=error -R '^repo\.readme_labels_select_tests$' ||
      fail "the handout's README names a label that selects no test"
    cd ..
    python3 "$source_dir/tests/grading/check_no_solution.py" "$source_dir" handout handout/build-exercises ||
      fail "solution text in the handout or its build"
    echo "The handout holds no solution, configures, builds exercise 01 and runs its tests."
    ;;
  grade)
    bash "$source_dir/scripts/make_handout.sh" handout >/dev/null || fail "make_handout.sh failed"
    bash "$source_dir/scripts/grade.sh" handout --out grade-handout \
      --only '^(01_launch_config|11_pytorch_streams)$' -- "${cmake_args[@]}"
    status=$?
    [ "$status" -eq 1 ] || fail "grade.sh exited $status on the handout, not 1"
    grep -q '^Score: 0 of 2 exercises passed' grade-handout/summary.md || fail "the handout did not score 0 of 2"
    ! grep -q '| passed |' grade-handout/summary.md || fail "an exercise of the handout passed"
    grep -Eq '^\| 01_launch_config \| (could not run here \| exercise, exercise\.small: no (usable )?CUDA device|failed \| exercise: CHECK coverage_2d)' \
      grade-handout/summary.md || fail "exercise 01's row says neither 'no CUDA device' nor its failing check"
    grep -q '<testcase classname="exercises" name="11_pytorch_streams">' grade-handout/junit.xml ||
      fail "junit.xml has no test case for exercise 11"

    # A student's tree: exercise.py prints a failing check; their edited tests must not count.
    cp -r handout student
    printf 'all: exercise_test(FAILS_WITH nothing)\n' >student/tests/exercises/11_pytorch_streams.cmake
    cat >student/chapters/11_pytorch_streams/exercise.py <<'PYTHON'
print("CHECK consumer_results: 8388608 of 8388608 values differ from the CPU reference ... FAIL")
print("\n1 of 2 checks passed; 1 FAILED.")
raise SystemExit(1)
PYTHON
    bash "$source_dir/scripts/grade.sh" student --out grade-fails --only '^11_' -- "${cmake_args[@]}"
    grep -q '^| 11_pytorch_streams | failed | exercise: CHECK consumer_results |' grade-fails/summary.md ||
      fail "a failing check was not reported by name"
    # Printing what the tests ask for passes (the grader trusts the program's output).
    cat >student/chapters/11_pytorch_streams/exercise.py <<'PYTHON'
print("CHECK consumer_results: 0 of 8388608 values differ from the CPU reference ... PASS")
print("CHECK host_not_blocked: 0.01x <= 0.50x (issue time) ... PASS")
print("\nAll 2 checks passed.")
PYTHON
    bash "$source_dir/scripts/grade.sh" student --out grade-passes --only '^11_' -- "${cmake_args[@]}" ||
      fail "grade.sh did not exit 0 when every exercise passed"
    grep -q '^Score: 1 of 1 exercises passed' grade-passes/summary.md || fail "a passing exercise did not score"
    # A chapter the toolkit cannot compile (left out at configure time) could not run here: it is
    # not the student's compiler error. The instructor's tree with chapter 01 asking for CUDA 99.0.
    bash "$source_dir/scripts/make_handout.sh" --solved old_toolkit >/dev/null || fail "make_handout.sh --solved failed"
    cp "$source_dir/scripts/grade.sh" old_toolkit/scripts/
    echo 'cuda_streams_chapter(MIN_TOOLKIT 99.0)' >old_toolkit/chapters/01_launch_config/CMakeLists.txt
    bash old_toolkit/scripts/grade.sh handout --out grade-old-toolkit --only '^01_' -- "${cmake_args[@]}"
    grep -q '^| 01_launch_config | could not run here | not built here: it needs CUDA Toolkit 99.0 or newer' \
      grade-old-toolkit/summary.md || fail "a chapter left out by the toolkit was not reported as could not run here"
    echo "The grader scores the handout 0 of 2, names a failing check and a chapter the toolkit left out; a student's tests do not count."
    ;;
  scores)
    if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
      echo "SKIP: no CUDA device (nvidia-smi -L lists none)"
      exit 77
    fi
    bash "$source_dir/scripts/make_handout.sh" handout >/dev/null || fail "make_handout.sh failed"
    bash "$source_dir/scripts/make_handout.sh" --solved solved >/dev/null || fail "make_handout.sh --solved failed"
    count=$(find "$source_dir"/tests/exercises -name '[0-9][0-9]_*.cmake' | wc -l)
    bash "$source_dir/scripts/grade.sh" handout --out grade-handout -- "${cmake_args[@]}"
    grep -q "^Score: 0 of $count exercises passed" grade-handout/summary.md || fail "the handout did not score 0 of $count"
    ! grep -q '| passed |' grade-handout/summary.md || fail "an exercise of the handout passed"
    bash "$source_dir/scripts/grade.sh" solved --out grade-solved -- "${cmake_args[@]}"
    # Full marks, but for what this machine cannot run (chapter 11's without torch), said so.
    ! grep -q '| failed |' grade-solved/summary.md || fail "a solved exercise failed"
    grep -q "^Score: $count of $count exercises passed" grade-solved/summary.md ||
      echo "note: the solved tree did not score $count of $count: the rows above say what could not run here"
    echo "The handout scores 0 of $count with no passed row; the solved tree has no failed row."
    ;;
  *) fail "unknown mode '$mode'" ;;
esac
