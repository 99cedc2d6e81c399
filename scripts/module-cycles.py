#!/usr/bin/env python3
"""Fails when modules of one crate depend on each other in a cycle.

For every crate of the workspace, each source file is a module (`a/b.rs` and `a/b/mod.rs` are
`a::b`); a `crate::…`, `super::…` or `self::…` path in it is an edge to the module it names.
Edges count between siblings: `a::b` using `a::c::d` is an edge b -> c under `a`. Tests are left
out (a test module may use anything of its parent). Prints each cycle found and exits 1, or says
how many modules it checked."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ["server/types", "server/engine", "server/prover", "server", "proto", "bench-client",
          "monitor-ui/model", "monitor-ui/app"]
PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")


def module_of(src: Path, file: Path) -> list[str]:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return parts


def is_test(file: Path) -> bool:
    name = file.stem
    return name == "tests" or name.endswith("_tests") or "tests" in file.parts[:-1]


def strip_tests(text: str) -> str:
    """Drops `#[cfg(test)]` items (a test module inline, or `mod tests;`)."""
    out, skip, depth = [], False, 0
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("#[cfg(test)]"):
            # Skip the attribute and the item after it (a one-line item or a braced block).
            i += 1
            while i < len(lines) and lines[i].strip().startswith("#["):
                i += 1
            if i < len(lines) and "{" in lines[i]:
                depth = lines[i].count("{") - lines[i].count("}")
                i += 1
                while i < len(lines) and depth > 0:
                    depth += lines[i].count("{") - lines[i].count("}")
                    i += 1
            else:
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


GROUP = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^{}]*)\}")


def paths(text: str):
    """(head, names) of every path, `a::{b::c, d}` groups spelled out."""
    for m in GROUP.finditer(text):
        prefix = [n for n in m.group(2).split("::") if n]
        for item in m.group(3).split(","):
            item = item.strip().split(" as ")[0]
            if item and item != "self" and item != "*":
                yield m.group(1), prefix + [n for n in item.split("::") if n]
            elif item:
                yield m.group(1), prefix
    for m in PATH.finditer(text):
        yield m.group(1), [n for n in m.group(2).split("::") if n and n != "{"]


def targets(module: list[str], text: str):
    text = "\n".join(line.split("//")[0] for line in text.splitlines())
    for head, names in paths(text):
        names = list(names)
        if head == "crate":
            base = []
        elif head == "self":
            base = list(module)
        else:
            base = list(module[:-1])
            while names and names[0] == "super":
                names.pop(0)
                base = base[:-1]
        yield base + names


def cycles(crate: str):
    src = ROOT / crate / "src"
    if not src.is_dir():
        return 0, []
    modules = {}
    for file in sorted(src.rglob("*.rs")):
        if is_test(file):
            continue
        modules[tuple(module_of(src, file))] = strip_tests(file.read_text())
    known = set(modules)
    edges = {}
    for module, text in modules.items():
        for target in targets(list(module), text):
            # The longest known module the path names.
            while target and tuple(target) not in known:
                target = target[:-1]
            target = tuple(target)
            common = 0
            while common < min(len(module), len(target)) and module[common] == target[common]:
                common += 1
            if common == len(module) or common == len(target):
                continue  # a module and its own parent or child
            parent = module[:common]
            edges.setdefault(parent, {}).setdefault(module[common], set()).add(target[common])
    found = []
    for parent, graph in edges.items():
        found += [("::".join(("crate",) + parent), c) for c in graph_cycles(graph)]
    return len(modules), found


def graph_cycles(graph):
    """Each strongly connected component of more than one node, as a sorted list."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main():
    total, bad = 0, []
    for crate in CRATES:
        count, found = cycles(crate)
        total += count
        bad += [(crate, parent, c) for parent, c in found]
    for crate, parent, cycle in bad:
        print(f"module cycle in {crate}, under {parent}: {' <-> '.join(cycle)}")
    if bad:
        sys.exit(1)
    print(f"no module cycles ({total} modules in {len(CRATES)} crates)")


if __name__ == "__main__":
    main()
