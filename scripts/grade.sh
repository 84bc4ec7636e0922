#!/usr/bin/env bash
# Grades a student's tree: builds the student's exercises (chapters/NN_topic/exercise.cu, and
# exercise.py) with THIS tree's tests, common/ and cmake/ (a student's edits to anything but
# the exercises do not count), runs the exercise tests and writes a score.
#
#   scripts/grade.sh STUDENT_TREE [--out DIR] [--only REGEX] [--lenient] [-- CMAKE_ARGS...]
#
#   --out DIR      where the build and the reports go (default: grade-<name of STUDENT_TREE>)
#   --only REGEX   grade only the exercises whose chapter (NN_topic) matches
#   --lenient      leave the exercises that cannot run here out of the total (default: strict,
#                  they count as not solved)
#   CMAKE_ARGS     extra configure arguments, e.g. -DCMAKE_CUDA_ARCHITECTURES=90
#
# Writes DIR/summary.md (one row per exercise: passed; failed, naming the checks that failed or
# why; could not run here, and why), DIR/junit.xml (one test case per exercise: a failure for
# failed, an error for could not run here), DIR/ctest-junit.xml (every test ctest ran) and
# DIR/logs/. The tests run as on a strict GPU runner (CUDA_STREAMS_STRICT=1, no skip allowed):
# an exercise that cannot run on this machine (no GPU, one GPU for a two-GPU exercise, no torch,
# a GPU too old) is reported as such and never counted as solved. Exit status: 0 every exercise
# passed, 1 one did not, 2 usage or configure error.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
student=""
out=""
only=""
lenient=0
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
    --lenient) lenient=1; shift ;;
    --) shift; cmake_args=("$@"); break ;;
    -h | --help) usage ;;
    -*) echo "grade.sh: unknown option '$1'" >&2; usage ;;
    *) [ -z "$student" ] || usage; student=$1; shift ;;
  esac
done
[ -n "$student" ] || usage
if [ ! -d "$student/chapters" ]; then
  echo "grade.sh: $student has no chapters/ folder: not a tree of this course" >&2
  exit 2
fi
student=$(cd "$student" && pwd)
[ -n "$out" ] || out=grade-$(basename "$student")
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
build=$out/build
command -v nvcc >/dev/null 2>&1 || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=/usr/local/cuda/bin:$PATH

# The exercises: the instructor's tests/exercises/NN_topic.cmake with an exercise in chapters/.
exercises=()
for test_file in "$root"/tests/exercises/[0-9][0-9]_*.cmake; do
  chapter=$(basename "$test_file" .cmake)
  [ -z "$only" ] || [[ "$chapter" =~ $only ]] || continue
  compgen -G "$root/chapters/$chapter/exercise.*" >/dev/null || continue
  exercises+=("$chapter")
done
if [ ${#exercises[@]} -eq 0 ]; then
  echo "grade.sh: no exercise to grade${only:+ (--only '$only')}" >&2
  exit 2
fi
chapters_regex="^($(IFS='|'; echo "${exercises[*]}"))\$"

generator=()
[ -n "${CMAKE_GENERATOR:-}" ] || ! command -v ninja >/dev/null 2>&1 || generator=(-G Ninja)
echo "Grading $student with the tests of $root: ${#exercises[@]} exercises"
if ! cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCUDA_STREAMS_EXERCISES=ON -DCUDA_STREAMS_EXERCISE_ROOT="$student" \
  -DCUDA_STREAMS_SOLUTIONS_DIR= -DCUDA_STREAMS_ONLY="$chapters_regex" \
  -DCUDA_STREAMS_DOCS=OFF -DCUDA_STREAMS_TORCH=OFF "${cmake_args[@]}" >"$out/logs/configure.log" 2>&1; then
  tail -n 30 "$out/logs/configure.log" >&2
  echo "grade.sh: the configure step failed (log: $out/logs/configure.log)" >&2
  exit 2
fi

# Each exercise is built on its own, so that one that does not compile fails alone.
: >"$out/logs/status.txt"
compiled=0
for chapter in "${exercises[@]}"; do
  [ ! -f "$root/chapters/$chapter/exercise.cu" ] || compiled=1
done
if [ "$compiled" -eq 1 ] && ! cmake --build "$build" --target cuda_streams_common >"$out/logs/common.build.log" 2>&1; then
  tail -n 30 "$out/logs/common.build.log" >&2
  echo "grade.sh: the instructor's common/ does not build here (log: $out/logs/common.build.log)" >&2
  exit 2
fi
for chapter in "${exercises[@]}"; do
  # A chapter this toolkit cannot compile is left out at configure time, saying why: not the
  # student's fault, so it is reported as could not run here, not as a compiler error.
  left_out=$(sed -n "s/^-- cuda-streams: chapter $chapter skipped: //p" "$out/logs/configure.log" | head -n 1)
  if [ -f "$root/chapters/$chapter/exercise.cu" ]; then
    if [ ! -f "$student/chapters/$chapter/exercise.cu" ]; then
      echo "$chapter missing chapters/$chapter/exercise.cu" >>"$out/logs/status.txt"
    elif [ -n "$left_out" ]; then
      echo "$chapter not_built $left_out" >>"$out/logs/status.txt"
    elif cmake --build "$build" --target "${chapter}_exercise" >"$out/logs/$chapter.build.log" 2>&1; then
      echo "$chapter built" >>"$out/logs/status.txt"
    else
      echo "$chapter build_failed" >>"$out/logs/status.txt"
    fi
  elif [ ! -f "$student/chapters/$chapter/exercise.py" ]; then
    echo "$chapter missing chapters/$chapter/exercise.py" >>"$out/logs/status.txt"
  else
    echo "$chapter built" >>"$out/logs/status.txt"
  fi
done

# The students' tests (label exercise), strict: a skip fails, naming its reason.
built=$(awk '$2 == "built" { print $1 }' "$out/logs/status.txt" | paste -sd '|' -)
if [ -n "$built" ]; then
  CUDA_STREAMS_STRICT=1 CUDA_STREAMS_ALLOWED_SKIPS="" \
    ctest --test-dir "$build" -L '^exercise$' -R "^($built)_exercise\\." --timeout 300 \
    --output-junit "$out/ctest-junit.xml" >"$out/logs/ctest.log" 2>&1
fi

python3 - "$out" "$student" "$lenient" "${exercises[@]}" <<'PYTHON'
import os, re, sys, xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr
out, student, lenient, exercises = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
status = dict(line.split(" ", 1) for line in open(f"{out}/logs/status.txt").read().splitlines())
tests = {}  # test name -> (ctest status, output)
junit = f"{out}/ctest-junit.xml"
if os.path.exists(junit):
    for case in ET.parse(junit).getroot().iter("testcase"):
        output = "".join(e.text or "" for e in case.iter("system-out"))
        tests[case.get("name")] = (case.get("status"), output)

def first_error(log):
    for line in open(log, errors="replace"):
        if re.search(r"error", line, re.I) and not line.startswith(("FAILED:", "ninja:")):
            return line.strip()[:160]
    return "see the build log"

rows = []
for chapter in exercises:
    state = status.get(chapter, "missing")
    if state.startswith("missing"):
        rows.append((chapter, "failed", f"{state.split(' ', 1)[1]} is missing from the student's tree"))
        continue
    if state.startswith("not_built"):
        rows.append((chapter, "could not run here", f"not built here: {state.split(' ', 1)[1]}"))
        continue
    if state == "build_failed":
        rows.append((chapter, "failed", "does not compile: " + first_error(f"{out}/logs/{chapter}.build.log")))
        continue
    mine = {n: t for n, t in tests.items() if n.startswith(chapter + "_exercise.")}
    if not mine:
        rows.append((chapter, "could not run here", "no test ran (see logs/configure.log and logs/ctest.log)"))
        continue
    failed, skipped = [], []
    for name, (state, output) in sorted(mine.items()):
        test = name.split(".", 1)[1]
        skip = re.search(r"^SKIP: (.*)$", output, re.M)
        if state == "run":
            continue
        if skip and (state == "notrun" or "skipped under CUDA_STREAMS_STRICT" in output):
            skipped.append(f"{test}: {skip.group(1).strip()}")
            continue
        if state == "notrun" and not output.strip():
            skipped.append(f"{test}: not run ({state})")
            continue
        checks = re.findall(r"^CHECK ([a-z0-9_]+): .* FAIL$", output, re.M)
        if checks:
            failed.append(f"{test}: CHECK {', '.join(dict.fromkeys(checks))}")
        else:
            why = re.findall(r"^expect\.sh: FAIL: (.*)$", output, re.M)
            failed.append(f"{test}: {why[0] if why else 'failed without a CHECK line (timeout or crash?)'}")
    if failed:
        rows.append((chapter, "failed", "; ".join(failed)))
    elif skipped:  # one reason, after the tests that gave it
        reasons = {}
        for entry in skipped:
            test, reason = entry.split(": ", 1)
            reasons.setdefault(reason, []).append(test)
        rows.append((chapter, "could not run here",
                     "; ".join(f"{', '.join(t)}: {r}" for r, t in reasons.items())))
    else:
        rows.append((chapter, "passed", ", ".join(n.split(".", 1)[1] for n in sorted(mine))))

passed = sum(1 for r in rows if r[1] == "passed")
not_run = sum(1 for r in rows if r[1] == "could not run here")
failed = sum(1 for r in rows if r[1] == "failed")
total = len(rows) - (not_run if lenient else 0)
score = f"Score: {passed} of {total} exercises passed ({failed} failed, {not_run} could not run here"
score += ", left out of the total: --lenient)" if lenient else ", counted as not solved)"
lines = [f"# Grade: {os.path.basename(student)}", "",
         f"Student tree: `{student}`. Tests: the instructor's. Strict: {'no' if lenient else 'yes'}.", "",
         "| Exercise | Result | Details |", "|---|---|---|"]
lines += [f"| {c} | {r} | {d.replace('|', '/')} |" for c, r, d in rows]
lines += ["", score]
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))

cases = []
for chapter, result, details in rows:
    body = ""
    if result == "failed":
        body = f"<failure message={quoteattr(details)}/>"
    elif result == "could not run here":
        body = f"<error type=\"could-not-run-here\" message={quoteattr(details)}/>"
    cases.append(f"  <testcase classname=\"exercises\" name=\"{chapter}\">{body}</testcase>")
open(f"{out}/junit.xml", "w").write(
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    f"<testsuite name={quoteattr('grade ' + os.path.basename(student))} tests=\"{len(rows)}\" "
    f"failures=\"{failed}\" errors=\"{not_run}\">\n" + "\n".join(cases) + "\n</testsuite>\n")
sys.exit(0 if passed == len(rows) else 1)
PYTHON
status=$?
echo "Reports: $out/summary.md, $out/junit.xml, $out/ctest-junit.xml, $out/logs/"
exit $status
