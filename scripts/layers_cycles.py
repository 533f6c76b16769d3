#!/usr/bin/env python3
"""layers_cycles.py — make layers' second check: no circle of files inside a
folder (docs/internals.md#layers).

Within each folder of the compiler and runtime, file A depends on file B
when A's object uses a global symbol (function or data) that B's object
defines (nm: A's undefined symbols against B's defined ones).  A circle in
that graph -- A needs B and B, through others, needs A -- means neither file
can be read, tested or moved without the other; it fails the check unless
all of its files form one entry of ALLOWED below: files that are one
algorithm split for size, recursing through each other by design.

Usage: layers_cycles.py [OBJ_DIR]   (default build/obj: the objects of make all)
       layers_cycles.py --self-test (builds two objects that call each other
                                     and expects the check to fail)
"""
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from io import StringIO

# folder -> groups of files (object names without .o) that may form a
# circle among themselves, each with the reason.  Keep it short: a new
# circle is split (a leaf file for the shared helpers, the caller-side
# part moved up) rather than added here.
ALLOWED = {
    "frontend": [
        # the lowering walk: a layer's body lowers calls, which lower layers
        {"lower", "lower_blocks", "lower_layers", "lower_slice"},
    ],
}

# The folders checked, as under OBJ_DIR (generated code, gen/, is not ours).
FOLDERS = ["base", "runtime", "runtime/gpu", "ir", "grammar", "io", "frontend", "passes", "codegen",
           "compiler"]


def symbols(obj):
    """(defined global symbols, undefined symbols) of one object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, undefined


def file_graph(folder_dir, src_dir):
    """file -> {file it uses: [symbols]} for the objects in one folder
    (src_dir: only those whose source is there, no stale object; None: all)."""
    files = sorted(f[:-2] for f in os.listdir(folder_dir) if f.endswith(".o"))
    if src_dir:
        files = [f for f in files if any(os.path.exists(os.path.join(src_dir, f + e)) for e in (".c", ".cpp"))]
    owner, uses = {}, {}
    for f in files:
        defined, undefined = symbols(os.path.join(folder_dir, f + ".o"))
        for s in defined:
            owner.setdefault(s, f)
        uses[f] = undefined
    graph = {f: {} for f in files}
    for f in files:
        for s in sorted(uses[f]):
            g = owner.get(s)
            if g and g != f:
                graph[f].setdefault(g, []).append(s)
    return graph


def circles(graph):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def check(obj_dir, allowed, src_root=None):
    bad = 0
    for folder in FOLDERS:
        d = os.path.join(obj_dir, folder)
        if not os.path.isdir(d):
            continue
        graph = file_graph(d, os.path.join(src_root, folder) if src_root else None)
        for comp in circles(graph):
            if any(set(comp) <= group for group in allowed.get(folder, [])):
                continue
            bad += 1
            print("layers: %s/: the files %s form a circle:" % (folder, ", ".join(c + ".c" for c in comp)))
            for f in comp:
                for g, syms in sorted(graph[f].items()):
                    if g in comp:
                        more = " ..." if len(syms) > 3 else ""
                        print("  %s.c -> %s.c (%s%s)" % (f, g, ", ".join(syms[:3]), more))
    return bad


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "compiler")
        os.makedirs(d)
        for name, other in (("a", "b"), ("b", "a")):
            src = os.path.join(tmp, name + ".c")
            with open(src, "w") as f:
                f.write("int %s_fn(int n);\nint %s_fn(int n) { return n ? %s_fn(n - 1) : 0; }\n"
                        % (other, name, other))
            subprocess.run([os.environ.get("CC", "cc"), "-c", src, "-o", os.path.join(d, name + ".o")],
                           check=True)
        with redirect_stdout(StringIO()):
            caught, allowed = check(tmp, {}), check(tmp, {"compiler": [{"a", "b"}]})
        if caught == 0:
            print("FAIL: layers: a circle of files (a.c <-> b.c) was not caught")
            return 1
        if allowed != 0:
            print("FAIL: layers: an allowed circle of files was reported")
            return 1
    print("PASS: layers: a circle of files inside a folder is caught")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    obj_dir = argv[1] if len(argv) > 1 else os.path.join(here, "build", "obj")
    if not os.path.isdir(obj_dir):
        print("layers: no objects in %s: run make all before the cycle check" % obj_dir)
        return 1
    return 1 if check(obj_dir, ALLOWED, here) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
