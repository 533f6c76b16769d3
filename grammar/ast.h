/* ast.h — the syntax tree the bison parser builds (docs/language.md).  One "fat"
 * node type for expressions; statements, parameters and models have their
 * own small structs.  Everything is allocated in the context's arena. */
#ifndef AX_AST_H
#define AX_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "ax.h"

typedef enum ast_kind {
    AST_NUM,    /* number literal: is_int ? ival : fval (fval always set).
                   A '-' written directly before a literal is folded into it:
                   `-1` is NUM -1 (spanning the '-'), while `-(1)` and `-x`
                   are AST_NEG. */
    AST_IDENT,  /* name */
    AST_CALL,   /* callee(args...); args may contain AST_KWARG nodes, in source order;
                   op AST_OP_DOTCALL: the broadcast call callee.(args...) */
    AST_KWARG,  /* name = lhs (only inside call arguments) */
    AST_PAIR,   /* lhs => rhs */
    AST_TUPLE,  /* (args...) with at least one comma */
    AST_BINOP,  /* lhs op rhs, op one of '+' '-' '*' '/' and AST_OP_DOTMUL AST_OP_DOTDIV AST_OP_DOTPOW */
    AST_NEG,    /* -lhs */
    AST_PIPE,   /* lhs |> rhs */
    AST_RANGE,  /* lhs:rhs, an inclusive integer range (for loops, comprehensions) */
    AST_COMPREHENSION, /* [lhs for name in rhs] (docs/language.md#composition) */
    AST_INDEX,  /* callee[args...]; an arg is an expression or an AST_SLICE */
    AST_SLICE   /* lhs:rhs or lhs:rhs:step inside [ ], each part NULL when omitted */
} ast_kind;

enum { AST_OP_DOTMUL = 256, AST_OP_DOTDIV = 257, AST_OP_DOTPOW = 258, AST_OP_DOTCALL = 259 };

typedef struct ast_node ast_node;
struct ast_node {
    ast_kind kind;
    ax_loc loc;           /* the whole expression */
    const char *name;     /* IDENT, KWARG, COMPREHENSION (the loop variable) */
    int op;               /* BINOP; CALL: AST_OP_DOTCALL or 0 */
    bool is_int;          /* NUM */
    int64_t ival;
    double fval;
    ast_node *lhs, *rhs;  /* BINOP, PIPE, PAIR, NEG (lhs), KWARG (lhs = value) */
    ast_node *callee;     /* CALL, INDEX */
    ast_node *step;       /* SLICE: the step, or NULL */
    ast_node **args;      /* CALL, TUPLE */
    int nargs;
    int depth;            /* levels of nodes below and including this one (a leaf is 1) */
};

/* The deepest expression the parser accepts.  Every later walk over an
 * expression (lowering, constant folding, dumps) recurses, so this bound is
 * what keeps them within the stack; deeper input is a located error. */
#define AST_MAX_DEPTH 1000

typedef enum ast_stmt_kind {
    AST_STMT_EXPR, AST_STMT_ASSIGN, AST_STMT_RETURN, AST_STMT_UNPACK,
    AST_STMT_FOR          /* for name in value  body  end (unrolled, docs/language.md#composition) */
} ast_stmt_kind;

typedef struct ast_stmt ast_stmt;
struct ast_stmt {
    ast_stmt_kind kind;
    ax_loc loc;           /* the whole statement */
    const char *name;     /* ASSIGN: the bound name; FOR: the loop variable */
    ax_loc name_loc;
    ast_node *value;      /* EXPR, ASSIGN, UNPACK; FOR: what is iterated (AST_RANGE or a list) */
    ast_node **targets;   /* UNPACK (a, b = value): the bound names, AST_IDENT, in order */
    int ntargets;
    ast_stmt **body;      /* FOR */
    int nbody;
    ast_node **rets;      /* RETURN: values, in order */
    int nrets;
};

typedef struct ast_param {  /* x::Float32[1, 784] */
    const char *name;
    ax_loc loc;
    const char *type;       /* "Float32", "f32", ... as written; NULL: a block input */
    ax_loc type_loc;
    ast_node **dims;        /* integer expressions (numbers, const names, arithmetic) */
    int ndims;
} ast_param;

typedef struct ast_option { /* backend=cuda */
    const char *key, *value;
    ax_loc loc;
} ast_option;

typedef struct ast_model {
    const char *name;
    ax_loc loc;              /* the model name in the signature */
    bool is_function;        /* function form (3.2) vs chain form (3.1) */
    bool is_block;           /* @axiom block function (docs/language.md#composition) */
    struct ast_const *kwparams; /* block: keyword parameters (value NULL: no default) */
    int nkwparams;
    ast_option *opts;
    int nopts;
    ast_param *params;
    int nparams;
    ast_stmt **stmts;
    int nstmts;
} ast_model;

typedef struct ast_const {
    const char *name;
    ax_loc loc;
    ast_node *value;
} ast_const;

typedef struct ast_file {
    ast_const *consts;       /* in source order */
    int nconsts;
    ast_model *models;       /* in source order (blocks excluded) */
    int nmodels;
    ast_model *blocks;       /* @axiom block function ..., in source order */
    int nblocks;
} ast_file;

/* Parses ctx->src (named ctx->path).  Syntax errors are reported through
 * ctx diagnostics (several per run where the parser can recover).  Returns
 * the tree, or NULL when there were errors. */
ast_file *ast_parse(ax_ctx *ctx);

/* Writes a readable S-expression form of the tree (for parser tests). */
void ast_dump(const ast_file *f, ax_buf *out);

#endif
