# map_sizes.awk — sums the input sections a GNU ld link map kept, by what
# they belong to, for the firmware size report (see Makefile, target size).
#
# Usage: awk -v model=mlp -v rtdir=axrt-obj -f map_sizes.awk LINK.map
# Prints one "category bytes" line per non-empty category:
# Only sections that occupy the target's memory count (not .debug_*).
#   code_model    .text (and unwind index) of the generated model (<model>.o)
#   code_runtime  .text of the runtime core (objects under rtdir)
#   weights       .rodata.<model>_p<N>: the embedded parameters, and
#                 .rodata.<model>_q<N>_{w,bias,mult,shift,fscale}: an int8 layer's
#   const_model   other .rodata/.data of model and runtime (descriptors, names)
#   ram_model     .bss of model and runtime (the static arena)
#   code_libm     .text pulled from libm (expf, ...)
#   code_libgcc   .text pulled from libgcc/libc by the model (memcpy, soft-float)
# Only the part of the map after "Linker script and memory map" is read, so
# sections dropped by --gc-sections are not counted.

/^Linker script and memory map/ { in_map = 1; next }
!in_map { next }

# An input section line: " .name 0xADDR 0xSIZE file", or the name alone on
# one line and "0xADDR 0xSIZE file" on the next.
/^ \.[^ ]+$/ { pending = $1; next }
/^ \.[^ ]+ +0x[0-9a-f]+ +0x[0-9a-f]+ / { count($1, $3, $4); pending = ""; next }
pending != "" && /^ +0x[0-9a-f]+ +0x[0-9a-f]+ / { count(pending, $2, $3) }
{ pending = "" }

# POSIX awk has no hex input: "0x1f" -> 31.
function hex(text,    value, i) {
    value = 0
    for (i = 3; i <= length(text); i++)
        value = value * 16 + index("0123456789abcdef", substr(tolower(text), i, 1)) - 1
    return value
}

function count(section, hexsize, file,    bytes, owner) {
    bytes = hex(hexsize)
    if (bytes == 0 || section !~ /^(\.(text|rodata|data|bss|ARM\.exidx)|COMMON)/) return
    if (file ~ ("(^|/)" model "\\.o$")) owner = "model"
    else if (index(file, rtdir "/") == 1 || index(file, "/" rtdir "/")) owner = "runtime"
    else if (file ~ /libm(_nano)?\.a\(/) owner = "libm"
    else if (file ~ /lib(gcc|c|c_nano)\.a\(/) owner = "libgcc"
    else return
    if (owner == "model" && (section ~ ("^\\.rodata\\." model "_p[0-9]+$") ||
                             section ~ ("^\\.rodata\\." model "_q[0-9]+_(w|bias|mult|shift|fscale)$")))
        total["weights"] += bytes
    else if (section ~ /^\.(text|ARM\.exidx)/) total["code_" owner] += bytes
    else if (owner == "libm" || owner == "libgcc") total["code_" owner] += bytes
    else if (section ~ /^\.bss/ || section == "COMMON") total["ram_model"] += bytes
    else total["const_model"] += bytes
}

END {
    n = split("code_model code_runtime weights const_model ram_model code_libm code_libgcc", keys, " ")
    for (i = 1; i <= n; i++) if (keys[i] in total) print keys[i], total[keys[i]]
}
