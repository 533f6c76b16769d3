/* util.c — the compiler's plumbing (contract in ax.h): a bump arena that
 * owns every compile-time object, heap text buffers, whole-file reads, and
 * all-or-nothing output writing.
 *
 * Outputs are staged to temporaries beside their destinations (same
 * directory, so the final rename(2) cannot cross file systems) and only
 * renamed into place once every one of them was written in full; any
 * failure removes what was staged and puts back the old file of every
 * destination already renamed, so a failed run leaves no truncated or
 * stale-but-new file behind and every existing output as it was.  A
 * destination that is a device or FIFO is written in place, never renamed
 * over; a directory is refused when staged.  The renames run with the
 * fatal signals blocked, and temporaries are removed when one arrives. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ax.h"

/* ---- internal errors ----------------------------------------------------
 * Here rather than in diag.c, which uses the arena and buffers below: the
 * plumbing needs nothing of the diagnostics. */

_Noreturn void ax_die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("axc: internal error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

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
        ax_out_of_memory(n * size);
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
        ax_out_of_memory(cap);
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

void ax_buf_join(ax_buf *b, const char *const *names, int count, const char *sep, const char *last)
{
    for (int i = 0; i < count; i++)
        ax_buf_printf(b, "%s%s", i == 0 ? "" : i == count - 1 ? last : sep, names[i]);
}

void ax_buf_free(ax_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- files ------------------------------------------------------------- */

/* Removes a path without disturbing the errno the caller is reporting. */
static void unlink_quietly(const char *path)
{
    int saved = errno;
    unlink(path);
    errno = saved;
}

/* ---- cleanup on signals and out of memory -------------------------------
 * Paths registered here (temporaries, axc run's build directory) are removed
 * by the handler of SIGINT/SIGTERM/SIGHUP/SIGQUIT before the process dies of
 * the signal, and by ax_out_of_memory.  Everything the handler reads is a
 * fixed array, and every change happens with those signals blocked. */

#define CLEANUP_SLOTS 40
#define CLEANUP_PATH 4096
static char cleanup_path[CLEANUP_SLOTS][CLEANUP_PATH];
static volatile sig_atomic_t cleanup_kind[CLEANUP_SLOTS];   /* 0 free, 1 file, 2 directory */
static volatile pid_t cleanup_child;
static const int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void block_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++)
        sigaddset(&set, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

static void restore_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

int ax_cleanup_add(const char *path, bool is_dir)
{
    if (strlen(path) >= CLEANUP_PATH)
        return -1;
    sigset_t old;
    block_signals(&old);
    int slot = -1;
    for (int i = 0; i < CLEANUP_SLOTS && slot < 0; i++)
        if (!cleanup_kind[i])
            slot = i;
    if (slot >= 0) {
        strcpy(cleanup_path[slot], path);
        cleanup_kind[slot] = is_dir ? 2 : 1;
    }
    restore_signals(&old);
    return slot;
}

void ax_cleanup_drop(int slot)
{
    if (slot < 0 || slot >= CLEANUP_SLOTS)
        return;
    sigset_t old;
    block_signals(&old);
    cleanup_kind[slot] = 0;
    restore_signals(&old);
}

void ax_cleanup_child(pid_t pid)
{
    sigset_t old;
    block_signals(&old);
    cleanup_child = pid;
    restore_signals(&old);
}

/* Async-signal-safe: stops the child, removes the files, then the
 * (then empty) directories. */
void ax_cleanup_now(void)
{
    int saved = errno;
    if (cleanup_child > 0) {
        kill(cleanup_child, SIGKILL);
        waitpid(cleanup_child, NULL, 0);
        cleanup_child = 0;
    }
    for (int kind = 1; kind <= 2; kind++)
        for (int i = CLEANUP_SLOTS - 1; i >= 0; i--)
            if (cleanup_kind[i] == kind) {
                if (kind == 1)
                    unlink(cleanup_path[i]);
                else
                    rmdir(cleanup_path[i]);
                cleanup_kind[i] = 0;
            }
    errno = saved;
}

static void on_fatal_signal(int sig)
{
    ax_cleanup_now();
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

void ax_handle_signals(void)
{
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigfillset(&sa.sa_mask);
        /* a signal the caller ignores (nohup) stays ignored */
        if (sigaction(handled_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(handled_signals[i], &sa, NULL);
    }
}

_Noreturn void ax_out_of_memory(size_t bytes)
{
    ax_cleanup_now();
    fflush(stdout);
    if (bytes)
        fprintf(stderr, "axc: error: out of memory (allocating %zu bytes)\n", bytes);
    else
        fputs("axc: error: out of memory\n", stderr);
    _exit(2);
}

/* ---- bounded reads ---------------------------------------------------------- */

/* A regular file of known size, read straight into the arena (no second
 * copy: weights files can be gigabytes); closes fd. */
static char *read_regular(ax_arena *a, int fd, size_t size, size_t *len)
{
    char *text = ax_alloc(a, size + 1);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return NULL;
        }
        if (n == 0)
            break;   /* shrank while read: what is there */
        got += (size_t)n;
    }
    close(fd);
    text[got] = '\0';
    if (len)
        *len = got;
    return text;
}

char *ax_read_file_max(ax_arena *a, const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        errno = EISDIR;
        return NULL;
    }
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        return read_regular(a, fd, (size_t)st.st_size, len);
    ax_buf b = {0};
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || b.len + (size_t)n > max) {
            int read_errno = n < 0 ? errno : n > 0 ? EFBIG : 0;
            close(fd);
            if (read_errno) {
                ax_buf_free(&b);
                errno = read_errno;
                return NULL;
            }
            break;
        }
        ax_buf_put(&b, chunk, (size_t)n);
    }
    char *text = ax_alloc(a, b.len + 1);
    if (b.len)
        memcpy(text, b.data, b.len);
    if (len)
        *len = b.len;
    ax_buf_free(&b);
    return text;
}

char *ax_read_file(ax_arena *a, const char *path, size_t *len)
{
    return ax_read_file_max(a, path, AX_MAX_READ_BYTES, len);
}

/* ---- which file a path names ------------------------------------------------ */

/* The directory part of path ("." when none), heap-allocated. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

bool ax_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea || eb)
        return ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    /* neither exists yet: the same name in the same directory */
    const char *la = strrchr(a, '/'), *lb = strrchr(b, '/');
    if (strcmp(la ? la + 1 : a, lb ? lb + 1 : b))
        return false;
    char *da = dir_of(a), *db = dir_of(b);
    bool same = stat(da, &sa) == 0 && stat(db, &sb) == 0 ? sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
                                                         : strcmp(da, db) == 0;
    free(da);
    free(db);
    return same;
}

/* ---- all-or-nothing output sets --------------------------------------------- */

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

/* Writes data to a fresh temporary beside path, registered for cleanup in
 * *slot; returns its heap name. */
static char *write_temp_beside(const char *path, const void *data, size_t len, int *slot)
{
    char *tmp = temp_name_for(path);
    sigset_t old;
    block_signals(&old);   /* no window where the file exists unregistered */
    int fd = mkstemp(tmp);
    *slot = fd >= 0 ? ax_cleanup_add(tmp, false) : -1;
    restore_signals(&old);
    if (fd < 0) {
        free(tmp);
        return NULL;
    }
    if (write_all(fd, data, len) < 0 || fchmod(fd, default_file_mode()) < 0) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        ax_cleanup_drop(*slot);
        free(tmp);
        errno = saved;
        return NULL;
    }
    if (close(fd) < 0) {
        unlink_quietly(tmp);
        ax_cleanup_drop(*slot);
        free(tmp);
        return NULL;
    }
    return tmp;
}

static char *heap_copy(const void *data, size_t len)
{
    char *p = xcalloc(len + 1, 1);
    if (len)
        memcpy(p, data, len);
    return p;
}

/* A link into /proc or /dev (/dev/stdout -> /proc/self/fd/1): it names an
 * open file, possibly a regular one, that must be written through the link,
 * not replaced by renaming over the link. */
static bool names_open_file(const char *path)
{
    char target[64];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0)
        return false;
    target[n] = '\0';
    return !strncmp(target, "/proc/", 6) || !strncmp(target, "/dev/", 5);
}

/* Room for one more file: every array doubles together. */
static void grow_outset(ax_outset *o)
{
    const size_t cap = o->cap ? 2 * (size_t)o->cap : 8;
    void *arrays[] = {realloc(o->final, cap * sizeof *o->final), realloc(o->temp, cap * sizeof *o->temp),
                      realloc(o->inplace, cap * sizeof *o->inplace),
                      realloc(o->inplace_len, cap * sizeof *o->inplace_len),
                      realloc(o->slot, cap * sizeof *o->slot)};
    if (arrays[0]) o->final = arrays[0];
    if (arrays[1]) o->temp = arrays[1];
    if (arrays[2]) o->inplace = arrays[2];
    if (arrays[3]) o->inplace_len = arrays[3];
    if (arrays[4]) o->slot = arrays[4];
    for (int k = 0; k < 5; k++)
        if (!arrays[k])
            ax_out_of_memory(cap * sizeof(char *));
    o->cap = (int)cap;
}

int ax_stage(ax_outset *o, const char *path, const void *data, size_t len)
{
    if (o->n == o->cap)
        grow_outset(o);
    struct stat st;
    int i = o->n;
    o->slot[i] = -1;
    o->temp[i] = NULL;
    o->inplace[i] = NULL;
    o->inplace_len[i] = 0;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    if (stat(path, &st) == 0 && (!S_ISREG(st.st_mode) || names_open_file(path))) {
        /* a device, FIFO or socket: written in place at commit, never
           renamed over (that would replace /dev/null with a file) */
        o->inplace[i] = heap_copy(data, len);
        o->inplace_len[i] = len;
    } else {
        o->temp[i] = write_temp_beside(path, data, len, &o->slot[i]);
        if (!o->temp[i])
            return -1;
    }
    o->final[i] = heap_copy(path, strlen(path));
    o->n++;
    return 0;
}

static void outset_release(ax_outset *o)
{
    for (int i = 0; i < o->n; i++) {
        ax_cleanup_drop(o->slot[i]);
        free(o->final[i]);
        free(o->temp[i]);
        free(o->inplace[i]);
    }
    free(o->final);
    free(o->temp);
    free(o->inplace);
    free(o->inplace_len);
    free(o->slot);
    o->final = o->temp = o->inplace = NULL;
    o->inplace_len = NULL;
    o->slot = NULL;
    o->n = o->cap = 0;
}

void ax_abort(ax_outset *o)
{
    for (int i = 0; i < o->n; i++)
        if (o->temp[i])
            unlink_quietly(o->temp[i]);
    outset_release(o);
}

/* Test hook (tests/cli): with AXC_TEST_PAUSE_<WHEN>=FILE set, creates FILE
 * and waits (at most 30 s) until the test removes it, so that a test can
 * act (send a signal, remove a directory) at a known point of the commit. */
static void test_pause(const char *when)
{
    char var[64];
    snprintf(var, sizeof var, "AXC_TEST_PAUSE_%s", when);
    const char *flag = getenv(var);
    if (!flag || !*flag)
        return;
    int fd = open(flag, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < 3000 && access(flag, F_OK) == 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Writes the in-place destinations (devices, FIFOs) with signals still
 * deliverable: opening a FIFO waits for its reader. */
static int write_in_place(const ax_outset *o)
{
    for (int i = 0; i < o->n; i++) {
        if (!o->inplace[i])
            continue;
        int fd = open(o->final[i], O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        struct stat st;
        const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        if (regular && !names_open_file(o->final[i])) {
            close(fd);   /* replaced by a plain file since staging */
            errno = EEXIST;
            return -1;
        }
        if (regular) {   /* stdout redirected to a file: after what is there */
            close(fd);
            fd = open(o->final[i], O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
            if (fd < 0)
                return -1;
        }
        if (write_all(fd, (const unsigned char *)o->inplace[i], o->inplace_len[i]) < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (close(fd) < 0 && errno != EINTR)
            return -1;
    }
    return 0;
}

/* Puts the old files back (backup[j] is the old file of final[j], or NULL
 * where there was none) for entries done[0..ndone) and removes temporaries. */
static void roll_back(ax_outset *o, char **backup, const int *done, int ndone)
{
    int saved = errno;
    for (int k = 0; k < ndone; k++) {
        int j = done[k];
        if (backup[j])
            rename(backup[j], o->final[j]);
        else
            unlink(o->final[j]);
    }
    for (int j = 0; j < o->n; j++) {
        if (o->temp[j])
            unlink(o->temp[j]);
        if (backup[j])
            unlink(backup[j]);   /* a link whose rename never happened */
    }
    errno = saved;
}

/* Moves every temporary over its destination, last staged first (the
 * first-staged, primary output is replaced last).  An existing destination
 * is first hard-linked to a backup name (renamed there where the file
 * system has no hard links), so a failed rename can restore every old file
 * and the set stays old-or-new.  Runs with the fatal signals blocked. */
static int rename_all(ax_outset *o)
{
    char **backup = xcalloc((size_t)o->n + 1, sizeof *backup);
    int *done = xcalloc((size_t)o->n + 1, sizeof *done), ndone = 0;
    for (int i = o->n - 1; i >= 0; i--) {
        if (!o->temp[i])
            continue;
        struct stat st;
        if (lstat(o->final[i], &st) == 0) {
            size_t n = strlen(o->temp[i]) + 5;
            backup[i] = xcalloc(n, 1);
            snprintf(backup[i], n, "%s.old", o->temp[i]);
            unlink(backup[i]);
            if (link(o->final[i], backup[i]) < 0 && rename(o->final[i], backup[i]) < 0) {
                free(backup[i]);
                backup[i] = NULL;
                roll_back(o, backup, done, ndone);
                goto failed;
            }
        }
        if (rename(o->temp[i], o->final[i]) < 0) {
            int saved = errno;
            if (backup[i] && access(o->final[i], F_OK) < 0)
                rename(backup[i], o->final[i]);   /* the fallback moved it away */
            errno = saved;
            roll_back(o, backup, done, ndone);
            goto failed;
        }
        done[ndone++] = i;
        if (ndone == 1)
            test_pause("COMMIT");
    }
    for (int i = 0; i < o->n; i++)
        if (backup[i]) {
            unlink(backup[i]);
            free(backup[i]);
        }
    free(backup);
    free(done);
    return 0;
failed:
    for (int i = 0; i < o->n; i++)
        free(backup[i]);
    free(backup);
    free(done);
    return -1;
}

int ax_commit(ax_outset *o)
{
    test_pause("STAGED");
    if (write_in_place(o) < 0) {
        ax_abort(o);
        return -1;
    }
    sigset_t old;
    block_signals(&old);
    int rc = rename_all(o);
    outset_release(o);
    restore_signals(&old);
    return rc;
}

int ax_write_file_atomic(const char *path, const void *data, size_t len)
{
    ax_outset o = {0};
    if (ax_stage(&o, path, data, len) < 0) {
        int saved = errno;
        ax_abort(&o);   /* frees the set's arrays */
        errno = saved;
        return -1;
    }
    return ax_commit(&o);
}

uint64_t ax_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
