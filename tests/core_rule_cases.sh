#!/usr/bin/env bash
# scripts/cores.py --check on a made-up chapter whose lesson holds its core as --write copies it:
# a core of 5 to 25 lines with a taught call passes (in the block form and in the counted forms);
# a core of 26 lines, one of 4 lines, or one whose only CUDA call is in a comment (a line of its
# own, a trailing one) or a string fails and names the chapter, the part and the problem; so does
# a lesson whose excerpt was edited by hand, or whose part section does not open with its core.
#
#   core_rule_cases.sh SOURCE_DIR WORK_DIR PYTHON
set -u
source_dir=$1 work=$(mktemp -d "$2/core_rule_case.XXXXXX") python=$3
trap 'rm -rf "$work"' EXIT  # a folder of its own: two test runs at once do not share it
failures=0
mkdir -p "$work/chapters/99_demo" && cd "$work"
program() {  # the program: a part "demo" whose core is the lines given (one per argument)
  {
    printf 'void part_demo(cudaStream_t s) {\n  // core: demo\n'
    printf '  %s\n' "$@"
    printf '  // end core\n}\n'
  } >chapters/99_demo/demo.cu
  printf '# 99\n\n## Part 1: demo: a demo\n\nText.\n' >chapters/99_demo/README.md
  "$python" "$source_dir/scripts/cores.py" --write chapters/99_demo >/dev/null 2>&1
}
expect() {  # expected exit status, case name, text the output must hold
  "$python" "$source_dir/scripts/cores.py" --check chapters/99_demo >"$2.log" 2>&1
  local status=$?
  if [ "$status" != "$1" ] || ! grep -qF -- "$3" "$2.log"; then
    echo "FAIL $2: exit $status, expected $1 and '$3'"; cat "$2.log"; failures=$((failures + 1))
  else
    echo "ok   $2: exit $status"
  fi
}
lines() {  # N plain lines
  for ((i = 1; i <= $1; ++i)); do printf 'int x%d = %d;\n' "$i" "$i"; done
}
launch='kernel<<<1, 1, 0, s>>>();'
mapfile -t plain < <(lines 24)
program "$launch" "${plain[@]:0:4}"
expect 0 five_lines "0 problems"
program "$launch" "${plain[@]}"
expect 0 twenty_five_lines "0 problems"
mapfile -t plain < <(lines 25)
program "$launch" "${plain[@]}"
expect 1 too_long "99_demo: part demo: the core is 26 lines"
mapfile -t plain < <(lines 3)
program 'CS_CHECK(cudaStreamSynchronize(s));' "${plain[@]}"
expect 1 too_short "99_demo: part demo: the core is 4 lines"
mapfile -t plain < <(lines 5)
program '// cudaStreamSynchronize(s) would go here' "${plain[@]}"
expect 1 no_cuda_call "99_demo: part demo: the core has no taught call"
program 'int y = 0;  // cudaStreamSynchronize(s) comes later' 'const char* w = "cudaMemcpy(";' \
  "${plain[@]:0:3}"
expect 1 cuda_call_in_comment_and_string "99_demo: part demo: the core has no taught call"
# The counted forms: a comment line (its text opens the excerpt) and a trailing comment.
printf 'void part_demo(cudaStream_t s) {\n  // core: demo (4 lines): the fix\n%s\n}\n' \
  "$(printf '  %s\n' 'int a = 0;' 'int b = 0;' 'int c = 0;' "$launch")" >chapters/99_demo/demo.cu
"$python" "$source_dir/scripts/cores.py" --write chapters/99_demo >/dev/null 2>&1
expect 0 counted_comment "0 problems"
printf 'void part_demo(cudaStream_t s) {\n  %s  // core: demo (4 lines)\n%s\n}\n' "$launch" \
  "$(printf '  %s\n' 'int a = 0;' 'int b = 0;' 'int c = 0;')" >chapters/99_demo/demo.cu
"$python" "$source_dir/scripts/cores.py" --write chapters/99_demo >/dev/null 2>&1
expect 1 counted_trailing_too_short "99_demo: part demo: the core is 4 lines"
# The lesson drifts from the source: an excerpt line edited by hand, then text put between the
# part's heading and its core.
mapfile -t plain < <(lines 5)
program "$launch" "${plain[@]}"
sed -i 's/int x3 = 3;/int x3 = 4;/' chapters/99_demo/README.md
expect 1 excerpt_drifted "the core of part demo differs from"
program "$launch" "${plain[@]}"
sed -i 's/^<!-- core: demo -->$/Some words first.\n\n&/' chapters/99_demo/README.md
expect 1 text_before_core "text stands between its heading and the core"
[ "$failures" = 0 ] && echo "All core rule cases passed." || echo "$failures case(s) FAILED."
[ "$failures" = 0 ]
