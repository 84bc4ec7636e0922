#!/usr/bin/env python3
"""Lists the output a lesson shows that its program no longer prints.

    scripts/lesson_drift.py OUTDIR [CHAPTER_DIR...]

OUTDIR holds what the programs printed with their default flags, one NAME.txt per executable,
and, if it has a settings/ folder, what they printed under a launch setting
(settings/NAME.LAUNCH_BLOCKING.txt, settings/NAME.DEVICE_MAX_CONNECTIONS.txt):
`scripts/collect_outputs.sh [--settings] OUTDIR` writes both on a machine with a GPU. Without
CHAPTER_DIR, every chapters/NN_*/ folder of the repository this script is in.

Each lesson pastes its program's output in ```text blocks. Measured values change from run to
run and from GPU to GPU, so lines are compared with every number read as any number, except a
total after "of" (`0 of 96 values differ`, `median of 5 runs`): how many values, kernels or
launches a check covers is set by the program, not measured, and must match. The count in a
tally (`All 15 checks passed`) must match too. The GPU's name (NVIDIA ..., up to a comma,
parenthesis or colon) is read as any name. Not compared: a bar's value (bars adapt to the device
and the settings), and checks the program prints that a block leaves out (blocks show
selections). A block counts as drifted when one of its CHECK lines is not among the lines the
program printed, or when a fifth or more of its other lines are not (timelines and tables are
left out: their shape follows the measurement). A block that opens with a command
(`$ CUDA_LAUNCH_BLOCKING=1 build/bin/NAME ...` with the value 1; one block may hold several) is
compared, command by command, with that program's run under that setting, when OUTDIR has it.
Other blocks in a section about a launch setting (a heading that names CUDA_LAUNCH_BLOCKING or
CUDA_DEVICE_MAX_CONNECTIONS, or says "environment") are not compared.

Prints one line per drifted block (file, line, the label above it, the first line that differs)
and how many blocks it compared and left out; exits 1 when a block drifted, 0 when none did,
2 on bad arguments or when it compared no block at all (a wrong OUTDIR, say).
"""
import glob
import os
import re
import sys

NUMBER = re.compile(r"(\bof |^All )?([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Lines of timelines, tables and charts: rows of bars or of numbers only.
CHART = re.compile(r"^\s*(\S.*?\s)?[A-Z.]{12,}\s*$|^\s*\+[-+]+\s*$|^[\s\d.:+-]+(ms|us|s)?\s*$")
SETTING = re.compile(r"CUDA_LAUNCH_BLOCKING|CUDA_DEVICE_MAX_CONNECTIONS|nvironment")


GPU_NAME = re.compile(r"NVIDIA [^,():]+")


def normal(line):
    line = GPU_NAME.sub("NVIDIA #", line)
    kept_totals = NUMBER.sub(lambda m: m.group(0) if m.group(1) else "#", line.rstrip())
    return " ".join(kept_totals.split())


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return set(normal(l) for l in f)


def printed_lines(outdir, chapter):
    lines = set()
    for path in glob.glob(os.path.join(outdir, chapter[:2] + "_*.txt")):
        lines.update(read_lines(path))
    return lines


COMMAND = re.compile(r"^\$ CUDA_(LAUNCH_BLOCKING|DEVICE_MAX_CONNECTIONS)=1 build/bin/(\S+)")


def text_blocks(readme):
    """Yields (first line number, label above, lines, run) per block: run is "" for a block to
    compare with the default runs, the file of OUTDIR/settings for each command's part of a
    block of commands, None for a block that is not compared."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    heading, label, fenced, i = "", "", False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```") and line.strip() != "```text":
            fenced = not fenced  # another fenced block (code, shell): its # lines are no headings
        if line.startswith("#") and not fenced:
            heading = line
        if line.strip() == "```text":
            closing = (j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            end = next(closing, len(lines))
            body = lines[i + 1:end]
            if body and body[0].startswith("$ "):
                starts = [k for k, l in enumerate(body) if l.startswith("$ ")] + [len(body)]
                for a, b in zip(starts, starts[1:]):
                    match = COMMAND.match(body[a])
                    run = f"{match.group(2)}.{match.group(1)}.txt" if match else None
                    yield i + 2 + a, body[a], body[a + 1:b], run
            else:
                yield i + 2, label, body, None if SETTING.search(heading) else ""
            i = end + 1
            continue
        if line.strip():
            label = line.strip()
        i += 1


def drift(block, printed):
    checks = [l for l in block if l.startswith("CHECK ")]
    others = [l for l in block if l.strip() and not l.startswith("CHECK ") and not CHART.match(l)]
    for line in checks:
        if normal(line) not in printed:
            return line
    missing = [l for l in others if normal(l) not in printed]
    if others and len(missing) * 5 >= len(others):
        return missing[0]
    return None


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.stderr.write(__doc__)
        return 2
    outdir = argv[1]
    if not os.path.isdir(outdir):
        sys.stderr.write(f"lesson_drift.py: {outdir} is not a folder\n")
        return 2
    chapters = argv[2:] or sorted(glob.glob(os.path.join(ROOT, "chapters", "[0-9][0-9]_*", "")))
    found = compared = left_out = 0
    for chapter_dir in chapters:
        chapter = os.path.basename(os.path.normpath(chapter_dir))
        printed = printed_lines(outdir, chapter)
        readme = os.path.join(chapter_dir, "README.md")
        if not os.path.isfile(readme):
            sys.stderr.write(f"lesson_drift.py: {chapter_dir} has no README.md\n")
            return 2
        for line_number, label, block, run in text_blocks(readme):
            path = os.path.join(outdir, "settings", run) if run else None
            if run is None or (run and not os.path.exists(path)) or (not run and not printed):
                left_out += 1
                continue
            compared += 1
            differs = drift(block, read_lines(path) if run else printed)
            if differs is not None:
                found += 1
                print(f"{readme}:{line_number}: [{label[:60]}] not printed now: "
                      f"{differs.strip()[:120]}")
    print(f"{found} of {compared} block(s) compared show output the programs no longer print "
          f"({left_out} not compared: left out on purpose, or no run of theirs in {outdir})")
    if compared == 0:
        sys.stderr.write(f"lesson_drift.py: no block compared: is {outdir} an OUTDIR of "
                         "scripts/collect_outputs.sh?\n")
        return 2
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
