"""kernel_forms.py IN.cu OUT.cu: the kernel source of a model with one kernel
per form: a kernel whose text differs from an earlier one only in its name
and in its constant arena and parameter offsets ((A + N), P + N) is left
out (a model that repeats a layer repeats its kernels so: gru_kws's 986
kernels are 62 forms).  Everything else (the prelude, comments, any text
between kernels) is kept in order.  Prints "KEPT of TOTAL" for the PASS line."""
import re
import sys

src = open(sys.argv[1]).read()
chunks = re.split(r"\n(?=AXK )", src)
out, seen, total = [chunks[0]], set(), 0
for chunk in chunks[1:]:
    end = chunk.find("\n}\n")
    if end < 0:
        sys.exit(f"{sys.argv[1]}: a kernel without its closing brace")
    body, rest = chunk[:end + 3], chunk[end + 3:]
    total += 1
    form = re.sub(r"^AXK \w+\(", "AXK K(", body)
    form = re.sub(r"\(A \+ \d+\)", "(A + N)", form)
    form = re.sub(r"\bP \+ \d+", "P + N", form)
    if form not in seen:
        seen.add(form)
        out.append(body)
    out.append(rest)
open(sys.argv[2], "w").write("\n".join(out))
print(f"{len(seen)} of {total} kernels")
