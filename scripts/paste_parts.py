#!/usr/bin/env python3
"""Pastes a chapter's real output into its lesson, part by part.

    scripts/paste_parts.py README.md OUTPUT.txt             each part's output into its section
    scripts/paste_parts.py README.md OUTPUT.txt --into ID   the whole of OUTPUT.txt into section ID

The program prints `== Part K of N: NAME: ...` before each part; the lines after it, up to the
next part (without the final tally), replace the first ```text block of the README section whose
heading ends in `{#chapter_NN_NAME}`. Lines naming files written by the run are left out.
"""
import re
import sys

HEADING = re.compile(r"^== Part \d+ of \d+: (\S+): ")
TALLY = re.compile(r"^(All \d+ checks passed\.|\d+ of \d+ checks passed; \d+ FAILED\.)$")
FILES = re.compile(r"^(Trace|SVG|Chunk curve) written to |written to \S+\.(svg|json)$")


def split_parts(text):
    parts, name = {}, None
    for line in text.split("\n"):
        match = HEADING.match(line)
        if match:
            name = match.group(1)
            parts[name] = []
        elif name is not None and not TALLY.match(line) and not FILES.search(line):
            parts[name].append(line)
    return {n: "\n".join(lines).strip("\n") for n, lines in parts.items()}


def paste(readme, anchor_suffix, body):
    lines = readme.split("\n")
    start = next((i for i, l in enumerate(lines)
                  if l.startswith("#") and l.rstrip().endswith("{#" + anchor_suffix + "}")), None)
    if start is None:
        raise SystemExit(f"no section with anchor {{#{anchor_suffix}}}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    open_at = next((i for i in range(start, end) if lines[i].strip() == "```text"), None)
    if open_at is None:
        raise SystemExit(f"section {anchor_suffix} has no ```text block")
    close_at = next(i for i in range(open_at + 1, len(lines)) if lines[i].strip() == "```")
    return "\n".join(lines[: open_at + 1] + body.split("\n") + lines[close_at:])


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--into"):
        raise SystemExit(__doc__.strip())
    readme_path, output_path = argv[0], argv[1]
    readme = open(readme_path, encoding="utf-8").read()
    output = open(output_path, encoding="utf-8").read()
    if len(argv) == 4:
        body = "\n".join(l for l in output.strip("\n").split("\n") if not FILES.search(l))
        readme = paste(readme, argv[3], body)
    else:
        chapter = re.search(r"\{#(chapter_\d\d)\}", readme).group(1)
        for name, body in split_parts(output).items():
            readme = paste(readme, f"{chapter}_{name}", body)
            print(f"{readme_path}: part {name}: {body.count(chr(10)) + 1} lines")
    open(readme_path, "w", encoding="utf-8").write(readme)


if __name__ == "__main__":
    main(sys.argv[1:])
