#!/usr/bin/env bash
# Part of the cuda suite (run.sh): libaxrt_gpu's compiled-kernel cache
# against hostile and damaged entries (issue 33, G14/G15), with no GPU and
# no NVRTC: fake_nvrtc.c built to succeed (a 4 KiB fake image) and
# fake_driver.c built to refuse any other image, as a driver does a damaged
# one (cuModuleLoadData: 200).  The mlp's host program starts each time:
#   - a damaged (altered, truncated) entry is noted and compiled again;
#   - an intact entry the driver refuses is compiled again;
#   - a symbolic link at the old temporary name <entry>.<pid>.tmp or at the
#     entry's own name leaves its target untouched;
#   - an entry writable by others, or someone else's, is not used;
#   - a directory writable by others, or someone else's, is not used;
#   - new directories are 0700, entries 0600.
# Environment as run.sh.
set -u
root=${AXC_ROOT:?}; build=${AXC_BUILD:?}; axc=${AXC:?}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc=${CC:-cc}
pass() { echo "PASS: cuda kernel-cache/$1"; }
fail() { echo "FAIL: cuda kernel-cache/$1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }
skip() { echo "SKIP: cuda kernel-cache/$1"; }

"$cc" -shared -fPIC -DFAKE_MODE=3 -DFAKE_CHECK_IMAGE "$here/fake_driver.c" -o "$work/libcuda_check.so" &&
"$cc" -shared -fPIC -DFAKE_MODE=3 "$here/fake_driver.c" -o "$work/libcuda_any.so" &&
"$cc" -shared -fPIC -DFAKE_NVRTC_OK "$here/fake_nvrtc.c" -o "$work/libnvrtc_ok.so" || { fail build "the fakes"; exit 0; }
"$axc" --seed=0 --target=cuda "$root/examples/mlp.ax" -o "$work/m.c" 2>/dev/null &&
"$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$build/include" -I"$work" "$work/m.c" "$here/host_main.c" \
    "$build/lib/libaxrt_gpu.a" -ldl -o "$work/host" || { fail build "the mlp host program"; exit 0; }

# start CACHE [ENV...]: one start (init and a forward) into $work/out; its exit status
start() {
    local cache=$1; shift
    env AXRT_CUDA_LIB="$work/libcuda_check.so" AXRT_NVRTC_LIB="$work/libnvrtc_ok.so" AXRT_GPU_CACHE="$cache" \
        AXRT_GPU_VERBOSE=1 "$@" "$work/host" >"$work/out" 2>&1
}
entry_in() { ls "$1"/axc-*.cubin 2>/dev/null | head -1; }
has() { grep -q "$1" "$work/out"; }
# expect NAME WANT-NOTE: the last start exited 0, compiled, said WANT-NOTE;
# the next one reads the (new) entry
expect_recompiled() {
    local name=$1 note=$2 cache=$3
    if ! has "forward: 0" || ! has "compiled for sm_80" || ! has "axrt_gpu: note: .*$note"; then
        fail "$name" "want a note '$note', a compile and a forward:" "$(cat "$work/out")"; return
    fi
    local e; e=$(entry_in "$cache")
    if [ -z "$e" ] || [ -L "$e" ] || [ "$(stat -c %a "$e")" != 600 ] || [ "$(stat -c %u "$e")" != "$(id -u)" ]; then
        fail "$name" "the entry was not rewritten as this user's 0600 file:" "$(ls -l "$cache")"; return
    fi
    start "$cache"
    if has "from the cache" && ! has "compiled" && ! has "note"; then pass "$name"
    else fail "$name" "the entry written after it is not read back:" "$(cat "$work/out")"; fi
}
# fresh CACHE: a cache holding the mlp's entry; prints the entry
fresh() {
    rm -rf "$1"
    start "$1" && entry_in "$1"
}

c=$work/new/cache
if start "$c" && has "compiled for sm_80" && e=$(entry_in "$c") && [ -n "$e" ] && start "$c" && has "from the cache"; then
    pass compile-then-cache
else fail compile-then-cache "$(cat "$work/out")"; fi
if [ "$(stat -c %a "$work/new")" = 700 ] && [ "$(stat -c %a "$c")" = 700 ] && [ "$(stat -c %a "$(entry_in "$c")")" = 600 ]; then
    pass modes-0700-0600
else fail modes-0700-0600 "$(ls -ld "$work/new" "$c" "$c"/*)"; fi

# G15: an entry damaged in place (its first bytes overwritten), one truncated
c=$work/altered; e=$(fresh "$c")
printf 'XXXX' | dd of="$e" bs=1 conv=notrunc 2>/dev/null
start "$c"; expect_recompiled damaged-entry-recompiled "damaged (its checksum does not match" "$c"
c=$work/truncated; e=$(fresh "$c")
truncate -s 2000 "$e"
start "$c"; expect_recompiled truncated-entry-recompiled "damaged (" "$c"
# an intact entry the driver refuses (written with a lenient driver from
# another image, as after a driver update)
c=$work/stale; rm -rf "$c"
start "$c" AXRT_CUDA_LIB="$work/libcuda_any.so" FAKE_NVRTC_IMAGE=stale
start "$c"; expect_recompiled refused-entry-recompiled "the driver refuses it" "$c"

# G14: a symbolic link planted at the name the old code wrote through
# (<entry>.<pid>.tmp; exec keeps the shell's pid) and at the entry's name
c=$work/link-tmp; e=$(fresh "$c"); rm -f "$e"
printf 'precious\n' >"$work/victim"; cp "$work/victim" "$work/victim.orig"
env AXRT_CUDA_LIB="$work/libcuda_check.so" AXRT_NVRTC_LIB="$work/libnvrtc_ok.so" AXRT_GPU_CACHE="$c" \
    sh -c 'ln -s "$1" "$2.$$.tmp" && exec "$3"' sh "$work/victim" "$e" "$work/host" >"$work/out" 2>&1
if cmp -s "$work/victim" "$work/victim.orig" && has "forward: 0" && [ -f "$e" ] && [ ! -L "$e" ]; then pass symlink-at-temporary
else fail symlink-at-temporary "the file the planted link names was overwritten, or no entry:" "$(cat "$work/out")" "$(ls -l "$c")"; fi
c=$work/link-entry; e=$(fresh "$c")
mv "$e" "$work/elsewhere.cubin"; cp "$work/elsewhere.cubin" "$work/elsewhere.orig"; ln -s "$work/elsewhere.cubin" "$e"
start "$c"; expect_recompiled symlink-at-entry "a symbolic link" "$c"
cmp -s "$work/elsewhere.cubin" "$work/elsewhere.orig" || fail symlink-at-entry-target "the link's target changed"

# entries and directories others could have written
c=$work/writable; e=$(fresh "$c"); chmod 666 "$e"
start "$c"; expect_recompiled writable-entry-ignored "writable by group or others" "$c"
root_can_chown=; [ "$(id -u)" = 0 ] && id -u nobody >/dev/null 2>&1 && root_can_chown=1
if [ -n "$root_can_chown" ]; then
    c=$work/foreign; e=$(fresh "$c"); chown nobody "$e"
    start "$c"; expect_recompiled foreign-entry-ignored "owned by uid $(id -u nobody), not by you" "$c"
else skip "foreign-entry-ignored (needs root to chown to nobody)"; fi
dir_refused() { # NAME CACHE NOTE: a start compiles, says NOTE, writes no entry
    start "$2"
    if has "forward: 0" && has "compiled for sm_80" && has "axrt_gpu: note: not using the kernel cache directory '$2': $3" &&
       [ -z "$(entry_in "$2")" ]; then pass "$1"
    else fail "$1" "$(cat "$work/out")" "$(ls -l "$2")"; fi
}
c=$work/open; fresh "$c" >/dev/null; rm -f "$c"/*; chmod 777 "$c"
dir_refused writable-directory-unused "$c" "writable by group or others"
if [ -n "$root_can_chown" ]; then
    c=$work/foreign-dir; fresh "$c" >/dev/null; rm -f "$c"/*; chown nobody "$c"
    dir_refused foreign-directory-unused "$c" "owned by uid"
else skip "foreign-directory-unused (needs root to chown to nobody)"; fi
