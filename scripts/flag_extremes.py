#!/usr/bin/env python3
"""Every numeric flag of every chapter program built in BUILD has a test at its minimum and one
at its maximum (or runs there by default), so that no flag value the program accepts is untried.

    scripts/flag_extremes.py BUILD

The flags and their ranges come from each program's --help ("an integer in 1..64", "a whole
number in 1024..67108864", "a number in [0.1, 20]"); the tests from `ctest -N --show-only=json-v1`.
--device is left out (its range is the CUDA limit, not this machine's). Exit status 0 when every
extreme is tried, 1 when one is not (each is named), 77 when nothing is built.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from try_under_settings import program_command  # noqa: E402  (the test's program and its arguments)

FLAG = re.compile(
    r"^  --([a-z-]+) (?:N|X|N\[K\|M\|G\]) .*?(?:an integer in|a whole number in|a number in \[)"
    r" ?(-?[\d.]+)(?:\.\.|, )(-?[\d.]+)\]?.*?\(default: (-?[\d.]+)\)", re.M)


def number(text):
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    try:
        return float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        return None


def same(a, b):
    return number(a) is not None and number(a) == number(b)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    bindir = os.path.join(build, "bin")
    programs = sorted(n for n in os.listdir(bindir) if re.match(r"^\d\d_[a-z_]+$", n)
                      and "exercise" not in n) if os.path.isdir(bindir) else []
    if not programs:
        print(f"SKIP: no chapter program is built in {bindir}")
        return 77
    listing = subprocess.run(["ctest", "--test-dir", build, "-N", "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
    tests = json.loads(listing.stdout)["tests"]
    missing, tried = [], 0
    for name in programs:
        help_text = subprocess.run([os.path.join(bindir, name), "--help"], capture_output=True,
                                   text=True).stdout
        runs = [a for a in map(program_command, tests) if a and os.path.basename(a[0]) == name]
        for flag, low, high, default in FLAG.findall(help_text):
            if flag == "device":
                continue
            for value in (low, high):
                tried += 1
                covered = any(a == "--" + flag and i + 1 < len(r) and same(r[i + 1], value)
                              for r in runs for i, a in enumerate(r))
                if not covered and same(value, default):
                    covered = any("--" + flag not in r for r in runs)
                if not covered:
                    missing.append(f"{name} --{flag} {value}")
    for line in missing:
        print(f"FAIL: no test runs {line}")
    print(f"{tried - len(missing)} of {tried} flag extremes have a test ({len(programs)} programs)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
