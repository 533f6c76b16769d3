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
 * AXC_CACHE_DIR=off (or an unusable directory) disables the cache.
 *
 * An entry is code axc loads into itself, so it is trusted only as far as
 * its writer (issue 33, G12/G13):
 *   - the directory is created 0700, and one owned by someone else or
 *     writable by group or others is not used (a note says so);
 *   - an entry is the shared object followed by a trailer (entry_trailer:
 *     the object's size and a 128-bit checksum of its bytes).  It is loaded
 *     only if it is a regular file (opened with O_NOFOLLOW), owned by this
 *     user, writable by no one else and intact; otherwise a note says why
 *     and the model is built again, the new entry replacing it.  The checked
 *     descriptor is what dlopen reads (/proc/self/fd/N), so the file cannot
 *     be swapped between the check and the load;
 *   - an entry is written to a fresh mkostemp name (O_EXCL: never through a
 *     planted link), fsynced, then renamed into place, and the directory
 *     fsynced: a crash leaves the old entry, the new one or none, never a
 *     truncated one under the entry's name;
 *   - the entries' total size is bounded (AXC_CACHE_MAX_MB, default 1024):
 *     storing one evicts the least recently used (a hit refreshes an
 *     entry's mtime) until the rest fit;
 *   - runs of the same code at the same time build it once: a run that
 *     misses takes an exclusive flock on ENTRY.lock, then looks again, so
 *     it waits for a build in progress and loads what that one stored. */
#include <dirent.h>
#include <sys/file.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"

#define DEFAULT_MAX_MB 1024

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

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("axc: note: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- the entry's checksum ---------------------------------------------------- */

/* What follows the shared object in an entry.  The checksum detects damage
 * (a truncated or altered file), not forgery: who wrote the entry is the
 * owner check's business. */
typedef struct entry_trailer {
    char magic[8];        /* ENTRY_MAGIC */
    uint64_t size;        /* bytes of the shared object before the trailer */
    uint64_t sum[2];
} entry_trailer;
static const char ENTRY_MAGIC[8] = {'a', 'x', 'c', 'c', 'a', 'c', 'h', '1'};

typedef struct checksum {
    uint64_t a, b;
    unsigned char tail[8];   /* bytes not yet making up a whole word */
    size_t ntail;
} checksum;

static uint64_t rotl64(uint64_t x, int k) { return x << k | x >> (64 - k); }

static void sum_word(checksum *s, uint64_t w)
{
    s->a = rotl64((s->a ^ w) * 0x9E3779B97F4A7C15ull, 31);
    s->b = rotl64(s->b + w * 0xC2B2AE3D27D4EB4Full, 27) * 0x165667B19E3779F9ull;
}

/* Eight bytes at a time (a 100 MB object checks in well under a second). */
static void sum_bytes(checksum *s, const unsigned char *p, size_t n)
{
    while (n && s->ntail) { s->tail[s->ntail++] = *p++, n--; if (s->ntail == 8) { uint64_t w; memcpy(&w, s->tail, 8); sum_word(s, w); s->ntail = 0; } }
    for (; n >= 8; p += 8, n -= 8) { uint64_t w; memcpy(&w, p, 8); sum_word(s, w); }
    while (n--) s->tail[s->ntail++] = *p++;
}

static void sum_finish(checksum *s, uint64_t size, uint64_t out[2])
{
    uint64_t w = 0;
    memcpy(&w, s->tail, s->ntail);
    sum_word(s, w ^ size);
    out[0] = s->a ^ rotl64(s->b, 17);
    out[1] = s->b ^ rotl64(s->a, 41) ^ size;
}

/* Reads fd from offset 0 up to size bytes (fewer at end of file) into the
 * checksum, and when out is >= 0 copies them to out.  Returns the bytes read, or -1. */
static long long copy_summing(int fd, int out, uint64_t size, checksum *s)
{
    static unsigned char buf[1 << 16];
    uint64_t done = 0;
    if (lseek(fd, 0, SEEK_SET) != 0) return -1;
    while (done < size) {
        size_t want = size - done < sizeof buf ? (size_t)(size - done) : sizeof buf;
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break;
        sum_bytes(s, buf, (size_t)n);
        for (ssize_t put = 0; out >= 0 && put < n;) {
            ssize_t w = write(out, buf + put, (size_t)(n - put));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return -1;
            put += w;
        }
        done += (uint64_t)n;
    }
    return (long long)done;
}

static void checksum_init(checksum *s) { *s = (checksum){.a = 0x243F6A8885A308D3ull, .b = 0x13198A2E03707344ull}; }

/* NULL when fd (st) holds an intact entry, else what is wrong with it. */
static const char *entry_damage(int fd, const struct stat *st)
{
    entry_trailer t;
    if (st->st_size < (off_t)sizeof t) return "damaged (shorter than its trailer)";
    if (pread(fd, &t, sizeof t, st->st_size - (off_t)sizeof t) != (ssize_t)sizeof t) return "unreadable";
    if (memcmp(t.magic, ENTRY_MAGIC, sizeof t.magic)) return "damaged (no checksum trailer: truncated, or not written by this axc)";
    if (t.size != (uint64_t)st->st_size - sizeof t) return "damaged (its size is not the recorded size)";
    checksum s;
    checksum_init(&s);
    uint64_t sum[2];
    if (copy_summing(fd, -1, t.size, &s) != (long long)t.size) return "unreadable";
    sum_finish(&s, t.size, sum);
    if (sum[0] != t.sum[0] || sum[1] != t.sum[1]) return "damaged (its checksum does not match its bytes)";
    return NULL;
}

/* ---- the directory ----------------------------------------------------------- */

/* NULL when the directory (st) may hold code axc loads, else why not. */
static const char *dir_unsafe(ax_arena *a, const struct stat *st)
{
    if (!S_ISDIR(st->st_mode)) return "not a directory";
    if (st->st_uid != geteuid()) return ax_sprintf(a, "owned by uid %u, not by you (uid %u)", (unsigned)st->st_uid, (unsigned)geteuid());
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others (chmod 700 it)";
    return NULL;
}

/* The cache directory, created (0700) if needed; NULL when caching is off
 * or the directory is unusable or unsafe (a note says which). */
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
    if (slash && slash != parent) { *slash = 0; mkdir(parent, 0700); }
    if (mkdir(dir, 0700) && errno != EEXIST) return NULL;
    struct stat st;
    if (stat(dir, &st)) return NULL;
    const char *why = dir_unsafe(a, &st);
    if (why) { note("not using the cache directory '%s': %s", dir, why); return NULL; }
    return dir;
}

/* ---- eviction ------------------------------------------------------------------- */

/* The bound on the entries' total size, in bytes. */
static uint64_t cache_bound(void)
{
    const char *v = getenv("AXC_CACHE_MAX_MB");
    if (!v || !*v) return (uint64_t)DEFAULT_MAX_MB << 20;
    char *end;
    errno = 0;
    unsigned long long mb = strtoull(v, &end, 10);
    if (errno || *end || *v == '-' || mb == 0 || mb > (UINT64_MAX >> 20)) {
        note("AXC_CACHE_MAX_MB='%s' is not a positive number of MiB; using %d", v, DEFAULT_MAX_MB);
        return (uint64_t)DEFAULT_MAX_MB << 20;
    }
    return (uint64_t)mb << 20;
}

/* An entry's file name: 32 hex digits, ".so", and for a temporary being
 * written, "." and mkostemp's six characters. */
static bool is_entry_name(const char *name)
{
    for (int i = 0; i < 32; i++)
        if (!strchr("0123456789abcdef", name[i]) || !name[i]) return false;
    if (strncmp(name + 32, ".so", 3)) return false;
    return !name[35] || (name[35] == '.' && strlen(name + 36) == 6);
}

typedef struct cached_file {
    char name[48];
    uint64_t size;
    struct timespec used;   /* mtime: written, or last loaded */
} cached_file;

static int older_first(const void *pa, const void *pb)
{
    const cached_file *x = pa, *y = pb;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Removes the least recently used entries (never keep, the one just
 * stored) until the total fits the bound.  Only this user's regular files
 * named as entries count: the GPU kernel cache shares the directory. */
static void evict(const char *dir, const char *keep, uint64_t bound)
{
    DIR *d = opendir(dir);
    if (!d) return;
    cached_file *files = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (!is_entry_name(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            cached_file *grown = realloc(files, cap * sizeof *files);
            if (!grown) break;
            files = grown;
        }
        memcpy(files[n].name, e->d_name, strlen(e->d_name) + 1); /* at most 42 bytes: is_entry_name */
        files[n].size = (uint64_t)st.st_size;
        files[n].used = st.st_mtim;
        total += files[n++].size;
    }
    qsort(files, n, sizeof *files, older_first);
    for (size_t i = 0; i < n && total > bound; i++) {
        if (!strcmp(files[i].name, keep)) continue;
        if (unlinkat(dirfd(d), files[i].name, 0) == 0) total -= files[i].size;
    }
    free(files);
    closedir(d);
}

/* ---- the interface (driver.h) ---------------------------------------------- */

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

const char *axc_run_cache_open(ax_arena *a, const char *entry, int *fd_out)
{
    *fd_out = -1;
    /* O_NONBLOCK: a FIFO planted under the name does not block the open */
    int fd = open(entry, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            note("ignoring the cache entry '%s': %s; building it again", entry,
                 errno == ELOOP ? "a symbolic link" : strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st)) why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = "not a regular file";
    else if (st.st_uid != geteuid())
        why = ax_sprintf(a, "owned by uid %u, not by you (uid %u)", (unsigned)st.st_uid, (unsigned)geteuid());
    else if (st.st_mode & (S_IWGRP | S_IWOTH)) why = "writable by group or others";
    else why = entry_damage(fd, &st);
    if (why) {
        note("ignoring the cache entry '%s': %s; building it again", entry, why);
        close(fd);
        return NULL;
    }
    (void)futimens(fd, NULL); /* used now: the last to be evicted */
    *fd_out = fd;
    return ax_sprintf(a, "/proc/self/fd/%d", fd);
}

int axc_run_cache_lock(ax_arena *a, const char *entry)
{
    /* the directory is this user's and no one else's (cache_dir) */
    int fd = open(ax_sprintf(a, "%s.lock", entry), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) return -1;
    while (flock(fd, LOCK_EX) && errno == EINTR) {}
    return fd;
}

void axc_run_cache_unlock(ax_arena *a, const char *entry, int lock, bool stored)
{
    if (lock < 0) return;
    /* after a store, a later run hits before it would look for the lock;
     * one waiting on this lock looks again once it has it */
    if (stored) (void)unlink(ax_sprintf(a, "%s.lock", entry));
    close(lock);
}

void axc_run_cache_drop(const char *entry, const char *why)
{
    note("ignoring the cache entry '%s': %s; building it again", entry, why);
    (void)unlink(entry);
}

/* The built object, its trailer, then fsync: the bytes are on disk before
 * the rename makes them the entry.  0, or -1. */
static int write_entry(int out, const char *built, uint64_t *size)
{
    int in = open(built, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0) return -1;
    checksum s;
    checksum_init(&s);
    entry_trailer t = {.size = 0};
    memcpy(t.magic, ENTRY_MAGIC, sizeof t.magic);
    int rc = fstat(in, &st) || !S_ISREG(st.st_mode) ? -1 : 0;
    if (!rc) {
        t.size = (uint64_t)st.st_size;
        rc = copy_summing(in, out, t.size, &s) == (long long)t.size ? 0 : -1;
    }
    close(in);
    if (rc) return -1;
    sum_finish(&s, t.size, t.sum);
    *size = t.size + sizeof t;
    return write(out, &t, sizeof t) == (ssize_t)sizeof t && fsync(out) == 0 ? 0 : -1;
}

void axc_run_cache_store(ax_arena *a, const char *built, const char *entry)
{
    /* a cache that cannot be written only costs the next run a rebuild */
    const uint64_t bound = cache_bound();
    struct stat st;
    if (stat(built, &st)) return;
    if ((uint64_t)st.st_size + sizeof(entry_trailer) > bound) {
        note("not caching the built code (%llu MiB): larger than the cache's bound of %llu MiB (AXC_CACHE_MAX_MB)",
             (unsigned long long)(st.st_size >> 20), (unsigned long long)(bound >> 20));
        return;
    }
    char *tmp = ax_sprintf(a, "%s.XXXXXX", entry);
    int out = mkostemp(tmp, O_CLOEXEC); /* O_CREAT|O_EXCL, mode 0600: never an existing file or link */
    if (out < 0) return;
    int slot = ax_cleanup_add(tmp, false);
    uint64_t size = 0;
    int rc = write_entry(out, built, &size);
    if (close(out)) rc = -1;
    if (!rc) rc = rename(tmp, entry);
    if (rc) (void)unlink(tmp);
    ax_cleanup_drop(slot);
    if (rc) return;
    /* the rename itself on disk */
    char *dir = ax_strdup(a, entry), *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    evict(slash ? dir : ".", slash ? slash + 1 : entry, bound);
}
