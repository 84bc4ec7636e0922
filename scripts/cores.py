#!/usr/bin/env python3
"""Keeps each lesson's core excerpts and part headings the same as its program's source.

    scripts/cores.py [--write | --check] [CHAPTER_DIR...]     the core excerpts
    scripts/cores.py --headings [CHAPTER_DIR...]              the part headings
    scripts/cores.py --list [CHAPTER_DIR...]                  each core's name and size

Without CHAPTER_DIR, every chapters/NN_*/ folder (run in the repository's root).

A core is the few lines of one part's taught calls, marked in the program's source with comment
lines. The block form:

    // core: cross-stream
    ... the lines of the excerpt ...
    // end core

or, where a program has no room for two more lines, a counted form on one line: a comment line
(the excerpt is the N lines after it), which may keep the text of the comment it replaced (that
text then opens the excerpt as a comment), or a trailing comment on the excerpt's first line
(N counts that line):

    // core: cross-stream (9 lines): the fix: c waits for p's event
    cudaEvent_t done = nullptr;  // core: cross-stream (9 lines)

The excerpt is the lines between the markers (or the N lines after the counted marker), the
markers themselves left out, dedented. A core is named by its part (`--part NAME`).

In the lesson (README.md), each part section (`## Part N: NAME: ...`) opens with its core,
right after the heading:

    <!-- core: NAME -->
    ```cpp
    ... the excerpt ...
    ```
    <!-- end core -->

--write puts each excerpt into its part section (replacing the one there, or inserting it right
after the heading). --check (the default; the repo.core_excerpts test) exits 1 when a part
section has no core or does not open with it, an excerpt differs from the source, a core names no
part, or a marker is malformed; and when a core breaks the rule of docs/writing_a_chapter.md: an
excerpt (counted as the lesson shows it) of fewer than 5 or more than 25 lines, or one without a
taught call outside comments and strings. A taught call is what scripts/program_shape.py counts
as taught: the reading path's READING_TAUGHT (`cudaX(`, `cuX(`, `<<<`, `__global__`, at::cuda
and c10::cuda, torch.cuda, wait_stream/record_stream, graphs), its CALL (the CUDA libraries'
calls on a stream: cuBLAS, cuRAND, cuFFT, Thrust, CUB), or in a .cpp program its TORCH_CALL
(PyTorch's stream calls: `.synchronize()`, CUDAStreamGuard...). --write reports those too, after
writing.

--headings (the repo.part_headings test) exits 1 when a lesson's `## Part N: NAME: TITLE`
headings are not, in order, the parts that the program declares in `cs::Parts` and prints as
`== Part N of M: NAME: TITLE` (code spans in the heading read as their text).
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from program_shape import CALL, READING_TAUGHT, TORCH_CALL, strip  # noqa: E402 (taught calls)

START = re.compile(r"^\s*// core: ([a-z0-9][a-z0-9_-]*)(?: \((\d+) lines?\))?(?:: (.*))?$")
TRAILING = re.compile(r"^(\s*\S.*?)\s*// core: ([a-z0-9][a-z0-9_-]*) \((\d+) lines?\)$")
END = re.compile(r"^\s*// end core\s*$")
ANY_MARKER = re.compile(r"//\s*(core:|end core)")
PART_HEADING = re.compile(r"^## Part (\d+): ([a-z0-9_-]+): (.*?)(?:\s*\{#[^}]*\})?\s*$")
README_START = re.compile(r"^<!-- core: ([a-z0-9][a-z0-9_-]*) -->$")
README_END = "<!-- end core -->"
CORE_MIN_LINES, CORE_MAX_LINES = 5, 25  # docs/writing_a_chapter.md, "Cores"


def program_of(chapter):
    """The chapter's program: <topic>.cu or <topic>.cpp."""
    topic = re.sub(r"^\d\d_", "", os.path.basename(chapter.rstrip("/")))
    for ext in (".cu", ".cpp"):
        path = os.path.join(chapter, topic + ext)
        if os.path.exists(path):
            return path
    return None


def dedent(lines):
    width = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return [l[width:].rstrip() if l.strip() else "" for l in lines]


def extract(path):
    """{name: excerpt lines} of the program at @p path, and a list of problems."""
    lines = open(path, encoding="utf-8").read().split("\n")
    cores, problems = {}, []
    i = 0
    while i < len(lines):
        line = lines[i]
        match = START.match(line)
        trailing = None if match else TRAILING.match(line)
        if trailing:  # the marked code line is the excerpt's first line
            name, count = trailing.group(2), int(trailing.group(3))
            body = [trailing.group(1)] + lines[i + 1: i + count]
            if len(body) < count:
                problems.append(f"{path}:{i + 1}: core {name} counts past the end of the file")
            if name in cores:
                problems.append(f"{path}:{i + 1}: core {name} marked twice")
            for j, inner in enumerate(body[1:]):
                if ANY_MARKER.search(inner):
                    problems.append(f"{path}:{i + 2 + j}: a marker inside core {name}")
            cores[name] = dedent(body)
            i += count
            continue
        if not match:
            if END.match(line):
                problems.append(f"{path}:{i + 1}: '// end core' without '// core: NAME'")
            elif ANY_MARKER.search(line):
                problems.append(f"{path}:{i + 1}: malformed core marker: {line.strip()}")
            i += 1
            continue
        name, count, text = match.group(1), match.group(2), match.group(3)
        indent = line[: len(line) - len(line.lstrip())]
        head = [indent + "// " + text] if text else []
        if count:
            body = lines[i + 1: i + 1 + int(count)]
            if len(body) < int(count):
                problems.append(f"{path}:{i + 1}: core {name} counts past the end of the file")
            stop = i + 1 + int(count)
        else:
            stop = next((j for j in range(i + 1, len(lines)) if END.match(lines[j])), None)
            if stop is None:
                problems.append(f"{path}:{i + 1}: core {name} has no '// end core'")
                break
            body = lines[i + 1: stop]
            stop += 1
        for j, inner in enumerate(body):
            if ANY_MARKER.search(inner):
                problems.append(f"{path}:{i + 2 + j}: a marker inside core {name}")
        if name in cores:
            problems.append(f"{path}:{i + 1}: core {name} marked twice")
        excerpt = dedent(head + body)
        while excerpt and not excerpt[-1]:
            excerpt.pop()
        cores[name] = excerpt
        i = stop
    return cores, problems


def has_taught_call(excerpt, torch=False):
    """Whether a line of the excerpt holds a taught call outside comments and strings, as
    scripts/program_shape.py counts them (READING_TAUGHT or CALL; TORCH_CALL where @p torch, a
    .cpp program on the PyTorch C++ API)."""
    patterns = [READING_TAUGHT, CALL] + ([TORCH_CALL] if torch else [])
    in_block = False
    for line in excerpt:
        code, in_block = strip(line, in_block)
        if any(p.search(code) for p in patterns):
            return True
    return False


def rule_problems(chapter, program, cores):
    """The cores of @p chapter that break the rule: 5 to 25 lines, at least one taught call."""
    problems = []
    where = os.path.basename(chapter.rstrip("/"))
    for name, excerpt in cores.items():
        size = len(excerpt)
        if size < CORE_MIN_LINES or size > CORE_MAX_LINES:
            problems.append(f"{where}: part {name}: the core is {size} lines (a core is "
                            f"{CORE_MIN_LINES} to {CORE_MAX_LINES}): move its markers")
        if not has_taught_call(excerpt, program.endswith(".cpp")):
            problems.append(f"{where}: part {name}: the core has no taught call (a CUDA call, "
                            f"kernel or launch, or a CUDA library's or PyTorch's stream call): "
                            f"mark the lines of the calls the part teaches")
    return problems


def block(name, excerpt):
    return [f"<!-- core: {name} -->", "```cpp"] + excerpt + ["```", README_END]


def sections(lines):
    """(heading index, part name, end index) of each `## Part N: NAME: ...` section."""
    heads = [(i, PART_HEADING.match(l)) for i, l in enumerate(lines) if l.startswith("## ")]
    out = []
    for k, (i, match) in enumerate(heads):
        if match:
            end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
            out.append((i, match.group(2), end))
    return out


def readme_cores(lines, start, end):
    """{name: (first line, last line, excerpt)} of the core blocks between start and end."""
    found = {}
    i = start
    while i < end:
        match = README_START.match(lines[i])
        if match:
            close = next((j for j in range(i, end) if lines[j] == README_END), None)
            if close is None or lines[i + 1] != "```cpp" or lines[close - 1] != "```":
                found[match.group(1)] = (i, i, None)
                i += 1
                continue
            found[match.group(1)] = (i, close, lines[i + 2: close - 1])
            i = close
        i += 1
    return found


def sync(chapter, write):
    program = program_of(chapter)
    readme_path = os.path.join(chapter, "README.md")
    if not program or not os.path.exists(readme_path):
        return [f"{chapter}: no program or no README.md"]
    cores, problems = extract(program)
    lines = open(readme_path, encoding="utf-8").read().split("\n")
    parts = sections(lines)
    part_names = [name for _, name, _ in parts]
    for name in cores:
        if name not in part_names:
            problems.append(f"{program}: core {name} names no part section of {readme_path}")
    # From the last section up, so that inserting lines keeps the earlier indices.
    for heading, name, end in reversed(parts):
        found = readme_cores(lines, heading + 1, end)
        for other in found:
            if other != name:
                problems.append(f"{readme_path}: part {name} holds the core of {other}")
        if name not in cores:
            problems.append(f"{readme_path}: part {name} has no core: mark its taught calls in "
                            f"{program} with '// core: {name}' ... '// end core'")
            continue
        want = block(name, cores[name])
        if name in found:
            first, last, excerpt = found[name]
            if any(line.strip() for line in lines[heading + 1: first]):
                problems.append(f"{readme_path}: part {name} does not open with its core (text "
                                f"stands between its heading and the core): move the core up")
            if excerpt == cores[name]:
                continue
            if write:
                lines[first: last + 1] = want
            else:
                problems.append(f"{readme_path}: the core of part {name} differs from {program} "
                                f"(run scripts/cores.py --write {chapter})")
        elif write:
            lines[heading + 1: heading + 1] = [""] + want
        else:
            problems.append(f"{readme_path}: part {name} does not open with its core "
                            f"(run scripts/cores.py --write {chapter})")
    if write:
        with open(readme_path, "w", encoding="utf-8") as out:
            out.write("\n".join(lines))
    return problems + rule_problems(chapter, program, cores)


def declared_parts(program):
    """[(name, title)] of the program's cs::Parts list, read from its source."""
    text = open(program, encoding="utf-8").read()
    text = re.sub(r"//[^\n]*", "", text)
    match = re.search(r"cs::Parts\s+\w+\s*\(\s*\w+\s*,\s*", text)
    if not match:
        return None
    at = match.end()
    if text[at] != "{":  # a named list: find its definition
        name = re.match(r"\w+", text[at:]).group(0)
        definition = re.search(r"\b" + name + r"\s*=\s*\{", text)
        if not definition:
            return None
        at = definition.end() - 1
    depth, end = 0, at
    for end in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
    pairs = re.findall(r'\{\s*"([^"]+)"\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\}', text[at: end + 1])
    return [(n, "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', t)).replace('\\"', '"'))
            for n, t in pairs]


def headings(chapter):
    program = program_of(chapter)
    readme_path = os.path.join(chapter, "README.md")
    if not program or not os.path.exists(readme_path):
        return [f"{chapter}: no program or no README.md"]
    declared = declared_parts(program)
    if not declared:
        return [f"{program}: no cs::Parts list found"]
    found = []
    for line in open(readme_path, encoding="utf-8").read().split("\n"):
        match = PART_HEADING.match(line)
        if match:
            found.append((int(match.group(1)), match.group(2), match.group(3).replace("`", "")))
    want = [(k + 1, n, t) for k, (n, t) in enumerate(declared)]
    problems = []
    for k in range(max(len(want), len(found))):
        w = want[k] if k < len(want) else None
        f = found[k] if k < len(found) else None
        if w != f:
            got = f"'## Part {f[0]}: {f[1]}: {f[2]}'" if f else "missing"
            printed = f"'== Part {w[0]} of {len(want)}: {w[1]}: {w[2]}'" if w else "no such part"
            problems.append(f"{readme_path}: heading {k + 1} is {got}; the program prints {printed}")
    return problems


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    modes = [a for a in argv if a.startswith("--")]
    unknown = [m for m in modes if m not in ("--write", "--check", "--headings", "--list")]
    if unknown or len(modes) > 1:
        print(f"cores.py: {'unknown option ' + unknown[0] if unknown else 'one mode at a time'}"
              " (see --help)", file=sys.stderr)
        return 2
    mode = modes[0] if modes else "--check"
    chapters = [a for a in argv if not a.startswith("--")]
    if not chapters:
        chapters = sorted(glob.glob("chapters/[0-9][0-9]_*/"))
    if not chapters:
        print("cores.py: no chapters/NN_*/ folder here (run in the repository's root)",
              file=sys.stderr)
        return 2
    problems = []
    for chapter in chapters:
        if mode == "--headings":
            problems += headings(chapter)
        elif mode == "--list":
            program = program_of(chapter)
            cores, found = extract(program) if program else ({}, [f"{chapter}: no program"])
            problems += found
            for name, excerpt in cores.items():
                print(f"{program}: {name}: {len(excerpt)} lines")
        else:
            problems += sync(chapter, mode == "--write")
    for problem in problems:
        print(problem)
    if mode != "--list":
        what = "headings" if mode == "--headings" else "core excerpts"
        print(f"{len(chapters)} chapters: {len(problems)} problems with {what}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
