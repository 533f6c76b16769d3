/* lower.h — from the syntax tree to the graph IR (docs/language.md#constants, #models, #layers, #functions).
 * Resolves const names (with -D overrides), layer constructors and their
 * keyword arguments, layer/value naming (PyTorch state_dict names), calls,
 * pipes and operators; creates one IR_OP_param node per parameter with its
 * name, shape and initialisation role.  Shapes of computed nodes are left for
 * pass_shape.  Errors are located and collected (unknown names get a
 * did-you-mean suggestion). */
#ifndef AX_LOWER_H
#define AX_LOWER_H

#include "ast.h"
#include "ir.h"

typedef struct ax_define {  /* -D NAME=VALUE */
    const char *name;
    const char *value;      /* as written: an integer or a float */
} ax_define;

/* Lowers f->models[index].  Returns the graph even after errors (the caller
 * compares ctx->errors), so that pass_shape can still report the shape errors
 * that do not depend on them (docs/language.md#diagnostics: several errors per run).  In
 * such a graph a failed value has no node (and nothing was built on it) or is
 * a node marked IR_FAILED_RANK; it must go no further than pass_shape. */
ir_graph *lower_model(ax_ctx *ctx, const ast_file *f, int index,
                      const ax_define *defs, int ndefs);

/* How messages name .ax layers and operators (describe.c); lower_model
 * hangs it on every graph it builds. */
extern const ir_wording lower_ax_wording;

/* Checks that every -D names a const of the file (warning otherwise). */
void lower_check_defines(ax_ctx *ctx, const ast_file *f, const ax_define *defs, int ndefs);

/* Name comparisons made by the function-form scope's lookups, all models
 * so far: linear in the statement count (a hash table; test_lower counts
 * them, bench/compile_scaling.sh times it). */
extern long long lower_scope_compares;

#endif
