#!/usr/bin/env bash
# scripts/soak.sh against a stand-in `ctest` whose every run fails one test on one check: soak.sh
# must print each run's line, the failing test and its CHECK lines, and exit 1 (the test
# repo.soak_reports_failures requires them).
#
#   soak_failure_case.sh SOURCE_DIR WORK_DIR
set -eu
source_dir=$1 work=$2/soak_failure_case
rm -rf "$work"
mkdir -p "$work/bin"
cat >"$work/bin/ctest" <<'FAKE'
#!/usr/bin/env bash
echo "CHECK threads_run_concurrently: 1.92x >= 3.00x (0.75 x ideal 4.00x) ... FAIL"
echo "CHECK threads_run_concurrently: 2.29x >= 3.00x (0.75 x ideal 4.00x) ... FAIL"
echo "CHECK threads_kernel_runs: 0 of 72 values differ from the CPU reference ... PASS"
echo "99% tests passed, 1 tests failed out of 116"
echo "The following tests FAILED:"
printf '\t133 - 02_default_vs_custom_streams_per_thread.part.threads (Failed) gpu timing\n'
exit 8
FAKE
chmod +x "$work/bin/ctest"
PATH="$work/bin:$PATH" exec bash "$source_dir/scripts/soak.sh" --timing 2 --logs "$work/logs"
