/* runcache.c — the cache of shared objects `axc run` builds.  Building the
 * generated C takes seconds for a large model (6.9 s for the BERT layer), so
 * the shared object is kept in a cache directory under a key that covers
 * everything the build depends on:
 *   - the generated model.c and model.h (every byte),
 *   - the C compiler command ($CC / --cc words), the size and mtime of the
 *     program its first word names (found on PATH), and the build flags,
 *   - this axc executable and the libaxrt.a linked in (size and mtime each),
 * so a changed model, compiler, axc or runtime builds afresh.
 * Directory: $AXC_CACHE_DIR, else $XDG_CACHE_HOME/axc, else $HOME/.cache/axc;
 * AXC_CACHE_DIR=off (or an unusable directory) disables the cache.  Entries
 * are written atomically (temporary + rename), so concurrent runs are safe;
 * nothing is ever evicted (delete the directory to reclaim the space). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"

typedef struct key_hash {
    uint64_t a, b;   /* two FNV-1a 64 streams with different bases: 128 bits */
} key_hash;

static void hash_bytes(key_hash *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h->a = (h->a ^ p[i]) * 0x100000001B3ull;
        h->b = (h->b ^ p[i]) * 0x100000001B3ull + 0x9E3779B97F4A7C15ull;
    }
}

static void hash_str(key_hash *h, const char *s) { hash_bytes(h, s, strlen(s) + 1); }

/* A file's bytes; -1 if it cannot be read. */
static int hash_file(key_hash *h, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) hash_bytes(h, buf, n);
    int bad = ferror(f);
    fclose(f);
    return bad ? -1 : 0;
}

/* A file's identity without reading it (large, and rarely changing). */
static int hash_stat(key_hash *h, const char *path)
{
    struct stat st;
    if (stat(path, &st)) return -1;
    long long id[3] = {(long long)st.st_size, (long long)st.st_mtim.tv_sec, (long long)st.st_mtim.tv_nsec};
    hash_bytes(h, id, sizeof id);
    return 0;
}

/* The identity of the program that runs first in the compiler command
 * ("gcc", "./fakecc", "ccache gcc"): a replaced compiler is another key. */
static void hash_compiler(ax_arena *a, key_hash *h, const char *cc)
{
    size_t len = strcspn(cc, " \t");
    const char *prog = ax_sprintf(a, "%.*s", (int)len, cc);
    if (strchr(prog, '/')) { (void)hash_stat(h, prog); return; }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        const char *cand = ax_sprintf(a, "%.*s/%s", (int)n, p, prog);
        if (access(cand, X_OK) == 0) { (void)hash_stat(h, cand); return; }
        p += n + (p[n] == ':');
    }
}

/* The cache directory, created if needed; NULL when caching is off. */
static const char *cache_dir(ax_arena *a)
{
    const char *dir = getenv("AXC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir && !strcmp(dir, "off")) return NULL;
    if (dir && *dir) dir = ax_strdup(a, dir);
    else if (xdg && *xdg) dir = ax_sprintf(a, "%s/axc", xdg);
    else if (home && *home) dir = ax_sprintf(a, "%s/.cache/axc", home);
    else return NULL;
    /* the parent of ~/.cache/axc may not exist yet either */
    char *parent = ax_strdup(a, dir), *slash = strrchr(parent, '/');
    if (slash && slash != parent) { *slash = 0; mkdir(parent, 0777); }
    if (mkdir(dir, 0777) && errno != EEXIST) return NULL;
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? dir : NULL;
}

const char *axc_run_cache_entry(ax_arena *a, const char *cc, const char *flags, const char *build_dir,
                                const char *home)
{
    const char *dir = cache_dir(a);
    if (!dir) return NULL;
    key_hash h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    hash_str(&h, "axc " AXC_VERSION);
    hash_str(&h, cc);
    hash_compiler(a, &h, cc);
    hash_str(&h, flags);
    if (hash_stat(&h, "/proc/self/exe") || hash_stat(&h, ax_sprintf(a, "%s/lib/libaxrt.a", home)) ||
        hash_stat(&h, ax_sprintf(a, "%s/include/axrt.h", home)) ||
        hash_file(&h, ax_sprintf(a, "%s/model.c", build_dir)) ||
        hash_file(&h, ax_sprintf(a, "%s/model.h", build_dir)))
        return NULL;
    return ax_sprintf(a, "%s/%016llx%016llx.so", dir, (unsigned long long)h.a, (unsigned long long)h.b);
}

void axc_run_cache_store(ax_arena *a, const char *built, const char *entry)
{
    size_t len;
    const char *data = ax_read_file(a, built, &len);
    /* a cache that cannot be written only costs the next run a rebuild */
    if (data) (void)ax_write_file_atomic(entry, data, len);
}
