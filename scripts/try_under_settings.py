#!/usr/bin/env python3
"""Runs every command that a lesson suggests under the settings that real users have.

    scripts/try_under_settings.py [--build DIR] [--regex REGEX] [--list]

The lessons' "Try:" and "What to try next" commands are the chapters' `*.try.*` tests; this
script asks CTest for them (`ctest -N --show-only=json-v1`) and runs each program command once
with CUDA_LAUNCH_BLOCKING=1 and once with CUDA_DEVICE_MAX_CONNECTIONS=1, serially (they
measure time). A run passes when it exits as its test expects (0, or 3 for a command that
reproduces a bug on purpose); exit 77 is counted as skipped, with the reason the program printed.
Only the exit status is judged: under these settings a check is expected to say
"skipped (<reason>)" rather than print the PASS that the test itself matches.

--build DIR    the build folder (default: build, the default preset's)
--regex REGEX  which tests (default: \\.try\\.)
--list         print the commands and run nothing

Exit status: 0 when no run failed, 1 when one did, 77 when every run was skipped (no GPU).
"""
import argparse
import json
import os
import subprocess
import sys
import time

SETTINGS = [("CUDA_LAUNCH_BLOCKING", "1"), ("CUDA_DEVICE_MAX_CONNECTIONS", "1")]


def program_command(test):
    """The program a test runs: what follows tests/expect.sh's `--`, else the whole command."""
    command = test.get("command") or []
    if "--" in command and any(part.endswith("expect.sh") for part in command):
        return command[command.index("--") + 1:]
    return command


def expected_exits(test):
    """The exit statuses the test accepts (tests/expect.sh's --exit, repeatable), {0} if none."""
    command = test.get("command") or []
    wrapper = command[:command.index("--")] if "--" in command else []
    codes = {int(wrapper[i + 1]) for i, word in enumerate(wrapper[:-1]) if word == "--exit"}
    return codes or {0}


def test_property(test, name, default):
    for prop in test.get("properties", []):
        if prop["name"] == name:
            return prop["value"]
    return default


def suggested_tests(build, regex):
    listing = subprocess.run(["ctest", "--test-dir", build, "-N", "--show-only=json-v1", "-R", regex],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        sys.exit(f"ctest could not list the tests of {build}: {listing.stderr.strip()}")
    return [t for t in json.loads(listing.stdout)["tests"] if program_command(t)]


def last_skip_reason(output):
    lines = [line for line in output.splitlines() if "SKIP" in line or "skipped" in line]
    return lines[-1].strip() if lines else "exit 77"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--regex", default=r"\.try\.")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if not os.path.isfile(os.path.join(args.build, "CTestTestfile.cmake")):
        sys.exit(f"{args.build} is not a configured build folder (run 'cmake --preset default' and build)")

    tests = suggested_tests(args.build, args.regex)
    if not tests:
        sys.exit(f"no test matches '{args.regex}' in {args.build}")
    counts = {"passed": 0, "skipped": 0, "FAILED": 0}
    for test in tests:
        command = program_command(test)
        if args.list:
            print(" ".join(command))
            continue
        for variable, value in SETTINGS:
            env = {k: v for k, v in os.environ.items() if k not in dict(SETTINGS)}
            for assignment in test_property(test, "ENVIRONMENT", []):
                key, _, val = assignment.partition("=")
                env[key] = val
            env[variable] = value
            start = time.monotonic()
            run = subprocess.run(command, env=env, capture_output=True, text=True,
                                 cwd=test_property(test, "WORKING_DIRECTORY", None))
            seconds = time.monotonic() - start
            expected = expected_exits(test)
            result = ("passed" if run.returncode in expected
                      else "skipped" if run.returncode == 77 else "FAILED")
            counts[result] += 1
            note = f"  {last_skip_reason(run.stdout + run.stderr)}" if result == "skipped" else ""
            print(f"{result:8} {seconds:6.1f} s  {variable}={value} {test['name']}{note}", flush=True)
            if result == "FAILED":
                print(f"         exit {run.returncode}, expected {sorted(expected)}: {' '.join(command)}")
                print("\n".join("         | " + line for line in (run.stdout + run.stderr).splitlines()[-15:]))
    if args.list:
        return 0
    print(f"{counts['passed']} passed, {counts['skipped']} skipped, {counts['FAILED']} failed "
          f"({len(tests)} commands x {len(SETTINGS)} settings)")
    if counts["FAILED"]:
        return 1
    return 77 if counts["passed"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
