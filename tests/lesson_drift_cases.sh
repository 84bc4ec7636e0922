#!/usr/bin/env bash
# scripts/lesson_drift.py on a made-up chapter: other measured values pass; a total that changed
# (0 of 16 -> 0 of 96), a CHECK whose text changed, a block the program no longer prints, or a
# block of a setting's run with a stale tally fail; a plain block in a setting's section is not
# compared; nothing to compare is an error (exit 2).
#
#   lesson_drift_cases.sh SOURCE_DIR WORK_DIR PYTHON
set -u
source_dir=$1 work=$(mktemp -d "$2/lesson_drift_case.XXXXXX") python=$3
trap 'rm -rf "$work"' EXIT  # a folder of its own: two test runs at once do not share it
failures=0
mkdir -p "$work/chapters/99_demo" "$work/out/settings" && cd "$work"
cat >out/99_demo.txt <<'OUT'
== Part 1 of 1: demo: a demo
  default stream: 16.05 ms, 8 streams: 2.06 ms, speedup 7.79x
CHECK demo_runs: 0 of 96 values differ from the CPU reference ... PASS
CHECK demo_speedup: 7.79x >= 5.77x (ideal 7.69x) ... PASS
OUT
cat >out/settings/99_demo.LAUNCH_BLOCKING.txt <<'OUT'
$ CUDA_LAUNCH_BLOCKING=1 build/bin/99_demo
== Part 1 of 1: demo: a demo
CHECK demo_speedup: skipped (CUDA_LAUNCH_BLOCKING=1: one at a time)
All 1 checks passed.
OUT
lesson() {  # the README's output block, then a section about a setting with a run's block
  printf '# 99\n\n## Part 1: demo {#chapter_99_demo}\n\nOutput:\n\n```text\n%s\n```\n\n' "$1" \
    >chapters/99_demo/README.md
  printf '## Under CUDA_LAUNCH_BLOCKING=1\n\n```bash\n# not a heading\n```\n\n```text\n%s\n```\n' \
    "${2:-\$ CUDA_LAUNCH_BLOCKING=1 build/bin/99_demo
CHECK demo_speedup: skipped (CUDA_LAUNCH_BLOCKING=1: one at a time)
All 1 checks passed.}" >>chapters/99_demo/README.md
}
expect() {  # expected exit status, case name [, OUTDIR]
  "$python" "$source_dir/scripts/lesson_drift.py" "${3:-out}" chapters/99_demo >"$2.log" 2>&1
  local status=$?
  if [ "$status" != "$1" ]; then
    echo "FAIL $2: exit $status, expected $1"; cat "$2.log"; failures=$((failures + 1))
  else
    echo "ok   $2: exit $status"
  fi
}
lesson "  default stream: 16.04 ms, 8 streams: 2.04 ms, speedup 7.88x
CHECK demo_runs: 0 of 96 values differ from the CPU reference ... PASS
CHECK demo_speedup: 7.88x >= 5.77x (ideal 7.69x) ... PASS"
expect 0 other_measurements
lesson "CHECK demo_runs: 0 of 16 values differ from the CPU reference ... PASS"
expect 1 total_changed
lesson "CHECK demo_speedup: 7.88x >= 5.89x (ideal 7.86x, issue time in the bar) ... PASS"
expect 1 check_text_changed
lesson "  default stream: 16.04 ms over 8 kernels
  8 streams: 2.04 ms"
expect 1 lines_no_longer_printed
lesson "CHECK demo_runs: 0 of 96 values differ from the CPU reference ... PASS" \
  "\$ CUDA_LAUNCH_BLOCKING=1 build/bin/99_demo
CHECK demo_speedup: skipped (CUDA_LAUNCH_BLOCKING=1: one at a time)
All 2 checks passed."
expect 1 setting_tally_changed
# A plain block in a setting's section, below a shell block whose "# ..." line is no heading: it is
# not compared with the default run (which never printed it).
lesson "CHECK demo_runs: 0 of 96 values differ from the CPU reference ... PASS"
printf '\n```bash\n# still no heading\n```\n\n```text\nCHECK demo_other: printed only there ... PASS\n```\n' \
  >>chapters/99_demo/README.md
expect 0 setting_section_plain_block
mkdir -p empty
expect 2 nothing_compared empty
exit $((failures > 0))
