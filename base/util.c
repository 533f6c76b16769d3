/* util.c — the compiler's plumbing (contract in ax.h): a bump arena that
 * owns every compile-time object, heap text buffers, whole-file reads, and
 * all-or-nothing output writing.
 *
 * Outputs are staged to temporaries beside their destinations (same
 * directory, so the final rename(2) cannot cross file systems) and only
 * renamed into place once every one of them was written in full; any
 * failure removes what was staged or already renamed, so a failed run
 * leaves no truncated or stale-but-new file behind. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ax.h"

/* ---- arena ------------------------------------------------------------- */

#define ARENA_ALIGN 16
#define ARENA_CHUNK (64 * 1024)

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    _Alignas(ARENA_ALIGN) unsigned char data[];
} arena_chunk;

struct ax_arena {
    arena_chunk *head;   /* the chunk being filled; older ones follow */
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        ax_die("out of memory (%zu bytes)", n * size);
    return p;
}

ax_arena *ax_arena_new(void)
{
    return xcalloc(1, sizeof(ax_arena));
}

void ax_arena_free(ax_arena *a)
{
    if (!a)
        return;
    for (arena_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

static arena_chunk *arena_grow(ax_arena *a, size_t need)
{
    size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;
    if (cap > SIZE_MAX - sizeof(arena_chunk))
        ax_die("arena allocation of %zu bytes is too large", need);
    arena_chunk *c = xcalloc(1, sizeof(arena_chunk) + cap);
    c->cap = cap;
    c->next = a->head;
    a->head = c;
    return c;
}

void *ax_alloc(ax_arena *a, size_t size)
{
    size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (rounded < size)
        ax_die("arena allocation of %zu bytes is too large", size);
    arena_chunk *c = a->head;
    if (!c || c->cap - c->used < rounded)
        c = arena_grow(a, rounded);
    void *p = c->data + c->used;
    c->used += rounded;
    memset(p, 0, size);
    return p;
}

char *ax_strndup(ax_arena *a, const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = ax_alloc(a, len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *ax_strdup(ax_arena *a, const char *s)
{
    return ax_strndup(a, s, strlen(s));
}

char *ax_sprintf(ax_arena *a, const char *fmt, ...)
{
    ax_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    ax_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = ax_strndup(a, b.data ? b.data : "", b.len);
    ax_buf_free(&b);
    return s;
}

/* ---- ax_buf: always NUL-terminated after the first write --------------- */

static void buf_reserve(ax_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        ax_die("text buffer too large");
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        ax_die("out of memory (%zu bytes)", cap);
    b->data = p;
    b->cap = cap;
}

void ax_buf_put(ax_buf *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void ax_buf_puts(ax_buf *b, const char *s)
{
    ax_buf_put(b, s, strlen(s));
}

void ax_buf_vprintf(ax_buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        ax_die("bad format string '%s'", fmt);
    buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void ax_buf_printf(ax_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ax_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void ax_buf_free(ax_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- files ------------------------------------------------------------- */

char *ax_read_file(ax_arena *a, const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    ax_buf b = {0};
    char chunk[65536];
    size_t n;
    errno = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        ax_buf_put(&b, chunk, n);
    int failed = ferror(f), read_errno = errno;
    fclose(f);
    if (failed) {
        ax_buf_free(&b);
        errno = read_errno ? read_errno : EIO;   /* e.g. EISDIR for a directory */
        return NULL;
    }
    char *text = ax_alloc(a, b.len + 1);
    if (b.len)
        memcpy(text, b.data, b.len);
    if (len)
        *len = b.len;
    ax_buf_free(&b);
    return text;
}

/* Removes a path without disturbing the errno the caller is reporting. */
static void unlink_quietly(const char *path)
{
    int saved = errno;
    unlink(path);
    errno = saved;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Permissions a plain fopen(path, "w") would give: 0666 minus the umask
 * (mkstemp creates 0600, which would surprise users of the output). */
static mode_t default_file_mode(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* "DIR/.BASE.XXXXXX" next to path, heap-allocated. */
static char *temp_name_for(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dirlen;
    size_t n = dirlen + 1 + strlen(base) + 8;
    char *t = xcalloc(n, 1);
    snprintf(t, n, "%.*s.%s.XXXXXX", (int)dirlen, path, base);
    return t;
}

/* Writes data to a fresh temporary beside path; returns its heap name. */
static char *write_temp_beside(const char *path, const void *data, size_t len)
{
    char *tmp = temp_name_for(path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return NULL;
    }
    if (write_all(fd, data, len) < 0 || fchmod(fd, default_file_mode()) < 0) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        errno = saved;
        return NULL;
    }
    if (close(fd) < 0) {
        unlink_quietly(tmp);
        free(tmp);
        return NULL;
    }
    return tmp;
}

int ax_stage(ax_outset *o, const char *path, const void *data, size_t len)
{
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 8;
        char **final = realloc(o->final, (size_t)cap * sizeof *final);
        if (final) o->final = final;
        char **temp = realloc(o->temp, (size_t)cap * sizeof *temp);
        if (!final || !temp)
            ax_die("out of memory staging %d output files", cap);
        o->temp = temp;
        o->cap = cap;
    }
    char *tmp = write_temp_beside(path, data, len);
    if (!tmp)
        return -1;
    size_t plen = strlen(path) + 1;
    o->final[o->n] = memcpy(xcalloc(plen, 1), path, plen);
    o->temp[o->n] = tmp;
    o->n++;
    return 0;
}

static void outset_release(ax_outset *o)
{
    for (int i = 0; i < o->n; i++) {
        free(o->final[i]);
        free(o->temp[i]);
    }
    free(o->final);
    free(o->temp);
    o->final = o->temp = NULL;
    o->n = o->cap = 0;
}

void ax_abort(ax_outset *o)
{
    for (int i = 0; i < o->n; i++)
        unlink_quietly(o->temp[i]);
    outset_release(o);
}

int ax_commit(ax_outset *o)
{
    for (int i = 0; i < o->n; i++) {
        if (rename(o->temp[i], o->final[i]) == 0)
            continue;
        for (int j = 0; j < i; j++)
            unlink_quietly(o->final[j]);
        for (int j = i; j < o->n; j++)
            unlink_quietly(o->temp[j]);
        outset_release(o);
        return -1;
    }
    outset_release(o);
    return 0;
}

int ax_write_file_atomic(const char *path, const void *data, size_t len)
{
    ax_outset o = {0};
    if (ax_stage(&o, path, data, len) < 0)
        return -1;
    return ax_commit(&o);
}

uint64_t ax_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
