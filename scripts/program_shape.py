#!/usr/bin/env python3
"""Measures how a chapter's program reads: its length, its longest function, and the share of
its code lines that are kernels or calls to the CUDA API.

    scripts/program_shape.py [--check] [--exempt REGEX] PROGRAM...

A code line is a line that is neither blank nor only a comment. A taught line is a line inside a
__global__ function, or a line of a statement that calls the CUDA runtime or driver API
(`cudaX(`, `cuX(`) or launches a kernel (`<<<`); in a C++ program on the PyTorch C++ API (.cpp),
also a statement that calls PyTorch's CUDA stream API (`c10::cuda::`, `at::cuda::`,
`CUDAStreamGuard`, `record_stream`, `synchronize`, `wait_stream` (Python's Stream.wait_stream,
written as a function in C++), a graph's `capture_begin`...). With --check, exits 1 when a program is longer
than 450 lines, has a function longer than 90 lines, or has a taught share under a quarter;
programs whose path matches --exempt (chapters not yet on the lesson-first layout) are only
measured.
"""
import re
import sys

MAX_LINES = 450
MAX_FUNCTION = 90
MIN_SHARE = 0.25

CALL = re.compile(r"\bcu(da)?[A-Z]\w*\s*\(|<<<")
TORCH_CALL = re.compile(
    r"\b(c10|at|torch)::cuda::|\bCUDA(Stream|StreamGuard|MultiStreamGuard|Event|Graph)\b|"
    r"\bwait_stream\s*\(|"
    r"\.(record_stream|synchronize|wait_event|record_event|capture_begin|capture_end|"
    r"replay|record|block|query)\s*\(")
CONTAINER = re.compile(r"^\s*(namespace\b|extern\b|(template\s*<.*>\s*)?(struct|class|union)\b)")


def strip(line, in_block):
    """The line without comments and string contents; whether a block comment is still open."""
    out, i = [], 0
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_block = end + 2, False
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            in_block = True
            i += 2
        elif line[i] in "\"'":
            quote, j = line[i], i + 1
            while j < len(line) and line[j] != quote:
                j += 2 if line[j] == "\\" else 1
            out.append(quote + quote)
            i = j + 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_block


def measure(path):
    calls = [CALL, TORCH_CALL] if path.endswith(".cpp") else [CALL]
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    code = []
    in_block = False
    for line in lines:
        text, in_block = strip(line, in_block)
        code.append(text)
    # Functions: a '{' opened where only namespaces, structs and classes are open, after a
    # statement that has a '('.
    stack = []  # ("container" | "function" | "other", start line, is kernel)
    functions = []  # (name, first line, last line, is kernel)
    statement = ""
    statement_start = 0
    kernel_lines = set()
    for number, text in enumerate(code):
        if text.lstrip().startswith("#"):  # a preprocessor line ends no statement of its own
            statement, statement_start = "", number + 1
            continue
        for ch in text:
            if ch == "{":
                at_top = all(kind == "container" for kind, _, _, _ in stack)
                head = statement.strip()
                if at_top and CONTAINER.match(head) and "(" not in head.split("{")[0].split(":")[0]:
                    stack.append(("container", number, False, ""))
                elif at_top and "(" in head and not re.match(r"^(if|for|while|switch)\b", head):
                    name = re.findall(r"([~\w:]+)\s*\(", head)
                    stack.append(("function", statement_start, "__global__" in head,
                                  name[0] if name else "?"))
                else:
                    stack.append(("other", number, False, ""))
                statement = ""
                statement_start = number + 1
            elif ch == "}":
                if stack:
                    kind, start, kernel, name = stack.pop()
                    if kind == "function":
                        functions.append((name, start, number, kernel))
                        if kernel:
                            kernel_lines.update(range(start, number + 1))
                statement = ""
                statement_start = number + 1
            elif ch == ";":
                statement = ""
                statement_start = number + 1
            else:
                if not statement.strip() and not ch.isspace():
                    statement_start = number
                statement += ch
        statement += " "
    code_lines = [n for n, text in enumerate(code) if text.strip()]
    taught = set(kernel_lines)
    # Statements that call the CUDA API, all of their lines.
    start = None
    for n in code_lines:
        if start is None:
            start = n
        text = code[n].rstrip()
        if text.endswith((";", "{", "}")) or text.lstrip().startswith("#"):
            block = [m for m in range(start, n + 1) if code[m].strip()]
            if any(c.search(code[m]) for c in calls for m in block):
                taught.update(block)
            start = None
    taught &= set(code_lines)
    longest = max(functions, key=lambda f: f[2] - f[1] + 1, default=("-", 0, -1, False))
    return {
        "lines": len(lines),
        "code": len(code_lines),
        "taught": len(taught),
        "longest": (longest[0], longest[2] - longest[1] + 1),
    }


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    exempt = None
    if "--exempt" in argv:
        at = argv.index("--exempt")
        if at + 1 >= len(argv):
            print("program_shape.py: --exempt needs a regular expression", file=sys.stderr)
            return 2
        exempt = re.compile(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    paths = argv
    unknown = [a for a in paths if a.startswith("-")]
    if unknown:
        print(f"program_shape.py: unknown option {unknown[0]} (see --help)", file=sys.stderr)
        return 2
    if not paths:
        print(__doc__.strip())
        return 2
    failures = 0
    print(f"{'program':58} {'lines':>5} {'code':>5} {'taught':>7} {'longest function':>30}")
    for path in paths:
        m = measure(path)
        share = m["taught"] / m["code"] if m["code"] else 0.0
        name, length = m["longest"]
        print(f"{path:58} {m['lines']:5d} {m['code']:5d} {share:6.0%} {name + '()':>24} {length:4d}")
        problems = []
        if m["lines"] > MAX_LINES:
            problems.append(f"{m['lines']} lines (at most {MAX_LINES})")
        if length > MAX_FUNCTION:
            problems.append(f"{name}() is {length} lines (at most {MAX_FUNCTION})")
        if share < MIN_SHARE:
            problems.append(f"kernels and CUDA calls are {share:.0%} of the code (at least 25%)")
        if check and problems and not (exempt and exempt.search(path)):
            failures += 1
            print(f"  {path}: " + "; ".join(problems))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
