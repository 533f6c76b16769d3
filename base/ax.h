/* ax.h — what every part of the compiler shares: source locations, the
 * compilation context (one arena, one diagnostic sink), growable text
 * buffers.  User errors go through diagnostics and are counted; broken
 * internal invariants go through ax_die(), which never returns. */
#ifndef AX_AX_H
#define AX_AX_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A span in the source: 1-based line and column, length in bytes (>= 1).
 * line == 0 means "no location" (command line, files other than the .ax). */
typedef struct ax_loc {
    int line, col, len;
} ax_loc;

/* ---- arena: bump allocation, freed all at once with the context -------- */
typedef struct ax_arena ax_arena;
ax_arena *ax_arena_new(void);
void ax_arena_free(ax_arena *a);
void *ax_alloc(ax_arena *a, size_t size);            /* zeroed, 16-byte aligned; dies on OOM */
char *ax_strdup(ax_arena *a, const char *s);
char *ax_strndup(ax_arena *a, const char *s, size_t n);
char *ax_sprintf(ax_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- growable byte buffer (heap; caller frees with ax_buf_free) -------- */
typedef struct ax_buf {
    char *data;
    size_t len, cap;
} ax_buf;
void ax_buf_put(ax_buf *b, const void *data, size_t n);
void ax_buf_puts(ax_buf *b, const char *s);
void ax_buf_printf(ax_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ax_buf_vprintf(ax_buf *b, const char *fmt, va_list ap);
void ax_buf_free(ax_buf *b);
/* Appends names[0 .. count) separated by sep, the last by last (", " and
   " or ": "a, b or c"), for messages that list every accepted value. */
void ax_buf_join(ax_buf *b, const char *const *names, int count, const char *sep, const char *last);

/* ---- diagnostics (docs/language.md#diagnostics) --------------------------------------
 * Format:  FILE:LINE:COL: error: MESSAGE
 *          <the source line>
 *          <caret and tildes under the span>
 * A location with line 0 prints "FILE: error: MESSAGE" (or "axc: error:"
 * when no file is known) and no source line. */
typedef enum ax_severity { AX_NOTE, AX_WARNING, AX_ERROR } ax_severity;

/* Where the code a diagnostic points at was expanded (a block instance,
 * docs/language.md#composition): each error and warning issued while it is ctx->context
 * is followed by one note per level, innermost first:
 *   FILE:LINE:COL: note: <what>      (loc: where the instance is declared) */
typedef struct ax_context ax_context;
struct ax_context {
    const char *what;
    ax_loc loc;
    const ax_context *outer;
};

typedef struct ax_ctx {
    ax_arena *arena;
    const char *path;      /* the .ax file as named on the command line */
    const char *src;       /* its text (NUL-terminated), for source lines */
    size_t src_len;
    FILE *diag_out;        /* stderr by default; tests may capture */
    int errors, warnings;
    bool werror;           /* -Werror: warnings count as errors */
    bool no_warnings;      /* -w */
    int max_errors;        /* stop printing after this many (default 20) */
    const ax_context *context; /* the expansion being compiled, or NULL */
    bool training;         /* the models are built for training: Dropout keeps a node */
} ax_ctx;

ax_ctx *ax_ctx_new(void);
void ax_ctx_free(ax_ctx *ctx);
void ax_diag(ax_ctx *ctx, ax_severity sev, ax_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ax_vdiag(ax_ctx *ctx, ax_severity sev, ax_loc loc, const char *fmt, va_list ap);
#define ax_error(ctx, loc, ...) ax_diag((ctx), AX_ERROR, (loc), __VA_ARGS__)
#define ax_warning(ctx, loc, ...) ax_diag((ctx), AX_WARNING, (loc), __VA_ARGS__)
#define ax_note(ctx, loc, ...) ax_diag((ctx), AX_NOTE, (loc), __VA_ARGS__)
static inline ax_loc ax_noloc(void) { ax_loc l = {0, 0, 0}; return l; }

/* The closest of candidates[0..n) to name by edit distance, or NULL when
 * none is close enough to suggest ("did you mean ...?"). */
const char *ax_suggest(const char *name, const char *const *candidates, int n);

/* splitmix64: advances *state and returns the next pseudo-random value
 * (deterministic initialisation of parameters and of `axc run` inputs). */
uint64_t ax_splitmix64(uint64_t *state);

/* Internal error: prints "axc: internal error: ..." and aborts. */
_Noreturn void ax_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- progress of long operations (progress.c) ---------------------------
 * "\rLABEL i/N" on stderr at most five times a second, erased at the end;
 * silent unless stderr is a terminal. */
typedef struct ax_progress {
    const char *label;
    long total;
    bool on_tty, shown;
    double last;
} ax_progress;
void ax_progress_start(ax_progress *p, const char *label, long total);
void ax_progress_step(ax_progress *p, long done);
void ax_progress_end(ax_progress *p);

/* ---- files -------------------------------------------------------------- */
/* Reads a whole file (NUL-terminated, *len excludes the NUL) into the arena,
 * at most max bytes: a longer file (or an endless one such as /dev/zero)
 * fails with EFBIG before it is read.  Returns NULL and sets errno on
 * failure.  ax_read_file's bound is AX_MAX_READ_BYTES. */
#define AX_MAX_READ_BYTES ((size_t)64 << 20)
char *ax_read_file(ax_arena *a, const char *path, size_t *len);
char *ax_read_file_max(ax_arena *a, const char *path, size_t max, size_t *len);
/* Whether a and b name the same file: by device and inode where either
 * exists, else the same name in the same directory. */
bool ax_same_file(const char *a, const char *b);
/* Writes data to path atomically (temporary file in the same directory,
 * fsync-free rename).  Returns 0, or -1 with errno set and nothing left. */
int ax_write_file_atomic(const char *path, const void *data, size_t len);

/* A set of outputs written all-or-nothing: each staged file goes to a
 * temporary beside its destination (a device or FIFO destination is kept
 * in memory and written in place; a directory fails with EISDIR); commit
 * renames them all, abort (or a failed commit) removes every temporary and
 * restores the old file of every destination already renamed.  Any number
 * of files: the arrays grow together (heap). */
typedef struct ax_outset {  /* zero-initialise */
    int n, cap;
    char **final;
    char **temp;             /* NULL for an in-place destination */
    char **inplace;          /* the data of an in-place destination */
    size_t *inplace_len;
    int *slot;               /* the temporary's cleanup slot */
} ax_outset;
int ax_stage(ax_outset *o, const char *path, const void *data, size_t len); /* 0 or -1 (errno) */
int ax_commit(ax_outset *o);                                               /* 0 or -1 (errno) */
void ax_abort(ax_outset *o);

/* ---- signals and cleanup --------------------------------------------------
 * ax_handle_signals makes SIGINT, SIGTERM, SIGHUP and SIGQUIT remove every
 * registered path (files first, then directories) and kill the registered
 * child before the process dies of the signal.  ax_cleanup_add returns a
 * slot for ax_cleanup_drop, or -1 when full. */
#include <sys/types.h>
void ax_handle_signals(void);
int ax_cleanup_add(const char *path, bool is_dir);
void ax_cleanup_drop(int slot);
void ax_cleanup_child(pid_t pid);
void ax_cleanup_now(void);
/* Out of memory: cleans up, prints "axc: error: out of memory" and exits 2. */
_Noreturn void ax_out_of_memory(size_t bytes);

#endif
