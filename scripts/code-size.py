#!/usr/bin/env python3
"""Holds the Rust sources to two sizes: no file over 600 lines, no function outside the tests
over 100 lines.

    python3 scripts/code-size.py            # exit 1 naming each file or function over its size

How it counts: every `.rs` file git tracks (generated code is not tracked) is measured in lines.
A function runs from its `fn` line to the line of its closing brace, found by counting braces with
string literals (plain, byte and raw) and comments taken out first. Test code is left out: files
under `tests/`, `benches/`, `examples/` and `fuzz/`, files named `tests.rs` or `*_tests.rs`,
modules a parent declares under `#[cfg(test)]` (`#[cfg(test)] mod fixture;` leaves out
`fixture.rs`), and everything from an inline `#[cfg(test)] mod …` to the end of its file.
"""

import os
import re
import subprocess
import sys

MAX_FILE_LINES = 600
MAX_FN_LINES = 100
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_DIRS = ("tests", "benches", "examples", "fuzz")
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def tracked_sources():
    out = subprocess.run(["git", "ls-files", "*.rs"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if p]


def code_only(text):
    """The text with comments and string literals blanked (newlines kept), so braces count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif re.match(r"b?r#*\"", text[i:i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r"b?r(#*)\"", text[i:])
            end = text.find("\"" + m.group(1), i + m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == "\"" or (c == "b" and text.startswith("b\"", i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != "\"":
                j += 2 if text[j] == "\\" else 1
            out.append("\n" * text.count("\n", i, j + 1))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12]):
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def test_modules(paths):
    """Files that a parent declares under #[cfg(test)]."""
    skipped = set()
    for path in paths:
        text = open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()
        base = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        own = base if stem in ("lib", "main", "mod") else os.path.join(base, stem)
        for name in TEST_MOD.findall(text):
            skipped.add(os.path.join(own, name + ".rs"))
            skipped.add(os.path.join(own, name, "mod.rs"))
    return skipped


def is_test_file(path, skipped):
    parts = path.split("/")
    name = parts[-1]
    return (any(p in TEST_DIRS for p in parts[:-1]) or name == "tests.rs"
            or name.endswith("_tests.rs") or path in skipped)


def long_functions(path):
    text = code_only(open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read())
    lines = text.split("\n")
    end = len(lines)
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < end and re.match(r"\s*mod\s+\w+\s*\{", lines[i + 1]):
            end = i
            break
    found = []
    for i in range(end):
        m = FN.match(lines[i])
        if not m:
            continue
        depth, started, j = 0, False, i
        while j < end:
            for ch in lines[j]:
                if ch == "{":
                    depth, started = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if started and depth <= 0:
                break
            if not started and lines[j].rstrip().endswith(";"):
                break
            j += 1
        if started and j - i + 1 > MAX_FN_LINES:
            found.append((j - i + 1, m.group(7), i + 1))
    return found


def main():
    paths = tracked_sources()
    skipped = test_modules(paths)
    problems = []
    for path in paths:
        count = sum(1 for _ in open(os.path.join(ROOT, path), encoding="utf-8", errors="replace"))
        if count > MAX_FILE_LINES:
            problems.append(f"{path}: {count} lines (at most {MAX_FILE_LINES})")
        if not is_test_file(path, skipped):
            for n, name, line in long_functions(path):
                problems.append(f"{path}:{line}: fn {name} is {n} lines (at most {MAX_FN_LINES})")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"{len(paths)} Rust files: none over {MAX_FILE_LINES} lines, "
          f"no function outside the tests over {MAX_FN_LINES}")


if __name__ == "__main__":
    main()
