/* ast.c — syntax tree constructors for the grammar actions (declared in the
 * generated axc.tab.h) and ast_dump, the S-expression form parser tests pin:
 *
 *   (const N 32)
 *   (model mlp chain
 *     (option backend cuda)
 *     (param x Float32 1 784)
 *     (call Dense (=> 784 256) (kw activation relu))
 *     (= h (|> x relu))
 *     (return h out))
 *
 * Expressions: numbers as written (floats always show a '.', an exponent,
 * inf or nan, so 1.0 and 1 differ), names bare, and (call F ARGS...),
 * (kw NAME VALUE), (=> A B), (tuple ...), (+ A B) (- A B) (* A B) (/ A B)
 * (.* A B) (./ A B), (neg A), (|> A B).  Locations are not dumped. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "axc.tab.h"

axc_vec *axc_vec_push(ax_arena *a, axc_vec *v, void *item)
{
    if (!v)
        v = ax_alloc(a, sizeof *v);
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4;
        void **grown = ax_alloc(a, (size_t)v->cap * sizeof *grown);
        if (v->n)
            memcpy(grown, v->items, (size_t)v->n * sizeof *grown);
        v->items = grown;
    }
    v->items[v->n++] = item;
    return v;
}

/* The vector's items as an exactly sized array (NULL when empty). */
void **axc_vec_array(ax_arena *a, const axc_vec *v, int *n)
{
    *n = v ? v->n : 0;
    if (!*n)
        return NULL;
    void **out = ax_alloc(a, (size_t)v->n * sizeof *out);
    memcpy(out, v->items, (size_t)v->n * sizeof *out);
    return out;
}

/* Makes n one level deeper than child (when child is deeper than n's
 * other children so far). */
static void deepen(ast_node *n, const ast_node *child)
{
    if (child && child->depth >= n->depth)
        n->depth = child->depth + 1;
}

ast_node *ast_new_node(ax_arena *a, ast_kind kind, ax_loc loc)
{
    ast_node *n = ax_alloc(a, sizeof *n);
    n->kind = kind;
    n->loc = loc;
    n->depth = 1;
    return n;
}

ast_node *ast_new_int(ax_arena *a, ax_loc loc, int64_t v)
{
    ast_node *n = ast_new_node(a, AST_NUM, loc);
    n->is_int = true;
    n->ival = v;
    n->fval = (double)v;
    return n;
}

ast_node *ast_new_float(ax_arena *a, ax_loc loc, double v)
{
    ast_node *n = ast_new_node(a, AST_NUM, loc);
    n->fval = v;
    return n;
}

ast_node *ast_new_ident(ax_arena *a, ax_loc loc, const char *name)
{
    ast_node *n = ast_new_node(a, AST_IDENT, loc);
    n->name = name;
    return n;
}

/* BINOP (with op), PAIR and PIPE. */
ast_node *ast_new_binary(ax_arena *a, ast_kind kind, int op, ax_loc loc, ast_node *lhs, ast_node *rhs)
{
    ast_node *n = ast_new_node(a, kind, loc);
    n->op = op;
    n->lhs = lhs;
    n->rhs = rhs;
    deepen(n, lhs);
    deepen(n, rhs);
    return n;
}

/* CALL (callee set) or TUPLE (callee NULL) over the vector's nodes. */
ast_node *ast_new_list(ax_arena *a, ast_kind kind, ax_loc loc, ast_node *callee, axc_vec *args)
{
    ast_node *n = ast_new_node(a, kind, loc);
    n->callee = callee;
    n->args = (ast_node **)axc_vec_array(a, args, &n->nargs);
    deepen(n, callee);
    for (int i = 0; i < n->nargs; i++)
        deepen(n, n->args[i]);
    return n;
}

ast_node *ast_new_kwarg(ax_arena *a, ax_loc loc, const char *name, ast_node *value)
{
    ast_node *n = ast_new_node(a, AST_KWARG, loc);
    n->name = name;
    n->lhs = value;
    deepen(n, value);
    return n;
}

/* `-operand`.  A minus written directly before a number literal (not a
 * parenthesised one) becomes part of the literal: `-1` is NUM -1. */
ast_node *ast_new_neg(ax_arena *a, ax_loc loc, ast_node *operand, bool operand_is_bare)
{
    if (operand->kind == AST_NUM && operand_is_bare) {
        if (operand->is_int)
            operand->ival = -operand->ival;
        operand->fval = -operand->fval;
        operand->loc = loc;
        return operand;
    }
    ast_node *n = ast_new_node(a, AST_NEG, loc);
    n->lhs = operand;
    deepen(n, operand);
    return n;
}

ast_stmt *ast_new_stmt(ax_arena *a, ast_stmt_kind kind, ax_loc loc)
{
    ast_stmt *s = ax_alloc(a, sizeof *s);
    s->kind = kind;
    s->loc = loc;
    return s;
}

/* ---- dump ---------------------------------------------------------------- */

/* Shortest %g form that reads back to the same double, marked as a float. */
static void dump_float(double v, ax_buf *out)
{
    char text[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, v);
        if (strtod(text, NULL) == v)
            break;
    }
    if (!strpbrk(text, ".eEn"))   /* n: inf, nan */
        strcat(text, ".0");
    ax_buf_puts(out, text);
}

static const char *binop_text(int op)
{
    switch (op) {
    case '+': return "+";
    case '-': return "-";
    case '*': return "*";
    case '/': return "/";
    case AST_OP_DOTMUL: return ".*";
    case AST_OP_DOTDIV: return "./";
    case AST_OP_DOTPOW: return ".^";
    default: ax_die("ast_dump: unknown operator %d", op);
    }
}

static void dump_expr(const ast_node *n, ax_buf *out);

static void dump_pair(const char *head, const ast_node *a, const ast_node *b, ax_buf *out)
{
    ax_buf_printf(out, "(%s ", head);
    dump_expr(a, out);
    ax_buf_puts(out, " ");
    dump_expr(b, out);
    ax_buf_puts(out, ")");
}

static void dump_args(const ast_node *n, ax_buf *out)
{
    for (int i = 0; i < n->nargs; i++) {
        ax_buf_puts(out, " ");
        dump_expr(n->args[i], out);
    }
    ax_buf_puts(out, ")");
}

static void dump_expr(const ast_node *n, ax_buf *out)
{
    switch (n->kind) {
    case AST_NUM:
        if (n->is_int)
            ax_buf_printf(out, "%" PRId64, n->ival);
        else
            dump_float(n->fval, out);
        break;
    case AST_IDENT: ax_buf_puts(out, n->name); break;
    case AST_CALL:
        ax_buf_puts(out, n->op == AST_OP_DOTCALL ? "(call. " : "(call ");
        dump_expr(n->callee, out);
        dump_args(n, out);
        break;
    case AST_TUPLE:
        ax_buf_puts(out, "(tuple");
        dump_args(n, out);
        break;
    case AST_KWARG:
        ax_buf_printf(out, "(kw %s ", n->name);
        dump_expr(n->lhs, out);
        ax_buf_puts(out, ")");
        break;
    case AST_PAIR: dump_pair("=>", n->lhs, n->rhs, out); break;
    case AST_BINOP: dump_pair(binop_text(n->op), n->lhs, n->rhs, out); break;
    case AST_PIPE: dump_pair("|>", n->lhs, n->rhs, out); break;
    case AST_NEG:
        ax_buf_puts(out, "(neg ");
        dump_expr(n->lhs, out);
        ax_buf_puts(out, ")");
        break;
    case AST_RANGE: dump_pair("range", n->lhs, n->rhs, out); break;
    case AST_COMPREHENSION:
        ax_buf_printf(out, "(for %s ", n->name);
        dump_pair("in", n->lhs, n->rhs, out);
        ax_buf_puts(out, ")");
        break;
    case AST_INDEX:
        ax_buf_puts(out, "(index ");
        dump_expr(n->callee, out);
        dump_args(n, out);
        break;
    case AST_SLICE:
        ax_buf_puts(out, "(slice");
        for (const ast_node *part[3] = {n->lhs, n->rhs, n->step}, **q = part; q < part + 3; q++) {
            ax_buf_puts(out, " ");
            if (*q) dump_expr(*q, out);
            else ax_buf_puts(out, "_");
        }
        ax_buf_puts(out, ")");
        break;
    }
}

static void dump_stmt(const ast_stmt *s, ax_buf *out)
{
    switch (s->kind) {
    case AST_STMT_FOR:
        ax_buf_printf(out, "(for %s ", s->name);
        dump_expr(s->value, out);
        for (int i = 0; i < s->nbody; i++) {
            ax_buf_puts(out, " ");
            dump_stmt(s->body[i], out);
        }
        ax_buf_puts(out, ")");
        break;
    case AST_STMT_EXPR: dump_expr(s->value, out); break;
    case AST_STMT_ASSIGN:
        ax_buf_printf(out, "(= %s ", s->name);
        dump_expr(s->value, out);
        ax_buf_puts(out, ")");
        break;
    case AST_STMT_UNPACK:
        ax_buf_puts(out, "(= (");
        for (int i = 0; i < s->ntargets; i++)
            ax_buf_printf(out, "%s%s", i ? " " : "", s->targets[i]->name);
        ax_buf_puts(out, ") ");
        dump_expr(s->value, out);
        ax_buf_puts(out, ")");
        break;
    case AST_STMT_RETURN:
        ax_buf_puts(out, "(return");
        for (int i = 0; i < s->nrets; i++) {
            ax_buf_puts(out, " ");
            dump_expr(s->rets[i], out);
        }
        ax_buf_puts(out, ")");
        break;
    }
}

static void dump_model(const ast_model *m, ax_buf *out)
{
    ax_buf_printf(out, "(model %s %s", m->name,
                  m->is_block ? "block" : m->is_function ? "function" : "chain");
    for (int i = 0; i < m->nkwparams; i++) {
        ax_buf_printf(out, "\n  (kwparam %s", m->kwparams[i].name);
        if (m->kwparams[i].value) {
            ax_buf_puts(out, " ");
            dump_expr(m->kwparams[i].value, out);
        }
        ax_buf_puts(out, ")");
    }
    for (int i = 0; i < m->nopts; i++)
        ax_buf_printf(out, "\n  (option %s %s)", m->opts[i].key, m->opts[i].value);
    for (int i = 0; i < m->nparams; i++) {
        const ast_param *p = &m->params[i];
        ax_buf_printf(out, "\n  (param %s %s", p->name, p->type ? p->type : "_");
        for (int d = 0; d < p->ndims; d++) {
            ax_buf_puts(out, " ");
            dump_expr(p->dims[d], out);
        }
        ax_buf_puts(out, ")");
    }
    for (int i = 0; i < m->nstmts; i++) {
        ax_buf_puts(out, "\n  ");
        dump_stmt(m->stmts[i], out);
    }
    ax_buf_puts(out, ")\n");
}

void ast_dump(const ast_file *f, ax_buf *out)
{
    ax_buf_put(out, "", 0);   /* an empty file still yields a string */
    for (int i = 0; i < f->nconsts; i++) {
        ax_buf_printf(out, "(const %s ", f->consts[i].name);
        dump_expr(f->consts[i].value, out);
        ax_buf_puts(out, ")\n");
    }
    for (int i = 0; i < f->nblocks; i++)
        dump_model(&f->blocks[i], out);
    for (int i = 0; i < f->nmodels; i++)
        dump_model(&f->models[i], out);
}
