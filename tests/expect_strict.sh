#!/usr/bin/env bash
# Host test of tests/expect.sh and the gpu-ci preset: what a GPU runner's strict mode does with a
# skip, and that the exit codes and the tally regex cannot be passed by a run that proved nothing.
#
#   tests/expect_strict.sh ROOT
set -u
root=$1
expect=$root/tests/expect.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# A stand-in program: prints its first argument and exits with its second.
cat >"$work/program" <<'PROGRAM'
#!/usr/bin/env bash
printf '%s\n' "$1"
exit "$2"
PROGRAM
chmod +x "$work/program"

# expect STATUS DESCRIPTION [ENV...] -- EXPECT-ARGS...: runs expect.sh, compares its exit status.
expect_status() {
  local want=$1 what=$2
  shift 2
  local env_args=()
  while [ "$1" != "--" ]; do env_args+=("$1"); shift; done
  shift
  env -u CUDA_STREAMS_STRICT -u CUDA_STREAMS_ALLOWED_SKIPS ${env_args[@]+"${env_args[@]}"} \
    bash "$expect" "$@" >"$work/log" 2>&1
  local got=$?
  if [ "$got" -eq "$want" ]; then
    echo "ok   $what (exit $got)"
  else
    echo "FAIL $what: exit $got, expected $want"
    sed 's/^/     | /' "$work/log"
    failures=$((failures + 1))
  fi
}

no_gpu="SKIP: no CUDA device found"
two="SKIP: part peer needs 2 CUDA devices, this machine has 1"
allowed="CUDA_STREAMS_ALLOWED_SKIPS=needs [0-9]+ (CUDA )?devices"
expect_status 77 "a skip is reported as skipped by default" -- -- "$work/program" "$no_gpu" 77
expect_status 1 "strict: a skip whose reason the runner did not declare fails" \
  CUDA_STREAMS_STRICT=1 -- -- "$work/program" "$no_gpu" 77
expect_status 1 "strict: a declared reason does not cover another one" \
  CUDA_STREAMS_STRICT=1 "$allowed" -- -- "$work/program" "$no_gpu" 77
expect_status 77 "strict: a skip the runner declared stays a skip" \
  CUDA_STREAMS_STRICT=1 "$allowed" -- -- "$work/program" "$two" 77
expect_status 1 "strict: exit 77 without a SKIP: line fails" \
  CUDA_STREAMS_STRICT=1 "$allowed" -- -- "$work/program" "no reason given" 77
expect_status 77 "CUDA_STREAMS_STRICT=0 is not strict" CUDA_STREAMS_STRICT=0 -- -- "$work/program" "$no_gpu" 77
expect_status 0 "one of several exit codes passes" -- --exit 3 --exit 77 -- "$work/program" "SKIP: hidden" 77
expect_status 0 "one of several exit codes passes (3)" -- --exit 3 --exit 77 -- "$work/program" "bug" 3
expect_status 77 "no device skips even where 77 is a listed code" -- --exit 3 --exit 77 --match "hidden" \
  -- "$work/program" "$no_gpu" 77
expect_status 1 "strict: no device fails even where 77 is a listed code" CUDA_STREAMS_STRICT=1 \
  -- --exit 3 --exit 77 -- "$work/program" "$no_gpu" 77
expect_status 1 "an exit code not listed fails" -- --exit 3 --exit 77 -- "$work/program" "ok" 0
expect_status 1 "'All 0 checks passed' is no pass" \
  -- --match "All [1-9][0-9]* checks passed" -- "$work/program" "All 0 checks passed." 0
expect_status 0 "'All 12 checks passed' passes" \
  -- --match "All [1-9][0-9]* checks passed" -- "$work/program" "All 12 checks passed." 0

# The gpu-ci presets are strict and declare only the several-devices skip.
for preset in gpu-ci gpu-ci-sanitize; do
  if python3 - "$root/CMakePresets.json" "$preset" <<'PY'
import json, sys
presets = {p["name"]: p for p in json.load(open(sys.argv[1]))["testPresets"]}
env = presets[sys.argv[2]].get("environment", {})
sys.exit(0 if env.get("CUDA_STREAMS_STRICT") == "1" and "devices" in env.get("CUDA_STREAMS_ALLOWED_SKIPS", "") else 1)
PY
  then
    echo "ok   preset $preset sets CUDA_STREAMS_STRICT=1 and allows only the devices skip"
  else
    echo "FAIL preset $preset is not strict"
    failures=$((failures + 1))
  fi
done

if [ "$failures" -gt 0 ]; then
  echo "$failures failed"
  exit 1
fi
echo "all passed"
