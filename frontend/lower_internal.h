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

typedef struct lower_layer lower_layer;

/* What a lower_layer is: a constructor's layer, or a composite of
 * docs/language.md#composition (a block instance, a Chain, a list of instances). */
typedef enum lower_layer_kind { LAYER_CTOR, LAYER_BLOCK, LAYER_CHAIN, LAYER_LIST } lower_layer_kind;

/* A layer created inline while applying a block instance, kept so that the
 * instance's next application reuses it (shared weights); `stamp` is the
 * application that last used it. */
typedef struct lower_inline {
    const ast_node *at;
    lower_layer *layer;
    int stamp;
} lower_inline;

/* One instantiated layer: its parameters exist in the graph; applying it
 * adds compute nodes that share them. */
struct lower_layer {
    lower_layer_kind kind;
    const lower_ctor *ctor;           /* LAYER_CTOR */
    const char *name;          /* layer name = state_dict prefix */
    ax_loc loc;                /* the declaration (given to its params) */
    ir_op op;                  /* IR_OP_COUNT: identity (Dropout) */
    ir_attrs attrs;
    int params[IR_SRC_ROOM];   /* operands after the inputs; IR_NONE if absent */
    int nparams;
    int min_in, max_in;        /* tensor inputs it is applied to: one or the other */
    ir_op act;                 /* activation= epilogue node, IR_OP_COUNT if none */
    ir_attrs act_attrs;
    bool used;                 /* applied somewhere (function form: unused warns) */
    /* GRU, LSTM: rnn_layers x rnn_dirs cells, each with weight_ih, weight_hh,
     * bias_ih, bias_hh (IR_NONE without bias) in rnn_params (nparams of them;
     * more than params[] holds); batch_first as PyTorch's */
    int *rnn_params;
    int rnn_layers, rnn_dirs;
    bool batch_first;
    /* LAYER_BLOCK: the block, its keyword parameters bound as numbers, the
     * layer each body statement declares (decls[i], when declared[i]) */
    const ast_model *block;
    struct lower_binding *consts;
    int nconsts;
    lower_layer **decls;
    bool *declared;
    ax_context context;        /* "in 'layer2.0' (block 'basic')" at the declaration */
    lower_inline *inlines;
    int ninlines, inlines_cap, ninline_names;
    /* LAYER_CHAIN, LAYER_LIST: the elements; a Chain element that is a
     * function is fns[i] (items[i] NULL) */
    lower_layer **items;
    const ast_node **fns;
    int nitems;
};

/* A name in a function-form body: a value (node), a declared layer, or a
 * compile-time number (a block parameter, a for loop variable). */
typedef struct lower_binding {
    const char *name;
    int node;                  /* value: its node id */
    lower_layer *layer;        /* declared layer, else NULL */
    bool is_num;
    lower_num num;
    int shadowed;              /* index of the binding of the same name it hides, or -1 */
} lower_binding;

/* name -> index of its innermost binding in lower_state.scope: a hash table
 * (open addressing) so a body of N named statements lowers in O(N) rather
 * than scanning the scope per name.  Bindings cut off by a shrinking nscope
 * (a loop body's names) are unhooked lazily, innermost first. */
typedef struct lower_scope_index {
    struct lower_scope_slot { const char *name; int top; } *slots;
    int cap, used;              /* cap a power of two; used slots (names) */
    int covered;                /* scope[0..covered) are in the table */
} lower_scope_index;


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
    int const_depth;                  /* consts being evaluated, one inside the other */
    lower_num *const_value;
    lower_binding *scope;
    int nscope, scope_cap;
    lower_scope_index *scope_index;    /* of scope (NULL: none yet) */
    const char **layer_names;          /* every layer created, for duplicates */
    int nlayers, layers_cap;
    int ninline;                       /* inline constructors so far */
    lower_layer *instance;             /* the block instance being applied, or NULL */
    int stamp;                         /* the block application under way */
    int napplications;                 /* block applications so far */
    int64_t unrolled;                  /* for-loop iterations and list elements so far */
    int depth;                         /* nesting of block applications */
    bool *block_failed;                /* per file block: an application had errors */
} lower_state;

/* Arguments of one application: tensors already lowered (a piped value),
 * then positional arguments as written, then keyword arguments (AST_KWARG). */
typedef struct lower_args {
    ax_loc loc;                        /* the application expression */
    const int *in;                     /* nin values (any number) */
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
/* Appends a compute node with model dtype; attrs NULL means ir_attrs_unset(). */
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

/* The innermost binding of name, or NULL. */
lower_binding *lower_scope_find(lower_state *st, const char *name);
/* Binds name to a value node (IR_NONE: a failed value) or a layer. */
void lower_scope_bind(lower_state *st, const char *name, int node, lower_layer *layer);
/* True when e is made only of numbers and compile-time number names. */
bool lower_is_const_expr(lower_state *st, const ast_node *e);
/* Binds name to a compile-time number. */
void lower_scope_bind_num(lower_state *st, const char *name, lower_num v);
/* Applies the callable expression f (a name, a constructor or block call, a
 * keyword-only function call) to in[0..nin); layer_name names a layer f
 * creates (NULL: the next inline name). */
int lower_apply_callable(lower_state *st, const ast_node *f, const int *in, int nin,
                         const char *layer_name, ax_loc decl, ax_loc loc);
/* Lowers statements of a function or block body (assignments, for loops);
 * stops at a return and gives it (NULL when there is none).  inst: the
 * block instance whose top-level body this is (its declared layers), else NULL. */
const ast_stmt *lower_body(lower_state *st, ast_stmt *const *stmts, int n, const lower_layer *inst);

/* ---- lower_blocks.c (docs/language.md#composition) ----------------------------------- */
/* The block named name, or NULL. */
const ast_model *lower_find_block(const lower_state *st, const char *name);
/* When rhs declares a layer (a constructor call, Chain(...), a block call
 * with keyword arguments, [E for i in a:b], list[i]) sets *is_decl and
 * returns it named name (NULL after an error); else *is_decl = false. */
lower_layer *lower_declare(lower_state *st, const char *name, const ast_node *rhs, ax_loc decl,
                           bool *is_decl);
/* Applies a block instance or a Chain; IR_NONE after an error. */
int lower_apply_composite(lower_state *st, const lower_layer *l, const int *in, int nin,
                          ax_loc loc);
/* Unrolls `for v in a:b` / `for v in list`. */
void lower_for(lower_state *st, const ast_stmt *s);
/* The layer list[i] names (constant i), or NULL after an error. */
lower_layer *lower_index_layer(lower_state *st, const ast_node *e);
/* The name of the next inline layer ("3", or "<instance>.3" inside a block). */
const char *lower_inline_name(lower_state *st);

/* ---- lower_slice.c (docs/language.md#more-operators) ------------------------------------- */
/* x[a:b, :, i] on a value; IR_NONE after an error. */
int lower_index_value(lower_state *st, const ast_node *e);
/* `a, b = split(x, (s0, s1); dims=k)`: binds every target. */
void lower_split(lower_state *st, const ast_stmt *s);

/* ---- lower_layers.c ----------------------------------------------------- */
/* The axc spelling of a PyTorch module or function name (Conv2d -> "Conv((kh,
 * kw), in => out)"), or NULL. */
const char *lower_torch_name(const char *name);
const lower_ctor *lower_find_ctor(const char *name);
const lower_fn *lower_find_fn(const char *name);
/* Whether fn is elementwise (may be called as fn.(args), a broadcast call). */
bool lower_fn_is_elementwise(const lower_fn *fn);
/* chunk(x, n; dims=k) bound to nresults names (docs/language.md#more-operators): the
 * multi-result chunk node (ir.h "Several results"), or IR_NONE after an error. */
int lower_chunk(lower_state *st, const ast_node *call, int nresults);
/* Whether l is a GRU or LSTM. */
bool lower_is_rnn(const lower_layer *l);
/* `y, h = gru(...)` / `y, h, c = lstm(...)`: PyTorch's output, h_n and c_n
 * ([layers * dirs, N, H]) into outs[0..nouts); false after an error. */
bool lower_rnn_unpack(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc,
                      int nouts, int *outs);
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
