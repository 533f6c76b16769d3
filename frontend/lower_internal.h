/* lower_internal.h — what lower.c (consts, scopes, expressions, the two model
 * forms) and lower_layers.c (the tables of layer constructors and functions)
 * share.  Not part of the compiler's public interface: only those two files
 * include it. */
#ifndef AX_LOWER_INTERNAL_H
#define AX_LOWER_INTERNAL_H

#include "lower.h"

/* A compile-time number: a literal, a const, or arithmetic on them. */
typedef struct lower_num {
    bool is_int;
    int64_t i;   /* is_int */
    double f;    /* always set */
} lower_num;

typedef struct lower_ctor lower_ctor;
typedef struct lower_fn lower_fn;

/* One instantiated layer: its parameters exist in the graph; applying it
 * adds compute nodes that share them. */
typedef struct lower_layer {
    const lower_ctor *ctor;
    const char *name;          /* layer name = state_dict prefix */
    ax_loc loc;                /* the declaration (given to its params) */
    ir_op op;                  /* IR_OP_COUNT: identity (Dropout) */
    ir_attrs attrs;
    int params[IR_MAX_SRC];    /* operands after the inputs; IR_NONE if absent */
    int nparams;
    int min_in, max_in;        /* tensor inputs it is applied to: one or the other */
    ir_op act;                 /* activation= epilogue node, IR_OP_COUNT if none */
    ir_attrs act_attrs;
} lower_layer;

/* A name in a function-form body: a value (node) or a declared layer. */
typedef struct lower_binding {
    const char *name;
    int node;                  /* value: its node id */
    lower_layer *layer;        /* declared layer, else NULL */
} lower_binding;

/* Evaluation state of one const of the file, per lowered model. */
typedef enum { CONST_UNSEEN, CONST_BUSY, CONST_OK, CONST_FAILED } lower_const_state;

typedef struct lower_state {
    ax_ctx *ctx;
    const ast_file *file;
    const ast_model *model;
    ir_graph *g;
    const ax_define *defs;
    int ndefs;
    lower_const_state *const_state;   /* per file const */
    lower_num *const_value;
    lower_binding *scope;
    int nscope, scope_cap;
    const char **layer_names;          /* every layer created, for duplicates */
    int nlayers, layers_cap;
    int ninline;                       /* inline constructors so far */
} lower_state;

/* Arguments of one application: tensors already lowered (a piped value),
 * then positional arguments as written, then keyword arguments (AST_KWARG). */
typedef struct lower_args {
    ax_loc loc;                        /* the application expression */
    int in[IR_MAX_SRC];
    int nin;
    ast_node *const *pos;
    int npos;
    ast_node *const *kw;
    int nkw;
} lower_args;

/* ---- lower.c ------------------------------------------------------------ */
/* Lowers an expression to a tensor node; IR_NONE after reporting an error. */
int lower_expr(lower_state *st, const ast_node *e);
/* Evaluates a constant expression (numbers, const names, + - * /);
 * false after reporting an error located at e. */
bool lower_eval_num(lower_state *st, const ast_node *e, lower_num *out);
/* Attributes with every "unset" field at its neutral value (act = IR_NONE,
 * stride/dilation 1, groups 1, axis -1). */
ir_attrs lower_attrs(void);
/* Appends a compute node with model dtype; attrs NULL means lower_attrs(). */
int lower_add(lower_state *st, ir_op op, const int *src, int nsrc,
              const ir_attrs *attrs, ax_loc loc, const char *name);
/* Reports the error message, plus "; did you mean 'x'?" when one of
 * cands[0..n) is close to name. */
void lower_unknown(lower_state *st, ax_loc loc, const char *message, const char *name,
                   const char *const *cands, int n);
/* Splits a call's arguments into positional and keyword (AST_KWARG) arrays;
 * a->loc = the call, a->nin = 0. */
void lower_split_args(lower_state *st, const ast_node *call, lower_args *a);
/* Records a new layer name; reports a duplicate (false). */
bool lower_claim_layer_name(lower_state *st, const char *name, ax_loc loc);

/* ---- lower_layers.c ----------------------------------------------------- */
const lower_ctor *lower_find_ctor(const char *name);
const lower_fn *lower_find_fn(const char *name);
/* chunk(x, n; dims=k) bound to nresults names (language.md §10): the
 * multi-result chunk node (ir.h "Several results"), or IR_NONE after an error. */
int lower_chunk(lower_state *st, const ast_node *call, int nresults);
/* Appends the names of every constructor and function to names (arena
 * array grown by the caller: at most lower_ncallables() entries). */
int lower_ncallables(void);
int lower_callable_names(const char **names);
const char *lower_ctor_name(const lower_ctor *c);
/* Instantiates constructor c from the call `c(...)`: validates positional
 * and keyword arguments, creates the parameter nodes named "<name>.<param>"
 * located at decl.  NULL after reporting errors. */
lower_layer *lower_make_layer(lower_state *st, const lower_ctor *c, const ast_node *call,
                              const char *name, ax_loc decl);
/* Applies a layer to in[0..nin) at loc; IR_NONE after an error. */
int lower_apply_layer(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc);
/* Applies a function to args (lowering the positional tensor arguments). */
int lower_apply_fn(lower_state *st, const lower_fn *fn, const lower_args *args);

#endif
