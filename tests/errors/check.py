"""Checks the error catalogue docs/errors.md against the compiler.

Every entry (a '### ID: title' heading) carries an example: an ```ax block
written to model.ax, an optional ```py block run first (it makes weight or
.npy files), an optional ```sh block (the command; default
`$AXC model.ax -o out.c`), an 'expect: `REGEX`' line that must match axc's
stderr and a 'status: `N`' line with the exit status.  An entry for a
diagnostic no input reaches names a cmocka test instead ('unit: `BINARY
TEST`') and the messages that test asserts ('message: `TEXT`' lines): it
passes when the test's source holds each message and the test passes.  One
PASS/FAIL line per entry.  Then coverage: every diagnostic format string in the compiler
sources (the first string literal of each ax_error/ax_warning/ax_note/
axc_fail/fail/ox_fail/tfl_fail call (ox_fail and tfl_fail: the ONNX and
TFLite importers', which prefix the node or operator), and of the messages they pass through) is turned into a
pattern and looked for in the stderr of all examples together; the last
line reports triggered/total and the uncovered formats are listed after
it.  Usage: check.py CATALOGUE ROOT   (AXC and PYTHON from the environment)."""
import glob
import os
import re
import subprocess
import sys
import tempfile

DIAG_CALL = re.compile(r'\b(ax_error|ax_warning|ax_note|axc_fail|fail|ox_fail|tfl_fail|ax_sprintf)\s*\(')
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
SOURCES = ("base", "ir", "grammar", "frontend", "io", "passes", "codegen", "compiler")


def parse_catalogue(text):
    entries = []
    for chunk in re.split(r'^### ', text, flags=re.M)[1:]:
        ident = chunk.split(':', 1)[0].strip()
        blocks = dict((k, v) for k, v in re.findall(r'^```(\w+)\n(.*?)^```', chunk, re.M | re.S))
        expect = re.search(r'^expect: `(.*)`\s*$', chunk, re.M)
        status = re.search(r'^status: `(\d+)`', chunk, re.M)
        unit = re.search(r'^unit: `(\w+) (\w+)`', chunk, re.M)
        entries.append({"id": ident, "blocks": blocks,
                        "expect": expect.group(1) if expect else None,
                        "status": int(status.group(1)) if status else None,
                        "unit": unit.groups() if unit else None,
                        "messages": re.findall(r'^message: `(.*)`\s*$', chunk, re.M)})
    return entries


def run_entry(e, axc, python):
    """Runs one example in a fresh directory; returns (ok, why, stderr)."""
    if e["expect"] is None or e["status"] is None:
        return False, "entry lacks an expect: or status: line", ""
    with tempfile.TemporaryDirectory() as d:
        if "ax" in e["blocks"]:
            open(os.path.join(d, "model.ax"), "w").write(e["blocks"]["ax"])
        if "py" in e["blocks"]:
            subprocess.run([python, "-c", e["blocks"]["py"]], cwd=d, check=True)
        cmd = e["blocks"].get("sh", '"$AXC" model.ax -o out.c').strip()
        env = dict(os.environ, AXC=axc)
        if ("mpirun" in cmd or "OMPI_" in cmd) and "ASAN_OPTIONS" in env:
            # Open MPI's MPI_Init allocations are never freed (the library
            # keeps them to exit, unsymbolised): LeakSanitizer would report
            # them in every process an entry starts under mpirun (or with its
            # OMPI_ variables, which load libaxrt_mpi).  Leaks of
            # axc's own code stay checked by every other entry.
            env["ASAN_OPTIONS"] += ":detect_leaks=0"
        p = subprocess.run(["bash", "-c", cmd], cwd=d, env=env, capture_output=True, text=True,
                           errors="replace", timeout=120)
    why = []
    if p.returncode != e["status"]:
        why.append("exit status %d, expected %d" % (p.returncode, e["status"]))
    if not re.search(e["expect"], p.stderr):
        why.append("stderr does not match /%s/" % e["expect"])
    if "internal error" in p.stderr or "Sanitizer" in p.stderr:
        why.append("internal error or sanitizer report")
    return not why, "; ".join(why) + "\n" + p.stderr, p.stderr


def c_function_text(source, name):
    """The string literals of C function `name` in source, adjacent ones
    joined (escapes kept as written); None when there is no such function."""
    m = re.search(r'^static void %s\(.*?^}' % re.escape(name), source, re.M | re.S)
    if not m:
        return None
    body = re.sub(r'"\s*\n\s*"', '', m.group(0))
    return "\n".join(STRING.findall(body))


def unit_results(build, binary, cache):
    """Names of the passing tests of one cmocka binary (run once)."""
    if binary not in cache:
        p = subprocess.run([os.path.join(build, "tests", binary)], capture_output=True, text=True,
                           env=dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP"), timeout=600)
        cache[binary] = set(re.findall(r'^ok \d+ - (\w+)', p.stdout, re.M))
    return cache[binary]


def check_unit_entry(e, root, build, cache):
    """A unit entry: (ok, why, the messages as diagnostic lines)."""
    binary, test = e["unit"]
    if not e["messages"]:
        return False, "entry lacks message: lines", ""
    src_path = os.path.join(root, "tests", "unit", binary + ".c")
    text = c_function_text(open(src_path).read(), test) if os.path.exists(src_path) else None
    if text is None:
        return False, "no function %s in tests/unit/%s.c" % (test, binary), ""
    why = ["%s does not assert '%s'" % (test, m) for m in e["messages"] if m not in text]
    if test not in unit_results(build, binary, cache):
        why.append("%s/tests/%s: %s did not pass" % (build, binary, test))
    return not why, "; ".join(why), "\n".join("error: " + m for m in e["messages"])


def format_to_regex(fmt):
    """A C format string as a regex: conversions match any text."""
    fmt = bytes(fmt, "ascii").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
    parts = re.split(r'%[-+ #0-9.*]*(?:hh|h|ll|l|z|j)?[a-zA-Z%]', fmt)
    return ".*?".join(re.escape(p) for p in parts)


def diagnostic_formats(root):
    """Format strings of the diagnostics in the sources (pure '%s'
    pass-throughs excluded: their text comes from elsewhere)."""
    formats = set()
    for folder in SOURCES:
        for name in sorted(os.listdir(os.path.join(root, folder))):
            if not name.endswith((".c", ".y", ".l")):
                continue
            text = open(os.path.join(root, folder, name)).read()
            text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
            # Code for a build without an optional front or back end
            # (#ifndef AXC_ONNX ... #else): the test build has them, so no
            # input can reach it there.
            text = re.sub(r'^#ifndef AXC_\w+\n.*?^#else\n', '', text, flags=re.S | re.M)
            for m in DIAG_CALL.finditer(text):
                if m.group(1) == "ax_sprintf" and "lower_unknown" not in text[max(0, m.start() - 60):m.start()]:
                    continue
                lits = []
                rest = text[m.end():]
                first = STRING.search(rest)
                if not first or ';' in rest[:first.start()]:
                    continue
                pos = first.start()
                while True:   # adjacent literals concatenate
                    s = STRING.match(rest, pos)
                    if not s:
                        break
                    lits.append(s.group(1))
                    pos = s.end()
                    while pos < len(rest) and rest[pos] in " \t\n":
                        pos += 1
                fmt = "".join(lits)
                if re.sub(r'%[a-z]+', '', fmt).strip():
                    formats.add((name, fmt))
    return sorted(formats)


def main():
    catalogue, root = sys.argv[1], sys.argv[2]
    axc = os.path.abspath(os.environ.get("AXC", os.path.join(root, "build/bin/axc")))
    python = os.environ.get("PYTHON", "/usr/bin/python3")
    all_stderr = []
    entries = parse_catalogue(open(catalogue).read())
    build = os.environ.get("AXC_BUILD", os.path.dirname(os.path.dirname(axc)))
    unit_cache = {}
    for e in entries:
        if e["unit"]:
            ok, why, err = check_unit_entry(e, root, build, unit_cache)
        else:
            ok, why, err = run_entry(e, axc, python)
        all_stderr.append(err)
        print("%s: errors:%s" % ("PASS" if ok else "FAIL", e["id"]), flush=True)
        if not ok:
            print("\n".join("  " + l for l in why.splitlines()[:12]))
    # diagnostic lines only, cut short: the patterns backtrack on long text
    lines = sorted(set(l[:300] for err in all_stderr for l in err.splitlines()
                       if re.search(r"(error|warning|note): ", l)))
    formats = diagnostic_formats(root)
    missed = [(f, s) for f, s in formats
              if not any(re.search(format_to_regex(s), l) for l in lines)]
    covered = len(formats) - len(missed)
    summary = ("%d catalogue entries; %d of %d diagnostic formats triggered (%.0f%%)"
               % (len(entries), covered, len(formats), 100.0 * covered / max(1, len(formats))))
    print("%s: errors: coverage: %s" % ("FAIL" if missed else "PASS", summary))
    for f, s in missed:
        print("  not triggered: %s: %s" % (f, s))
    check_readme_figures(root, entries, covered, len(formats))


def check_readme_figures(root, entries, covered, nformats):
    """The "Hostile input" table (docs/cli.md; README.md or any docs/*.md
    will do) quotes the catalogue's size and coverage: it must say what this
    run found."""
    docs = [os.path.join(root, "README.md")] + sorted(
        p for p in glob.glob(os.path.join(root, "docs", "*.md")) if not p.endswith("errors.md"))
    text = "".join(open(p).read() for p in docs)
    internal = sum(1 for e in entries if e["unit"])
    want = [("%d entries in `docs/errors.md`: %d triggered by their examples, %d internal checks"
             % (len(entries), len(entries) - internal, internal)),
            "%d of %d format strings" % (covered, nformats)]
    absent = [w for w in want if w not in text]
    print("%s: errors: the docs quote the catalogue's figures" % ("FAIL" if absent else "PASS"))
    for w in absent:
        print("  docs/cli.md (Hostile input) lacks: " + w)

if __name__ == "__main__":
    main()
