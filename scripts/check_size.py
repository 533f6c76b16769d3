#!/usr/bin/env python3
"""make check-size: fails when a source file or a function is past its seam.

Limits (docs/internals.md, "Sizes"):
  - a source file (.c .h .inc .cpp .def .y .l .py .sh) has at most 1,500 lines;
  - a function (C, C++ and Python) has at most 60 lines, counted from the
    line that names it to the line of its closing brace (C) or its last
    line (Python), both included.

Known offenders are listed in scripts/size_exceptions.txt, one a line:
  path:function:lines      a function over 60 lines
  path::lines              a file over 1,500 lines
The list may only shrink: the check fails when an unlisted file or function
is past the limit, when a listed one grew past its recorded lines, and when
a listed one is no longer past the limit (then its line must go).  A listed
one that shrank but is still past the limit is only noted.

Usage: scripts/check_size.py [--report] [ROOT]
       scripts/check_size.py --self-test
--report prints every file and function past the limits, longest first,
without judging against the list.  Exit status 0 when all holds, 1 otherwise.
Shell functions are not measured (only shell files' lengths).
"""
import ast
import os
import re
import subprocess
import sys
import tempfile

MAX_FILE_LINES = 1500
MAX_FUNCTION_LINES = 60
SOURCE_EXT = ('.c', '.h', '.inc', '.cpp', '.def', '.y', '.l', '.py', '.sh')
C_EXT = ('.c', '.h', '.inc', '.cpp')
EXCEPTIONS = 'scripts/size_exceptions.txt'
SKIP_DIRS = {'build', '.git', '.venv', 'venv', '__pycache__', 'node_modules'}


def source_files(root):
    """The repository's source files (git's list when it is a checkout)."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True,
                             text=True, check=True).stdout.split('\n')
        files = [f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subdirs, names in os.walk(root):
            subdirs[:] = [s for s in subdirs if s not in SKIP_DIRS]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SOURCE_EXT)
                  and os.path.isfile(os.path.join(root, f)))


BLANKED = re.compile(r'''//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|^[ \t]*#(?:\\\n|[^\n])*''',
                     re.S | re.M)


def blank_c(text):
    """text with comments, string and character literals and preprocessor
    lines replaced by spaces (newlines kept, so line numbers hold)."""
    def blank(m):
        s = m.group()
        inner = re.sub(r'[^\n]', ' ', s)
        return s[0] + inner[1:-1] + s[-1] if s[0] in '"\'' else inner
    return BLANKED.sub(blank, text)


HEADER_END = re.compile(r'\)\s*(?:const\s*|noexcept\s*|override\s*)*$')
NAME_BEFORE_PAREN = re.compile(r'([A-Za-z_][\w:~]*)\s*\($')
TRANSPARENT = re.compile(r'(?:extern\s*"\s*"|namespace(?:\s+\w+)?)\s*$')


def c_functions(text):
    """(name, first line, lines) of each function defined in C/C++ text:
    a brace block at file scope (or inside extern "C" / a namespace) whose
    header ends with a parameter list."""
    code = blank_c(text)
    funcs, depth, header_start, open_at, open_line = [], 0, 0, 0, 0
    transparent = []                  # depths opened by extern "C" / namespace
    for m in re.finditer(r'[{};]', code):
        i, c = m.start(), m.group()
        if c == '{':
            if depth == len(transparent):
                header = code[header_start:i]
                if TRANSPARENT.search(header.strip()):
                    transparent.append(depth + 1)
                    header_start = i + 1
                elif HEADER_END.search(header.strip()) and '=' not in _outside_parens(header):
                    name = _function_name(header)
                    if name:
                        funcs.append([name, header_start, i])
                open_at = i
            depth += 1
        elif c == '}':
            depth -= 1
            if transparent and depth + 1 == transparent[-1]:
                transparent.pop()
                header_start = i + 1
            elif depth == len(transparent):
                if funcs and funcs[-1][2] == open_at and len(funcs[-1]) == 3:
                    funcs[-1].append(i)
                header_start = i + 1
        elif c == ';' and depth == len(transparent):
            header_start = i + 1
    result = []
    for f in funcs:
        if len(f) < 4:
            continue
        name, start, _, end = f
        name_at = start + _name_offset(code[start:f[2]], name)
        first = code.count('\n', 0, name_at) + 1
        last = code.count('\n', 0, end) + 1
        result.append((name, first, last - first + 1))
    return result


def _outside_parens(header):
    depth, out = 0, []
    for c in header:
        depth += c == '('
        if depth == 0:
            out.append(c)
        depth -= c == ')'
    return ''.join(out)


def _strip_attributes(header):
    return re.sub(r'__attribute__\s*\(\(.*?\)\)', lambda m: ' ' * len(m.group()), header,
                  flags=re.S)


def _params_open(header):
    """Index of the '(' that opens the final parameter list."""
    depth = 0
    for j in range(len(header) - 1, -1, -1):
        if header[j] == ')':
            depth += 1
        elif header[j] == '(':
            depth -= 1
            if depth == 0:
                return j
    return -1


def _function_name(header):
    h = _strip_attributes(header).rstrip()
    h = re.sub(r'\)\s*(?:const\s*|noexcept\s*|override\s*)*$', ')', h)
    j = _params_open(h)
    if j < 0:
        return None
    m = NAME_BEFORE_PAREN.search(h[:j + 1])
    if not m or m.group(1) in ('if', 'while', 'for', 'switch', 'return', 'sizeof'):
        return None
    return m.group(1)


def _name_offset(header, name):
    h = _strip_attributes(header)
    j = _params_open(h.rstrip())
    k = h.rfind(name, 0, j if j >= 0 else len(h))
    return max(k, 0)


def py_functions(text, path):
    try:
        tree = ast.parse(text, path)
    except SyntaxError:
        return []
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def measure(root):
    """{key: lines} of every file and function past the limits; key is
    'path::' for a file and 'path:function' for a function."""
    over = {}
    for path in source_files(root):
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            text = f.read()
        lines = text.count('\n') + (0 if text.endswith('\n') or not text else 1)
        if lines > MAX_FILE_LINES:
            over[path + '::'] = lines
        if path.endswith(C_EXT):
            funcs = c_functions(text)
        elif path.endswith('.py'):
            funcs = py_functions(text, path)
        else:
            funcs = []
        for name, _, n in funcs:
            if n > MAX_FUNCTION_LINES:
                key = '%s:%s' % (path, name)
                over[key] = max(n, over.get(key, 0))
    return over


def read_exceptions(root):
    listed, problems = {}, []
    path = os.path.join(root, EXCEPTIONS)
    if not os.path.exists(path):
        return listed, problems
    with open(path, encoding='utf-8') as f:
        for k, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            m = re.fullmatch(r'([^:]+):([^:]*):(\d+)', line)
            if not m:
                problems.append('%s:%d: not path:function:lines: %s' % (EXCEPTIONS, k, line))
                continue
            listed['%s:%s' % (m.group(1), m.group(2)) if m.group(2) else m.group(1) + '::'] = int(m.group(3))
    return listed, problems


def describe(key):
    return 'file ' + key[:-2] if key.endswith('::') else 'function ' + key


def judge(root):
    """The failures and notes of the check against the exceptions list."""
    over = measure(root)
    listed, failures = read_exceptions(root)
    notes = []
    for key, n in sorted(over.items()):
        limit = MAX_FILE_LINES if key.endswith('::') else MAX_FUNCTION_LINES
        if key not in listed:
            failures.append('%s has %d lines (limit %d)' % (describe(key), n, limit))
        elif n > listed[key]:
            failures.append('%s grew to %d lines (%s lists %d; limit %d)'
                            % (describe(key), n, EXCEPTIONS, listed[key], limit))
        elif n < listed[key]:
            notes.append('%s shrank to %d lines: %s may say %d'
                         % (describe(key), n, EXCEPTIONS, n))
    for key in sorted(set(listed) - set(over)):
        failures.append('%s is listed in %s but is within the limit now (or gone): '
                        'remove its line' % (describe(key), EXCEPTIONS))
    return failures, notes, over, listed


def report(root):
    over = measure(root)
    for key, n in sorted(over.items(), key=lambda kv: -kv[1]):
        print('%5d  %s' % (n, describe(key)))
    files = sum(k.endswith('::') for k in over)
    print('%d files over %d lines, %d functions over %d lines'
          % (files, MAX_FILE_LINES, len(over) - files, MAX_FUNCTION_LINES))
    return 0


def check(root):
    failures, notes, over, listed = judge(root)
    for n in notes:
        print('note: ' + n)
    for f in failures:
        print('check-size: ' + f, file=sys.stderr)
    files = sum(k.endswith('::') for k in over)
    print('check-size: %d files over %d lines and %d functions over %d lines, '
          '%d listed as known exceptions; %d problems'
          % (files, MAX_FILE_LINES, len(over) - files, MAX_FUNCTION_LINES, len(listed),
             len(failures)))
    return 1 if failures else 0


def self_test():
    """Plants each kind of violation in a scratch tree; every one must fail
    and the clean tree must pass."""
    long_c = 'static int f(int x)\n{\n' + '    x++;\n' * 60 + '    return x;\n}\n'
    short_c = 'int g(void) { return 1; }\nstatic const int t[] = {\n' + '  1,\n' * 70 + '};\n'
    long_py = 'def f():\n' + '    x = 1\n' * 61
    cases = {
        'clean': ({'a.c': short_c}, '', 0),
        'long C function': ({'a.c': long_c}, '', 1),
        'long C function listed': ({'a.c': long_c}, 'a.c:f:64\n', 0),
        'listed function grew': ({'a.c': long_c}, 'a.c:f:63\n', 1),
        'stale listing': ({'a.c': short_c}, 'a.c:g:70\n', 1),
        'long Python function': ({'a.py': long_py}, '', 1),
        'long file': ({'a.h': '/* x */\n' * 1501}, '', 1),
        'long file listed': ({'a.h': '/* x */\n' * 1501}, 'a.h::1501\n', 0),
    }
    bad = 0
    for name, (files, exceptions, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            for p, text in files.items():
                with open(os.path.join(d, p), 'w') as f:
                    f.write(text)
            os.makedirs(os.path.join(d, 'scripts'))
            with open(os.path.join(d, EXCEPTIONS), 'w') as f:
                f.write(exceptions)
            failures = judge(d)[0]
            got = 1 if failures else 0
            if got != want:
                bad += 1
                print('FAIL: check-size self-test: %s (expected %s)'
                      % (name, 'a failure' if want else 'no failure'))
    if not bad:
        print('PASS: check-size self-test: each planted violation fails')
    return 1 if bad else 0


def main(argv):
    args = argv[1:]
    if args and args[0] == '--self-test':
        return self_test()
    if args and args[0] == '--report':
        return report(args[1] if len(args) > 1 else default_root())
    return check(args[0] if args else default_root())


def default_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


if __name__ == '__main__':
    sys.exit(main(sys.argv))
