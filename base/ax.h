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

/* ---- diagnostics (language.md §8) --------------------------------------
 * Format:  FILE:LINE:COL: error: MESSAGE
 *          <the source line>
 *          <caret and tildes under the span>
 * A location with line 0 prints "FILE: error: MESSAGE" (or "axc: error:"
 * when no file is known) and no source line. */
typedef enum ax_severity { AX_NOTE, AX_WARNING, AX_ERROR } ax_severity;

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

/* ---- files -------------------------------------------------------------- */
/* Reads a whole file (NUL-terminated, *len excludes the NUL) into the arena.
 * Returns NULL and sets errno on failure. */
char *ax_read_file(ax_arena *a, const char *path, size_t *len);
/* Writes data to path atomically (temporary file in the same directory,
 * fsync-free rename).  Returns 0, or -1 with errno set and nothing left. */
int ax_write_file_atomic(const char *path, const void *data, size_t len);

/* A set of outputs written all-or-nothing: each staged file goes to a
 * temporary beside its destination; commit renames them all, abort (or a
 * failed commit) removes every temporary and every file already renamed. */
typedef struct ax_outset {  /* zero-initialise; any number of files (heap) */
    int n, cap;
    char **final;
    char **temp;
} ax_outset;
int ax_stage(ax_outset *o, const char *path, const void *data, size_t len); /* 0 or -1 (errno) */
int ax_commit(ax_outset *o);                                               /* 0 or -1 (errno) */
void ax_abort(ax_outset *o);

#endif
