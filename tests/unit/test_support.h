/* test_support.h — what several cmocka suites share: a compile context whose
 * diagnostics go to a temporary file, and the text printed there so far. */
#ifndef AX_TEST_SUPPORT_H
#define AX_TEST_SUPPORT_H

#include <stdio.h>
#include <string.h>

#include "ax.h"
#include "ir.h"

/* path and src may be NULL (no source lines in diagnostics). */
static inline ax_ctx *test_ctx_new(const char *path, const char *src)
{
    ax_ctx *ctx = ax_ctx_new();
    ctx->diag_out = tmpfile();
    ctx->path = path;
    ctx->src = src;
    ctx->src_len = src ? strlen(src) : 0;
    return ctx;
}

static inline void test_ctx_free(ax_ctx *ctx)
{
    fclose(ctx->diag_out);
    ax_ctx_free(ctx);
}

/* Everything printed through ctx's diagnostics so far (arena copy); later
 * diagnostics keep appending. */
static inline const char *test_diagnostics(ax_ctx *ctx)
{
    FILE *f = ctx->diag_out;
    long len = ftell(f);
    char *text = ax_alloc(ctx->arena, (size_t)len + 1);
    rewind(f);
    text[fread(text, 1, (size_t)len, f)] = '\0';
    fseek(f, 0, SEEK_END);
    return text;
}

/* Appends an input or param node of the given dtype and shape (inputs are
 * also registered in g->inputs). */
static inline int test_add_source(ir_graph *g, ir_op op, const char *name, axrt_dtype dtype,
                                  const int64_t *dims, int rank)
{
    int id = ir_add(g, op, NULL, 0, ax_noloc());
    ir_node *n = ir_at(g, id);
    n->name = name;
    n->dtype = dtype;
    n->rank = rank;
    memcpy(n->shape, dims, (size_t)rank * sizeof *dims);
    if (op == IR_OP_input)
        ir_add_input(g, id);
    return id;
}

#endif
