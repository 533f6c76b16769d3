# int8_sizes.awk — the firmware size reports (examples/firmware `make size`)
# of a float and an int8 build, summed up on one line:
#   awk -f int8_sizes.awk FLOAT.log INT8.log
# prints "flash INT8 of FLOAT bytes (P %): code ..., weights ..., RAM ..."
# (flash = code + weights + descriptors) and exits 1 unless int8's flash is
# at most 30 % of float's.
FNR == 1 { k++ }
/^code \(model|^flash:|^RAM: static/ {
    name = $0; sub(/ *[0-9].*/, "", name)
    match($0, /  +[0-9]+/); val[k, name] = substr($0, RSTART, RLENGTH) + 0
    if (!(name in seen)) { seen[name] = 1; list[++m] = name }
}
END {
    for (i = 1; i <= m; i++) {
        short = list[i]; sub(/ \(.*/, "", short); sub(/^flash: /, "", short); sub(/ \(\.bss\)/, "", short)
        parts = parts sprintf("%s%s %d -> %d", i > 1 ? ", " : "", short, val[1, list[i]], val[2, list[i]])
        if (list[i] !~ /^RAM/) { flash1 += val[1, list[i]]; flash2 += val[2, list[i]] }
    }
    if (flash1 == 0) { print "no size figures"; exit 1 }
    printf "flash %d -> %d bytes (%.1f %%): %s\n", flash1, flash2, 100 * flash2 / flash1, parts
    exit !(flash2 <= 0.30 * flash1)
}
