/* lower_blocks.c — composition (docs/language.md#composition): blocks and their instances,
 * Chain, lists of instances ([E for i in a:b]) and compile-time for loops.
 *
 * An instance's layers are declared when the instance is, named
 * "<instance>.<inner name>" recursively (PyTorch's state_dict paths), so its
 * parameters exist even before it is applied.  Applying it lowers the
 * block's body in a scope of its own (its inputs, its keyword parameters as
 * compile-time numbers, its declared layers); an instance applied twice
 * shares its weights.  Diagnostics issued inside a block are located in the
 * block and followed by a note naming the instance (ax_context).
 *
 * Decisions the language leaves open (relied on by tests):
 *  - `for i in a:b` and `[E for i in a:b]` are Julia ranges: inclusive, empty
 *    when b < a; list elements and Chain elements are named 0, 1, ...
 *  - `list[i]` is 0-based (as nn.ModuleList); a negative i counts from the end.
 *  - a block returns exactly one value. */
#include <string.h>

#include "lower_internal.h"

enum { MAX_BLOCK_DEPTH = 64, MAX_UNROLL = 4096, MAX_TOTAL_UNROLL = 65536 };

/* Counts one unrolled iteration; false (after an error) past the model's budget,
 * which nested loops would otherwise multiply. */
static bool unroll_one(lower_state *st, ax_loc loc)
{
    if (++st->unrolled <= MAX_TOTAL_UNROLL) return true;
    if (st->unrolled == MAX_TOTAL_UNROLL + 1)
        ax_error(st->ctx, loc, "more than %d loop iterations and list elements in one model",
                 MAX_TOTAL_UNROLL);
    return false;
}

const ast_model *lower_find_block(const lower_state *st, const char *name)
{
    for (int i = 0; i < st->file->nblocks; i++)
        if (strcmp(st->file->blocks[i].name, name) == 0) return &st->file->blocks[i];
    return NULL;
}

const char *lower_inline_name(lower_state *st)
{
    lower_layer *inst = st->instance;
    if (!inst) return ax_sprintf(st->ctx->arena, "%d", st->ninline++);
    return ax_sprintf(st->ctx->arena, "%s.%d", inst->name, inst->ninline_names++);
}

static lower_layer *new_composite(lower_state *st, lower_layer_kind kind, const char *name,
                                  ax_loc decl)
{
    if (!lower_claim_layer_name(st, name, decl)) return NULL;
    lower_layer *l = ax_alloc(st->ctx->arena, sizeof *l);
    l->kind = kind;
    l->name = name;
    l->loc = decl;
    l->attrs = ir_attrs_unset();
    l->act = IR_OP_COUNT;
    l->min_in = l->max_in = 1;
    return l;
}

/* ---- scopes of block bodies ------------------------------------------------ */

typedef struct saved_scope {
    lower_binding *scope;
    int nscope, cap;
    lower_scope_index *index;
    lower_layer *instance;
    const ax_context *context;
    int stamp;
} saved_scope;

/* Starts an empty scope (a block body sees only its own names and the file's
 * consts and blocks). */
static saved_scope enter_block(lower_state *st)
{
    saved_scope s = {st->scope, st->nscope, st->scope_cap, st->scope_index, st->instance, st->ctx->context,
                     st->stamp};
    st->scope = NULL;
    st->scope_index = NULL;
    st->nscope = st->scope_cap = 0;
    st->depth++;
    return s;
}

static void leave_block(lower_state *st, saved_scope s)
{
    st->scope = s.scope;
    st->nscope = s.nscope;
    st->scope_cap = s.cap;
    st->scope_index = s.index;
    st->instance = s.instance;
    st->ctx->context = s.context;
    st->stamp = s.stamp;
    st->depth--;
}

/* ---- block instances --------------------------------------------------------- */

/* The call's keyword values (evaluated in the caller's scope) into vals. */
static bool instance_args(lower_state *st, const ast_model *b, const ast_node *call,
                          lower_num *vals, bool *given)
{
    bool ok = true;
    const char **names = ax_alloc(st->ctx->arena, sizeof *names * (size_t)(b->nkwparams + 1));
    for (int j = 0; j < b->nkwparams; j++) names[j] = b->kwparams[j].name;
    for (int i = 0; i < call->nargs; i++) {
        const ast_node *k = call->args[i];
        int j = 0;
        while (j < b->nkwparams && strcmp(names[j], k->name) != 0) j++;
        if (j == b->nkwparams) {
            lower_unknown(st, k->loc, ax_sprintf(st->ctx->arena, "block '%s' has no parameter "
                          "'%s'", b->name, k->name), k->name, names, b->nkwparams);
            ok = false;
        } else if (given[j]) {
            ax_error(st->ctx, k->loc, "keyword '%s' given twice", k->name);
            ok = false;
        } else if (lower_eval_num(st, k->lhs, &vals[j])) {
            given[j] = true;
        } else {
            ok = false;
        }
    }
    return ok;
}

/* Binds the block's parameters (given, else defaults evaluated in the
 * block's scope) in the current scope. */
static bool bind_block_params(lower_state *st, const ast_model *b, const ast_node *call,
                              const lower_num *vals, const bool *given)
{
    bool ok = true;
    for (int j = 0; j < b->nkwparams; j++) {
        lower_num v = vals[j];
        const ast_const *p = &b->kwparams[j];
        if (!given[j] && !p->value) {
            ax_error(st->ctx, call->loc, "block '%s' needs parameter '%s' (%s=...)", b->name,
                     p->name, p->name);
            ok = false;
            continue;
        }
        if (!given[j] && !lower_eval_num(st, p->value, &v)) {
            ok = false;
            continue;
        }
        lower_scope_bind_num(st, p->name, v);
    }
    return ok;
}

/* Declares the layers of the block's body under the instance's name. */
static void declare_block_layers(lower_state *st, lower_layer *l)
{
    const ast_model *b = l->block;
    l->decls = ax_alloc(st->ctx->arena, sizeof *l->decls * (size_t)(b->nstmts + 1));
    l->declared = ax_alloc(st->ctx->arena, sizeof *l->declared * (size_t)(b->nstmts + 1));
    for (int i = 0; i < b->nstmts; i++) {
        const ast_stmt *s = b->stmts[i];
        lower_num n;
        bool is_decl;
        if (s->kind != AST_STMT_ASSIGN) continue;
        if (lower_is_const_expr(st, s->value)) {
            if (lower_eval_num(st, s->value, &n)) lower_scope_bind_num(st, s->name, n);
            continue;
        }
        const char *name = ax_sprintf(st->ctx->arena, "%s.%s", l->name, s->name);
        lower_layer *d = lower_declare(st, name, s->value, s->loc, &is_decl);
        if (!is_decl) continue;
        l->declared[i] = true;
        l->decls[i] = d;
        lower_scope_bind(st, s->name, IR_NONE, d);
    }
}

static lower_layer *make_instance(lower_state *st, const ast_model *b, const ast_node *call,
                                  const char *name, ax_loc decl)
{
    if (st->depth >= MAX_BLOCK_DEPTH) {
        ax_error(st->ctx, call->loc, "blocks nested deeper than %d (does block '%s' use "
                 "itself?)", MAX_BLOCK_DEPTH, b->name);
        return NULL;
    }
    lower_num *vals = ax_alloc(st->ctx->arena, sizeof *vals * (size_t)(b->nkwparams + 1));
    bool *given = ax_alloc(st->ctx->arena, sizeof *given * (size_t)(b->nkwparams + 1));
    bool ok = instance_args(st, b, call, vals, given);
    lower_layer *l = new_composite(st, LAYER_BLOCK, name, decl);
    if (!l) return NULL;
    l->block = b;
    l->min_in = l->max_in = b->nparams;
    l->context.what = ax_sprintf(st->ctx->arena, "in '%s', an instance of block '%s'", name,
                                 b->name);
    l->context.loc = decl;
    l->context.outer = st->ctx->context;
    int errors = st->ctx->errors;
    saved_scope saved = enter_block(st);
    st->ctx->context = &l->context;
    ok = bind_block_params(st, b, call, vals, given) && ok;
    l->consts = st->scope;
    l->nconsts = st->nscope;
    if (ok) declare_block_layers(st, l);
    leave_block(st, saved);
    return ok && st->ctx->errors == errors ? l : NULL;
}

static int apply_block(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc)
{
    const ast_model *b = l->block;
    int index = (int)(b - st->file->blocks);
    if (st->block_failed[index]) return IR_NONE;   /* its errors were reported once */
    if (nin != b->nparams) {
        ax_error(st->ctx, loc, "'%s' (block '%s') takes %d input%s, got %d", l->name, b->name,
                 b->nparams, b->nparams == 1 ? "" : "s", nin);
        return IR_NONE;
    }
    int errors = st->ctx->errors, out = IR_NONE;
    saved_scope saved = enter_block(st);
    st->instance = (lower_layer *)l;
    st->ctx->context = &l->context;
    st->stamp = ++st->napplications;
    for (int i = 0; i < l->nconsts; i++) lower_scope_bind_num(st, l->consts[i].name, l->consts[i].num);
    for (int i = 0; i < nin; i++) lower_scope_bind(st, b->params[i].name, in[i], NULL);
    const ast_stmt *ret = lower_body(st, b->stmts, b->nstmts, l);
    if (!ret) ax_error(st->ctx, b->loc, "block '%s' has no return statement", b->name);
    else if (ret->nrets != 1)
        ax_error(st->ctx, ret->loc, "a block returns one value (block '%s' returns %d)", b->name,
                 ret->nrets);
    else out = lower_expr(st, ret->rets[0]);
    if (st->ctx->errors > errors) st->block_failed[index] = true;
    leave_block(st, saved);
    return st->ctx->errors > errors ? IR_NONE : out;
}

/* ---- Chain and lists ------------------------------------------------------- */

static lower_layer *make_chain(lower_state *st, const ast_node *call, const char *name,
                               ax_loc decl)
{
    lower_layer *l = new_composite(st, LAYER_CHAIN, name, decl);
    if (!l) return NULL;
    l->items = ax_alloc(st->ctx->arena, sizeof *l->items * (size_t)(call->nargs + 1));
    l->fns = ax_alloc(st->ctx->arena, sizeof *l->fns * (size_t)(call->nargs + 1));
    l->nitems = call->nargs;
    bool ok = true;
    for (int i = 0; i < call->nargs; i++) {
        const ast_node *e = call->args[i];
        const ast_node *id = e->kind == AST_CALL ? e->callee : e;
        const lower_binding *b = id->kind == AST_IDENT ? lower_scope_find(st, id->name) : NULL;
        bool is_decl = false;
        if (e->kind == AST_KWARG) {
            ax_error(st->ctx, e->loc, "Chain takes layers, functions or block instances, not "
                     "keyword arguments");
            ok = false;
            continue;
        }
        if (e->kind == AST_IDENT && b && b->layer) {
            l->items[i] = b->layer;   /* an instance declared before: shared */
            continue;
        }
        if (e->kind != AST_IDENT) {
            const char *iname = ax_sprintf(st->ctx->arena, "%s.%d", name, i);
            l->items[i] = lower_declare(st, iname, e, e->loc, &is_decl);
        }
        if (is_decl) ok = ok && l->items[i];
        else if (!b && id->kind == AST_IDENT && lower_find_fn(id->name)) l->fns[i] = e;
        else {
            ax_error(st->ctx, e->loc, "Chain element %d is not a layer, a function or a block "
                     "instance", i);
            ok = false;
        }
    }
    return ok ? l : NULL;
}

static int apply_chain(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc)
{
    if (nin != 1) {
        ax_error(st->ctx, loc, "Chain '%s' expects 1 input, got %d", l->name, nin);
        return IR_NONE;
    }
    int cur = in[0];
    for (int i = 0; i < l->nitems && cur != IR_NONE; i++)
        cur = l->items[i] ? lower_apply_layer(st, l->items[i], &cur, 1, loc)
                          : lower_apply_callable(st, l->fns[i], &cur, 1, NULL, l->fns[i]->loc, loc);
    return cur;
}

/* The bounds of a range a:b (integers); false after an error. */
static bool range_bounds(lower_state *st, const ast_node *r, int64_t *lo, int64_t *count)
{
    lower_num a, b;
    if (r->kind != AST_RANGE) {
        ax_error(st->ctx, r->loc, "expected a range a:b here");
        return false;
    }
    bool ok = lower_eval_num(st, r->lhs, &a);
    ok = lower_eval_num(st, r->rhs, &b) && ok;
    if (!ok) return false;
    if (!a.is_int || !b.is_int) {
        ax_error(st->ctx, r->loc, "a range a:b needs integer bounds");
        return false;
    }
    *lo = a.i;
    *count = b.i < a.i ? 0 : b.i - a.i + 1;
    if (b.i >= a.i && (b.i - a.i >= MAX_UNROLL || b.i - a.i < 0)) {
        ax_error(st->ctx, r->loc, "a range of more than %d elements cannot be unrolled",
                 MAX_UNROLL);
        return false;
    }
    return true;
}

static lower_layer *make_list(lower_state *st, const ast_node *e, const char *name, ax_loc decl)
{
    int64_t lo, count;
    if (!range_bounds(st, e->rhs, &lo, &count)) return NULL;
    lower_layer *l = new_composite(st, LAYER_LIST, name, decl);
    if (!l) return NULL;
    l->items = ax_alloc(st->ctx->arena, sizeof *l->items * (size_t)(count + 1));
    l->fns = ax_alloc(st->ctx->arena, sizeof *l->fns * (size_t)(count + 1));
    l->nitems = (int)count;
    for (int k = 0; k < count; k++) {
        int nscope = st->nscope;
        if (!unroll_one(st, e->loc)) return NULL;
        bool is_decl;
        lower_num v = {true, lo + k, (double)(lo + k)};
        lower_scope_bind_num(st, e->name, v);
        const char *iname = ax_sprintf(st->ctx->arena, "%s.%d", name, k);
        l->items[k] = lower_declare(st, iname, e->lhs, e->lhs->loc, &is_decl);
        st->nscope = nscope;
        if (!is_decl) {
            ax_error(st->ctx, e->lhs->loc, "a list holds layers or block instances: "
                     "[Dense(...) for i in 1:4], [block(param=i) for i in 1:4]");
            return NULL;
        }
        if (!l->items[k]) return NULL;
    }
    return l;
}

/* Whether e names a layer: a name bound to one, or list[i] of such a name. */
static bool names_layer(lower_state *st, const ast_node *e)
{
    if (e->kind == AST_INDEX) return names_layer(st, e->callee);
    const lower_binding *b = e->kind == AST_IDENT ? lower_scope_find(st, e->name) : NULL;
    return b && b->layer;
}

lower_layer *lower_index_layer(lower_state *st, const ast_node *e)
{
    const ast_node *obj = e->callee;
    const lower_binding *b = obj->kind == AST_IDENT ? lower_scope_find(st, obj->name) : NULL;
    const lower_layer *l = b ? b->layer : NULL;
    lower_num v;
    if (obj->kind == AST_INDEX && !(l = lower_index_layer(st, obj))) return NULL;
    if (!l || (l->kind != LAYER_LIST && l->kind != LAYER_CHAIN)) {
        ax_error(st->ctx, obj->loc, "only a list or a Chain of layers can be indexed here");
        return NULL;
    }
    if (b) b->layer->used = true;
    if (e->nargs != 1 || e->args[0]->kind == AST_SLICE) {
        ax_error(st->ctx, e->loc, "a list takes one constant index: %s[i]", l->name);
        return NULL;
    }
    if (!lower_eval_num(st, e->args[0], &v)) return NULL;
    int64_t i = v.is_int && v.i < 0 ? v.i + l->nitems : v.i;
    if (!v.is_int || i < 0 || i >= l->nitems || !l->items[i]) {
        ax_error(st->ctx, e->args[0]->loc, "index %s is out of range for '%s' (%d element%s, "
                 "indexed from 0)", v.is_int ? ax_sprintf(st->ctx->arena, "%lld", (long long)v.i)
                 : "(not an integer)", l->name, l->nitems, l->nitems == 1 ? "" : "s");
        return NULL;
    }
    return l->items[i];
}

/* ---- declarations and application ---------------------------------------- */

lower_layer *lower_declare(lower_state *st, const char *name, const ast_node *rhs, ax_loc decl,
                           bool *is_decl)
{
    *is_decl = rhs->kind != AST_CALL || rhs->op != AST_OP_DOTCALL;   /* f.(x) is a value */
    if (!*is_decl) return NULL;
    if (rhs->kind == AST_COMPREHENSION) return make_list(st, rhs, name, decl);
    if (rhs->kind == AST_INDEX && names_layer(st, rhs->callee)) return lower_index_layer(st, rhs);
    if (rhs->kind == AST_CALL && rhs->callee->kind == AST_IDENT &&
        !lower_scope_find(st, rhs->callee->name)) {
        const char *callee = rhs->callee->name;
        const lower_ctor *c = lower_find_ctor(callee);
        const ast_model *b = lower_find_block(st, callee);
        if (c) return lower_make_layer(st, c, rhs, name, decl);
        if (strcmp(callee, "Chain") == 0) return make_chain(st, rhs, name, decl);
        if (b) {
            for (int i = 0; i < rhs->nargs; i++)
                if (rhs->args[i]->kind != AST_KWARG) {
                    ax_error(st->ctx, rhs->args[i]->loc, "an instance of block '%s' is declared "
                             "with keyword arguments only (%s(param=...)); apply it to values "
                             "afterwards: name(x)", b->name, b->name);
                    return NULL;
                }
            return make_instance(st, b, rhs, name, decl);
        }
    }
    *is_decl = false;
    return NULL;
}

int lower_apply_composite(lower_state *st, const lower_layer *l, const int *in, int nin,
                          ax_loc loc)
{
    switch (l->kind) {
    case LAYER_BLOCK: return apply_block(st, l, in, nin, loc);
    case LAYER_CHAIN: return apply_chain(st, l, in, nin, loc);
    default:
        ax_error(st->ctx, loc, "'%s' is a list of layers; apply one (%s[i](x)) or loop over "
                 "them (for b in %s ... end)", l->name, l->name, l->name);
        return IR_NONE;
    }
}

/* Lowers one unrolled iteration; false when its body returns. */
static bool for_iteration(lower_state *st, const ast_stmt *s)
{
    const ast_stmt *ret = lower_body(st, s->body, s->nbody, NULL);
    if (!ret) return true;
    ax_error(st->ctx, ret->loc, "'return' inside a for loop (loops are unrolled; return after "
             "the loop)");
    return false;
}

void lower_for(lower_state *st, const ast_stmt *s)
{
    const ast_node *it = s->value;
    if (it->kind == AST_RANGE) {
        int64_t lo, count;
        if (!range_bounds(st, it, &lo, &count)) return;
        for (int64_t k = 0; k < count; k++) {
            lower_num v = {true, lo + k, (double)(lo + k)};
            if (!unroll_one(st, it->loc)) return;
            lower_scope_bind_num(st, s->name, v);
            if (!for_iteration(st, s)) return;
        }
        return;
    }
    const lower_binding *b = it->kind == AST_IDENT ? lower_scope_find(st, it->name) : NULL;
    const lower_layer *l = b ? b->layer : NULL;
    if (!l || (l->kind != LAYER_LIST && l->kind != LAYER_CHAIN)) {
        if (!b || b->layer || b->is_num || b->node != IR_NONE)   /* else: failed, reported */
            ax_error(st->ctx, it->loc, "for iterates over a range (for i in 1:4) or a list of "
                     "layers (for b in blocks)");
        return;
    }
    b->layer->used = true;
    for (int k = 0; k < l->nitems; k++) {
        if (!l->items[k]) {
            ax_error(st->ctx, it->loc, "element %d of '%s' is a function, not a layer", k,
                     l->name);
            return;
        }
        if (!unroll_one(st, it->loc)) return;
        lower_scope_bind(st, s->name, IR_NONE, l->items[k]);
        if (!for_iteration(st, s)) return;
    }
}
