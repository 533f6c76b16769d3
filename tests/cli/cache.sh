#!/usr/bin/env bash
# Part of the cli suite (run.sh): axc run's build cache (compiler/runcache.c)
# against hostile and damaged entries (issue 33, G12/G13), its size bound
# with least-recently-used eviction, and large models.
#   - a planted shared object whose constructor writes a marker file must
#     never be loaded: owned by someone else, writable by others, without
#     the entry's checksum trailer, a symbolic link, or in a directory others
#     can write (each: a note, the model built again, the right outputs);
#   - a truncated or altered entry is noted and rebuilt, not fatal;
#   - new directories are 0700, entries 0600;
#   - AXC_CACHE_MAX_MB bounds the entries' total: the least recently used
#     (a hit counts as a use) go first;
#   - a shared object over 64 MiB is cached (it used to be skipped), and one
#     over the bound is not, with a note;
#   - two runs of the same model at once build it once (the second waits
#     on the entry's lock and loads what the first stored; suites share
#     builds this way), and no lock file is left.
# The C compiler is a wrapper that counts its calls (a hit calls none).
# Environment: AXC, AXC_ROOT (as run.sh).
set -u
AXC=${AXC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
cc=${CC:-cc}
calls=$tmp/cc-calls
: >"$calls"

check() {
    local name=$1; shift
    if "$@" >"$tmp/why" 2>&1; then echo "PASS: cli:cache-$name"
    else echo "FAIL: cli:cache-$name"; sed 's/^/  /' "$tmp/why" | head -25; fi
}
skip() { echo "SKIP: cli:cache-$1"; }

# cc-count: the C compiler, counting its calls; cc-big: the same, and the
# shared object it built grown by 70 MiB of zeros at its end (past every
# segment, so it loads as before): a model over the old 64 MiB limit
# without compiling 64 MiB of C.
printf '#!/bin/sh\necho call >>"%s"\nexec %s "$@"\n' "$calls" "$cc" >cc-count
cat >cc-big <<EOF
#!/bin/sh
echo call >>"$calls"
$cc "\$@" || exit
while [ \$# -gt 1 ]; do [ "\$1" = -o ] && out=\$2; shift; done
truncate -s +70M "\$out"
EOF
# cc-slow: cc-count taking a second longer, so that the runs overlap
printf '#!/bin/sh\necho call >>"%s"\nsleep 1\nexec %s "$@"\n' "$calls" "$cc" >cc-slow
chmod +x cc-count cc-big cc-slow

cat >small.ax <<'AX'
@axiom function small(x::Float32[3, 5])
    fc1 = Dense(5 => 4, activation=relu)
    fc2 = Dense(4 => 2)
    return fc2(fc1(x))
end
AX
ncalls() { wc -l <"$calls"; }
# run CACHE-DIR MODEL SEED [ENV...]: axc run with the counting compiler,
# outputs in out-SEED.npy, stderr in err; its exit status
run() {
    local dir=$1 model=$2 seed=$3; shift 3
    env AXC_CACHE_DIR="$dir" CC="$tmp/cc-count" "$@" "$AXC" run "$model" --seed="$seed" --output "out-$seed.npy" >out 2>err
}
entry_in() { ls "$1"/*.so 2>/dev/null | head -1; }
mode_of() { stat -c %a "$1"; }

# the planted object: its constructor writes $tmp/marker
cat >planted.c <<EOF
#include <stdio.h>
__attribute__((constructor)) static void planted(void)
{
    FILE *f = fopen("$tmp/marker", "w");
    if (f) { fputs("the planted constructor ran\n", f); fclose(f); }
}
EOF
$cc -shared -fPIC planted.c -o planted.so || { echo "FAIL: cli:cache-build (cannot build the planted object)"; exit 0; }

# plant DIR HOW: a cache in DIR holding small.ax's entry, then the planted
# object put in its place as HOW says (foreign, writable, bare, link)
plant() {
    local dir=$1 how=$2 e
    rm -rf "$dir" "$tmp/marker"
    run "$dir" small.ax 1 || { echo "the first run failed:"; cat err; return 1; }
    cp out-1.npy want.npy
    e=$(entry_in "$dir")
    [ -n "$e" ] || { echo "no cache entry after the first run"; return 1; }
    rm -f "$e"
    case $how in
        link) ln -s "$tmp/planted.so" "$e" ;;
        *) cp planted.so "$e" ;;
    esac
    case $how in
        foreign) chown nobody "$e" ;;
        writable) chmod 666 "$e" ;;
        bare) chmod 600 "$e" ;;
    esac
}
# the run after plant: exit 0, the constructor never ran, a note naming
# WHY, the right outputs, and a fresh entry of our own in its place
expect_ignored() {
    local dir=$1 why=$2 e
    run "$dir" small.ax 1; local rc=$?
    [ ! -e "$tmp/marker" ] || { echo "the planted shared object was loaded (its constructor ran)"; return 1; }
    [ $rc = 0 ] || { echo "exit $rc:"; cat err; return 1; }
    grep -q "axc: note: .*$why" err || { echo "no note saying '$why':"; cat err; return 1; }
    cmp -s out-1.npy want.npy || { echo "outputs differ from the first run's"; return 1; }
    e=$(entry_in "$dir")
    [ -f "$e" ] && [ ! -L "$e" ] && [ "$(stat -c %u "$e")" = "$(id -u)" ] && [ "$(mode_of "$e")" = 600 ] ||
        { echo "the entry was not rebuilt as this user's 0600 file:"; ls -l "$dir"; return 1; }
}

check_planted_foreign() { plant "$tmp/c-foreign" foreign && expect_ignored "$tmp/c-foreign" "owned by uid $(id -u nobody), not by you"; }
check_planted_writable() { plant "$tmp/c-writable" writable && expect_ignored "$tmp/c-writable" "writable by group or others"; }
check_planted_bare() { plant "$tmp/c-bare" bare && expect_ignored "$tmp/c-bare" "damaged (no checksum trailer"; }
check_planted_link() { plant "$tmp/c-link" link && expect_ignored "$tmp/c-link" "a symbolic link"; }
# a directory others can write (or someone else owns) is not used at all
check_open_directory() {
    local dir=$tmp/c-open how=$1
    plant "$dir" bare || return 1
    case $how in
        writable) chmod 777 "$dir" ;;
        foreign) chown nobody "$dir" ;;
    esac
    run "$dir" small.ax 1; local rc=$?
    [ ! -e "$tmp/marker" ] || { echo "the planted shared object was loaded (its constructor ran)"; return 1; }
    [ $rc = 0 ] || { echo "exit $rc:"; cat err; return 1; }
    grep -q "axc: note: not using the cache directory '$dir': $([ "$how" = writable ] && echo writable || echo owned)" err ||
        { echo "no note on the directory:"; cat err; return 1; }
    cmp -s out-1.npy want.npy || { echo "outputs differ from the first run's"; return 1; }
}

# G12: a truncated entry (a crash after rename, before the data reached the
# disk) and one with altered bytes are rebuilt, then hit again
check_damaged() {
    local dir=$tmp/c-damaged e n how=$1
    rm -rf "$dir"
    run "$dir" small.ax 1 && cp out-1.npy want.npy || { cat err; return 1; }
    e=$(entry_in "$dir")
    case $how in
        truncated) truncate -s 4096 "$e" ;;
        altered) printf 'XXXX' | dd of="$e" bs=1 seek=$(($(stat -c %s "$e") / 2)) conv=notrunc 2>/dev/null ;;
    esac
    n=$(ncalls)
    run "$dir" small.ax 1; local rc=$?
    [ $rc = 0 ] || { echo "exit $rc after the entry was $how:"; cat err; return 1; }
    grep -q "axc: note: ignoring the cache entry '$e': damaged" err || { echo "no note:"; cat err; return 1; }
    [ "$(ncalls)" = $((n + 1)) ] || { echo "not rebuilt"; return 1; }
    cmp -s out-1.npy want.npy || { echo "outputs differ"; return 1; }
    run "$dir" small.ax 1 && [ "$(ncalls)" = $((n + 1)) ] && [ ! -s err ] || { echo "the rebuilt entry is not hit:"; cat err; return 1; }
}

# modes: a new directory (and its new parent) 0700, an entry 0600
check_modes() {
    local dir=$tmp/new-parent/cache
    run "$dir" small.ax 1 || { cat err; return 1; }
    [ "$(mode_of "$tmp/new-parent")" = 700 ] && [ "$(mode_of "$dir")" = 700 ] && [ "$(mode_of "$(entry_in "$dir")")" = 600 ] ||
        { echo "modes:"; ls -ld "$tmp/new-parent" "$dir" "$dir"/*; return 1; }
}

# LRU: A B C (small.ax with three seeds: entries of one size s, mostly the
# runtime linked in) fill a cache bounded at 3.5 s; A hit; D evicts B (the
# least recently used), not A; then A and C hit, B builds again
check_lru() {
    local dir=$tmp/c-lru n s bound
    : >"$calls"
    run "$dir" small.ax 1 || { cat err; return 1; }
    bound=$(( ($(stat -c %s "$(entry_in "$dir")") * 7 / 2 + (1 << 20) - 1) >> 20 ))
    for s in 2 3 1 4; do run "$dir" small.ax $s AXC_CACHE_MAX_MB=$bound || { cat err; return 1; }; done
    [ "$(ncalls)" = 4 ] || { echo "$(ncalls) builds for A B C A D, want 4"; ls -lu --full-time "$dir"; return 1; }
    [ "$(ls "$dir"/*.so | wc -l)" = 3 ] || { echo "want 3 entries after D in $bound MiB:"; ls -l "$dir"; return 1; }
    n=$(ncalls)
    run "$dir" small.ax 1 AXC_CACHE_MAX_MB=$bound && [ "$(ncalls)" = "$n" ] || { echo "A (used after B) was evicted"; return 1; }
    run "$dir" small.ax 3 AXC_CACHE_MAX_MB=$bound && [ "$(ncalls)" = "$n" ] || { echo "C was evicted"; return 1; }
    run "$dir" small.ax 2 AXC_CACHE_MAX_MB=$bound && [ "$(ncalls)" = $((n + 1)) ] || { echo "B (least recently used) was kept"; return 1; }
    [ "$(du -cb "$dir"/*.so | tail -1 | cut -f1)" -le $((bound << 20)) ] || { echo "over the bound:"; ls -l "$dir"; return 1; }
}

# a shared object over 64 MiB is cached (a second run builds nothing); over
# the bound it is not, with a note
check_large() {
    local dir=$tmp/c-large n
    : >"$calls"
    AXC_CACHE_DIR=$dir CC=$tmp/cc-big "$AXC" run small.ax --seed=1 --output big1.npy >out 2>err || { cat err; return 1; }
    AXC_CACHE_DIR=$dir CC=$tmp/cc-big "$AXC" run small.ax --seed=1 --output big2.npy >out 2>err || { cat err; return 1; }
    [ "$(ncalls)" = 1 ] || { echo "the 70 MiB object was built $(ncalls) times in two runs (not cached)"; cat err; return 1; }
    [ "$(stat -c %s "$(entry_in "$dir")")" -gt $((64 << 20)) ] || { ls -l "$dir"; return 1; }
    rm -rf "$dir"
    AXC_CACHE_DIR=$dir AXC_CACHE_MAX_MB=50 CC=$tmp/cc-big "$AXC" run small.ax --seed=1 --output big3.npy >out 2>err || { cat err; return 1; }
    grep -q "axc: note: not caching the built code ([0-9]* MiB): larger than the cache's bound of 50 MiB" err || { cat err; return 1; }
    [ -z "$(entry_in "$dir")" ] || { echo "cached over the bound"; return 1; }
}

check_concurrent() {
    local dir=$tmp/c-concurrent a b
    : >"$calls"
    AXC_CACHE_DIR=$dir CC=$tmp/cc-slow "$AXC" run small.ax --seed=5 --output conc1.npy >out1 2>err1 & a=$!
    AXC_CACHE_DIR=$dir CC=$tmp/cc-slow "$AXC" run small.ax --seed=5 --output conc2.npy >out2 2>err2 & b=$!
    wait $a || { echo "the first run failed:"; cat err1; return 1; }
    wait $b || { echo "the second run failed:"; cat err2; return 1; }
    [ "$(ncalls)" = 1 ] || { echo "two runs at once built the model $(ncalls) times, want 1"; return 1; }
    cmp conc1.npy conc2.npy || return 1
    [ -z "$(ls "$dir" | grep '\.lock$')" ] || { echo "a lock file was left:"; ls -l "$dir"; return 1; }
}

if [ "$(id -u)" = 0 ] && id -u nobody >/dev/null 2>&1; then
    check planted-foreign-owner check_planted_foreign
    check directory-foreign-owner check_open_directory foreign
else
    skip "planted-foreign-owner (needs root to chown to nobody)"
    skip "directory-foreign-owner (needs root to chown to nobody)"
fi
check planted-writable check_planted_writable
check planted-no-trailer check_planted_bare
check planted-symlink check_planted_link
check directory-writable-by-others check_open_directory writable
check truncated-entry-rebuilt check_damaged truncated
check altered-entry-rebuilt check_damaged altered
check modes-0700-0600 check_modes
check lru-eviction check_lru
check large-model-cached check_large
check concurrent-runs-build-once check_concurrent
