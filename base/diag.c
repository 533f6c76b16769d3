/* diag.c — the compilation context and user-facing diagnostics
 * (docs/language.md#diagnostics, contract in ax.h).
 *
 *   FILE:LINE:COL: error: MESSAGE
 *   <the source line, verbatim>
 *   <spaces (tabs where the source has tabs) then ^ and ~ under the span>
 *
 * Policy: -w drops warnings; -Werror turns each warning into an error
 * tagged "[-Werror]" that is counted as an error.  After max_errors errors
 * (<= 0 means no limit) nothing more is printed except one line saying so,
 * but errors are still counted so the run still fails. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ax.h"

ax_ctx *ax_ctx_new(void)
{
    ax_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        ax_out_of_memory(0);
    ctx->arena = ax_arena_new();
    ctx->diag_out = stderr;
    ctx->max_errors = 20;
    return ctx;
}

void ax_ctx_free(ax_ctx *ctx)
{
    if (!ctx)
        return;
    ax_arena_free(ctx->arena);
    free(ctx);
}

/* Start and length of 1-based line `line` in src, excluding its newline
 * (and a CR before it).  Returns false when the source has no such line. */
static bool find_source_line(const ax_ctx *ctx, int line, const char **start, size_t *len)
{
    if (!ctx->src || line < 1)
        return false;
    const char *p = ctx->src, *end = ctx->src + ctx->src_len;
    for (int l = 1; l < line; l++) {
        p = memchr(p, '\n', (size_t)(end - p));
        if (!p)
            return false;
        p++;
    }
    if (p == end && line > 1)
        return false;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);
    if (n > 0 && p[n - 1] == '\r')
        n--;
    *start = p;
    *len = n;
    return true;
}

/* Source lines longer than this are shown as a window of this many bytes
 * around the column, "..." marking what is cut (a generated 10 MB line
 * would otherwise be echoed whole). */
#define EXCERPT_MAX 160

/* Prints the source line (or its window around loc) and the caret line
 * under loc, each with one write. */
static void print_excerpt(const ax_ctx *ctx, ax_loc loc)
{
    const char *text;
    size_t linelen;
    if (!find_source_line(ctx, loc.line, &text, &linelen))
        return;
    size_t col = loc.col > 0 ? (size_t)loc.col - 1 : 0;
    size_t start = 0, shown = linelen;
    if (linelen > EXCERPT_MAX) {
        start = col > EXCERPT_MAX / 2 ? col - EXCERPT_MAX / 2 : 0;
        if (start > linelen - EXCERPT_MAX)
            start = linelen - EXCERPT_MAX;
        shown = EXCERPT_MAX;
    }
    const char *cut_left = start > 0 ? "..." : "", *cut_right = start + shown < linelen ? "..." : "";
    ax_buf b = {0};
    ax_buf_printf(&b, "%s%.*s%s\n", cut_left, (int)shown, text + start, cut_right);
    size_t pad = col - start > shown + 1 ? shown + 1 : col - start;
    ax_buf_puts(&b, cut_left);
    for (size_t i = 0; i < pad; i++)
        ax_buf_puts(&b, start + i < linelen && text[start + i] == '\t' ? "\t" : " ");
    ax_buf_puts(&b, "^");
    size_t span_end = col + (loc.len > 1 ? (size_t)loc.len : 1);
    if (span_end > start + shown)
        span_end = start + shown;
    for (size_t i = col + 1; i < span_end; i++)
        ax_buf_puts(&b, "~");
    ax_buf_puts(&b, "\n");
    fwrite(b.data, 1, b.len, ctx->diag_out);
    ax_buf_free(&b);
}

static const char *severity_word(ax_severity sev)
{
    switch (sev) {
    case AX_NOTE: return "note";
    case AX_WARNING: return "warning";
    case AX_ERROR: return "error";
    }
    return "error";
}

/* True once the error limit was passed: prints the stop line the first
 * time and silences everything after it. */
static bool over_error_limit(ax_ctx *ctx)
{
    if (ctx->max_errors <= 0 || ctx->errors <= ctx->max_errors)
        return false;
    if (ctx->errors == ctx->max_errors + 1)
        fputs("axc: too many errors, stopping\n", ctx->diag_out);
    return true;
}

void ax_vdiag(ax_ctx *ctx, ax_severity sev, ax_loc loc, const char *fmt, va_list ap)
{
    bool promoted = false;
    if (sev == AX_WARNING) {
        if (ctx->no_warnings)
            return;
        if (ctx->werror) {
            sev = AX_ERROR;
            promoted = true;
        } else {
            ctx->warnings++;
        }
    }
    if (sev == AX_ERROR) {
        ctx->errors++;
        if (over_error_limit(ctx))
            return;
    } else if (ctx->max_errors > 0 && ctx->errors > ctx->max_errors) {
        return;   /* notes and warnings after the stop line would dangle */
    }
    FILE *out = ctx->diag_out ? ctx->diag_out : stderr;
    ctx->diag_out = out;
    const char *file = ctx->path ? ctx->path : (loc.line > 0 ? "<input>" : "axc");
    if (loc.line > 0)
        fprintf(out, "%s:%d:%d: %s: ", file, loc.line, loc.col, severity_word(sev));
    else
        fprintf(out, "%s: %s: ", file, severity_word(sev));
    vfprintf(out, fmt, ap);
    fputs(promoted ? " [-Werror]\n" : "\n", out);
    if (loc.line > 0)
        print_excerpt(ctx, loc);
    for (const ax_context *c = sev == AX_NOTE ? NULL : ctx->context; c; c = c->outer) {
        if (c->loc.line > 0)
            fprintf(out, "%s:%d:%d: note: %s\n", file, c->loc.line, c->loc.col, c->what);
        else
            fprintf(out, "%s: note: %s\n", file, c->what);
        if (c->loc.line > 0)
            print_excerpt(ctx, c->loc);
    }
    fflush(out);
}

void ax_diag(ax_ctx *ctx, ax_severity sev, ax_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ax_vdiag(ctx, sev, loc, fmt, ap);
    va_end(ap);
}

static int fold_char(int c, bool fold) { return fold ? tolower(c) : c; }

/* Edit distance between a and b counting insertions, deletions,
 * substitutions and swaps of adjacent characters ("frist" -> "first" is 1;
 * optimal string alignment); case-insensitive when fold. */
static size_t edit_distance(const char *a, const char *b, bool fold)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *rows = malloc(3 * (lb + 1) * sizeof *rows);
    if (!rows)
        ax_out_of_memory(0);
    size_t *prev2 = rows, *prev = rows + lb + 1, *cur = rows + 2 * (lb + 1);
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        int ca = fold_char((unsigned char)a[i - 1], fold);
        for (size_t j = 1; j <= lb; j++) {
            int cb = fold_char((unsigned char)b[j - 1], fold);
            size_t best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == fold_char((unsigned char)b[j - 2], fold) &&
                fold_char((unsigned char)a[i - 2], fold) == cb && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    size_t d = prev[lb];
    free(rows);
    return d;
}

/* Ranks by case-insensitive distance (so "dense" finds "Dense" at
 * distance 0), then by exact distance, then by candidate order. */
const char *ax_suggest(const char *name, const char *const *candidates, int n)
{
    size_t len = strlen(name);
    size_t limit = len / 3 > 1 ? len / 3 : 1;
    const char *best = NULL;
    size_t best_fold = 0, best_exact = 0;
    for (int i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c || strcmp(c, name) == 0)
            continue;
        size_t d_fold = edit_distance(name, c, true);
        if (d_fold > limit)
            continue;
        size_t d_exact = edit_distance(name, c, false);
        if (!best || d_fold < best_fold || (d_fold == best_fold && d_exact < best_exact)) {
            best = c;
            best_fold = d_fold;
            best_exact = d_exact;
        }
    }
    return best;
}
