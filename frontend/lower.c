/* lower.c — syntax tree to graph IR (docs/language.md#constants, #models, #functions): consts with -D
 * overrides, model options and inputs, the chain and function body forms,
 * layer naming (PyTorch state_dict names), expressions, calls and pipes.
 * The tables of constructors and functions live in lower_layers.c.
 *
 * Decisions the language leaves open (here and in docs/language.md#constants; tests rely on them):
 *  - const arithmetic on integers stays integer; `/` of two integers is an
 *    integer when exact and a float otherwise (as Julia's `/` would give).
 *  - a const may use any other const of the file; a cycle is an error.
 *  - a function-form binding shadows a const of the same name. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* ---- shared helpers ------------------------------------------------------ */

int lower_add(lower_state *st, ir_op op, const int *src, int nsrc, const ir_attrs *attrs,
              ax_loc loc, const char *name)
{
    int id = ir_add(st->g, op, src, nsrc, loc);
    ir_node *n = ir_at(st->g, id);
    n->attrs = attrs ? *attrs : ir_attrs_unset();
    n->name = name;
    n->dtype = st->g->dtype;
    return id;
}

static int add_scalar(lower_state *st, double value, ax_loc loc)
{
    ir_attrs a = ir_attrs_unset();
    a.scalar = value;
    int id = lower_add(st, IR_OP_scalar, NULL, 0, &a, loc, NULL);
    ir_at(st->g, id)->rank = 0;
    return id;
}

void lower_unknown(lower_state *st, ax_loc loc, const char *message, const char *name,
                   const char *const *cands, int n)
{
    const char *best = ax_suggest(name, cands, n);
    if (best) ax_error(st->ctx, loc, "%s; did you mean '%s'?", message, best);
    else ax_error(st->ctx, loc, "%s", message);
}

bool lower_claim_layer_name(lower_state *st, const char *name, ax_loc loc)
{
    for (int i = 0; i < st->nlayers; i++)
        if (strcmp(st->layer_names[i], name) == 0) {
            ax_error(st->ctx, loc, "duplicate layer name '%s'", name);
            return false;
        }
    if (st->nlayers == st->layers_cap) {
        st->layers_cap = st->layers_cap ? 2 * st->layers_cap : 16;
        const char **grown = ax_alloc(st->ctx->arena, sizeof *grown * (size_t)st->layers_cap);
        if (st->nlayers) memcpy(grown, st->layer_names, sizeof *grown * (size_t)st->nlayers);
        st->layer_names = grown;
    }
    st->layer_names[st->nlayers++] = name;
    return true;
}

void lower_split_args(lower_state *st, const ast_node *call, lower_args *a)
{
    ast_node **pos = ax_alloc(st->ctx->arena, sizeof *pos * (size_t)(call->nargs + 1));
    ast_node **kw = ax_alloc(st->ctx->arena, sizeof *kw * (size_t)(call->nargs + 1));
    memset(a, 0, sizeof *a);
    a->loc = call->loc;
    for (int i = 0; i < call->nargs; i++) {
        if (call->args[i]->kind == AST_KWARG) kw[a->nkw++] = call->args[i];
        else pos[a->npos++] = call->args[i];
    }
    a->pos = pos;
    a->kw = kw;
}

/* ---- scope (function form) ----------------------------------------------- */

long long lower_scope_compares;

static uint64_t name_hash(const char *name)
{
    uint64_t h = 1469598103934665603u;   /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 1099511628211u;
    return h;
}

/* The slot of name in the index: its own, or the empty one it would take. */
static struct lower_scope_slot *index_slot(lower_scope_index *x, const char *name)
{
    size_t mask = (size_t)x->cap - 1, i = (size_t)name_hash(name) & mask;
    while (x->slots[i].name) {
        lower_scope_compares++;
        if (strcmp(x->slots[i].name, name) == 0) break;
        i = (i + 1) & mask;
    }
    return &x->slots[i];
}

static void index_grow(lower_state *st, lower_scope_index *x)
{
    struct lower_scope_slot *old = x->slots;
    int old_cap = x->cap;
    x->cap = old_cap ? 2 * old_cap : 64;
    x->slots = ax_alloc(st->ctx->arena, sizeof *x->slots * (size_t)x->cap);
    memset(x->slots, 0, sizeof *x->slots * (size_t)x->cap);
    for (int i = 0; i < old_cap; i++)
        if (old[i].name) *index_slot(x, old[i].name) = old[i];
}

/* The index of st->scope, with the bindings past nscope unhooked. */
static lower_scope_index *scope_index(lower_state *st)
{
    lower_scope_index *x = st->scope_index;
    if (!x) {
        x = st->scope_index = ax_alloc(st->ctx->arena, sizeof *x);
        memset(x, 0, sizeof *x);
        index_grow(st, x);
    }
    for (; x->covered > st->nscope; x->covered--) {
        const lower_binding *b = &st->scope[x->covered - 1];
        index_slot(x, b->name)->top = b->shadowed;
    }
    return x;
}

/* The innermost binding of name, or NULL. */
static lower_binding *scope_find(lower_state *st, const char *name)
{
    if (!st->nscope) return NULL;
    struct lower_scope_slot *slot = index_slot(scope_index(st), name);
    return slot->name && slot->top >= 0 ? &st->scope[slot->top] : NULL;
}

/* Binds name to a value node (IR_NONE: a failed value, used silently) or a layer. */
static void scope_bind(lower_state *st, const char *name, int node, lower_layer *layer)
{
    lower_scope_index *x = scope_index(st);
    if (st->nscope == st->scope_cap) {
        st->scope_cap = st->scope_cap ? 2 * st->scope_cap : 16;
        lower_binding *grown = ax_alloc(st->ctx->arena, sizeof *grown * (size_t)st->scope_cap);
        if (st->nscope) memcpy(grown, st->scope, sizeof *grown * (size_t)st->nscope);
        st->scope = grown;
    }
    if (2 * (x->used + 1) > x->cap) index_grow(st, x);
    struct lower_scope_slot *slot = index_slot(x, name);
    if (!slot->name) { slot->name = name; slot->top = -1; x->used++; }
    lower_binding b = {name, node, layer, false, {false, 0, 0}, slot->top};
    slot->top = st->nscope;
    st->scope[st->nscope++] = b;
    x->covered = st->nscope;
}

static bool is_failed(const lower_binding *b)
{
    return !b->layer && !b->is_num && b->node == IR_NONE;
}

lower_binding *lower_scope_find(lower_state *st, const char *name) { return scope_find(st, name); }

void lower_scope_bind(lower_state *st, const char *name, int node, lower_layer *layer)
{
    scope_bind(st, name, node, layer);
}

void lower_scope_bind_num(lower_state *st, const char *name, lower_num v)
{
    scope_bind(st, name, IR_NONE, NULL);
    st->scope[st->nscope - 1].is_num = true;
    st->scope[st->nscope - 1].num = v;
}

/* ---- consts --------------------------------------------------------------- */

static int find_const(const lower_state *st, const char *name)
{
    for (int i = 0; i < st->file->nconsts; i++)
        if (strcmp(st->file->consts[i].name, name) == 0) return i;
    return -1;
}

static lower_num num_int(int64_t i)
{
    lower_num n = {true, i, (double)i};
    return n;
}

static lower_num num_float(double f)
{
    lower_num n = {false, 0, f};
    return n;
}

/* The -D value for name (the last -D of that name wins): integer, else float. */
static bool define_value(lower_state *st, const ax_define *d, lower_num *out)
{
    char *end;
    errno = 0;
    long long i = strtoll(d->value, &end, 10);
    if (*d->value && !*end && errno == 0) {
        *out = num_int(i);
        return true;
    }
    errno = 0;
    double f = strtod(d->value, &end);
    if (*d->value && !*end && errno == 0) {
        *out = num_float(f);
        return true;
    }
    ax_error(st->ctx, ax_noloc(), "-D %s=%s: the value is not a number", d->name, d->value);
    return false;
}

static const ax_define *find_define(const lower_state *st, const char *name)
{
    for (int i = st->ndefs - 1; i >= 0; i--)
        if (strcmp(st->defs[i].name, name) == 0) return &st->defs[i];
    return NULL;
}

/* The value of const idx, evaluated once per model (errors reported once). */
static bool const_value(lower_state *st, int idx, ax_loc use, lower_num *out)
{
    const ast_const *c = &st->file->consts[idx];
    switch (st->const_state[idx]) {
    case CONST_OK: *out = st->const_value[idx]; return true;
    case CONST_FAILED: return false;
    case CONST_BUSY:
        ax_error(st->ctx, use, "const '%s' is defined in terms of itself", c->name);
        return false;
    case CONST_UNSEEN: break;
    }
    /* each const naming the next one recurses: bound the chain, as the
       parser bounds an expression's depth */
    if (st->const_depth == AST_MAX_DEPTH) {
        ax_error(st->ctx, use, "const '%s' is defined through a chain of more than %d other constants",
                 c->name, AST_MAX_DEPTH);
        st->const_state[idx] = CONST_FAILED;
        return false;
    }
    st->const_state[idx] = CONST_BUSY;
    const ax_define *d = find_define(st, c->name);
    lower_num v;
    st->const_depth++;
    bool ok = d ? define_value(st, d, &v) : lower_eval_num(st, c->value, &v);
    st->const_depth--;
    st->const_state[idx] = ok ? CONST_OK : CONST_FAILED;
    st->const_value[idx] = v;
    *out = v;
    return ok;
}

static bool int_arith(lower_state *st, const ast_node *e, int64_t a, int64_t b, lower_num *out)
{
    int64_t r = 0;
    bool overflow = false;
    switch (e->op) {
    case '+': overflow = __builtin_add_overflow(a, b, &r); break;
    case '-': overflow = __builtin_sub_overflow(a, b, &r); break;
    case '*': case AST_OP_DOTMUL: overflow = __builtin_mul_overflow(a, b, &r); break;
    default: /* division: exact stays integer */
        if (b == 0) {
            ax_error(st->ctx, e->loc, "division by zero in a constant expression");
            return false;
        }
        if (!(a == INT64_MIN && b == -1) && a % b == 0) r = a / b;
        else {
            *out = num_float((double)a / (double)b);
            return true;
        }
    }
    if (overflow) {
        ax_error(st->ctx, e->loc, "integer overflow in a constant expression");
        return false;
    }
    *out = num_int(r);
    return true;
}

static bool eval_binop(lower_state *st, const ast_node *e, lower_num a, lower_num b,
                       lower_num *out)
{
    if (e->op == AST_OP_DOTPOW) {
        *out = num_float(pow(a.is_int ? (double)a.i : a.f, b.is_int ? (double)b.i : b.f));
        return true;
    }
    if (a.is_int && b.is_int) return int_arith(st, e, a.i, b.i, out);
    switch (e->op) {
    case '+': *out = num_float(a.f + b.f); return true;
    case '-': *out = num_float(a.f - b.f); return true;
    case '*': case AST_OP_DOTMUL: *out = num_float(a.f * b.f); return true;
    default:
        if (b.f == 0) {
            ax_error(st->ctx, e->loc, "division by zero in a constant expression");
            return false;
        }
        *out = num_float(a.f / b.f);
        return true;
    }
}

static void unknown_const(lower_state *st, const ast_node *e)
{
    int n = st->file->nconsts;
    const char **names = ax_alloc(st->ctx->arena, sizeof *names * (size_t)(n + 1));
    for (int i = 0; i < n; i++) names[i] = st->file->consts[i].name;
    lower_unknown(st, e->loc, ax_sprintf(st->ctx->arena, "unknown constant '%s'", e->name),
                  e->name, names, n);
}

bool lower_eval_num(lower_state *st, const ast_node *e, lower_num *out)
{
    lower_num a, b;
    int idx;
    switch (e->kind) {
    case AST_NUM:
        *out = e->is_int ? num_int(e->ival) : num_float(e->fval);
        return true;
    case AST_IDENT:
        if (scope_find(st, e->name) && scope_find(st, e->name)->is_num) {
            *out = scope_find(st, e->name)->num;
            return true;
        }
        if (scope_find(st, e->name)) {
            ax_error(st->ctx, e->loc, "'%s' is a value, not a constant", e->name);
            return false;
        }
        if ((idx = find_const(st, e->name)) >= 0) return const_value(st, idx, e->loc, out);
        unknown_const(st, e);
        return false;
    case AST_NEG:
        if (!lower_eval_num(st, e->lhs, &a)) return false;
        if (a.is_int && a.i == INT64_MIN) return int_arith(st, e, 0, 0, out);
        *out = a.is_int ? num_int(-a.i) : num_float(-a.f);
        return true;
    case AST_BINOP:
    {   /* both sides are evaluated so that both report their errors */
        bool lhs_ok = lower_eval_num(st, e->lhs, &a);
        bool rhs_ok = lower_eval_num(st, e->rhs, &b);
        return lhs_ok && rhs_ok && eval_binop(st, e, a, b, out);
    }
    default:
        ax_error(st->ctx, e->loc, "expected a constant (a number, a const name or arithmetic on them)");
        return false;
    }
}

/* True when e is made only of numbers and (unshadowed) const names. */
static bool is_const_expr(lower_state *st, const ast_node *e)
{
    switch (e->kind) {
    case AST_NUM: return true;
    case AST_IDENT:
        if (scope_find(st, e->name)) return scope_find(st, e->name)->is_num;
        return find_const(st, e->name) >= 0;
    case AST_NEG: return is_const_expr(st, e->lhs);
    case AST_BINOP: return is_const_expr(st, e->lhs) && is_const_expr(st, e->rhs);
    default: return false;
    }
}

bool lower_is_const_expr(lower_state *st, const ast_node *e) { return is_const_expr(st, e); }

/* ---- names ---------------------------------------------------------------- */

/* "unknown name 'x'" with a suggestion over callables, scope and consts. */
static void unknown_name(lower_state *st, const ast_node *e)
{
    int cap = lower_ncallables() + st->nscope + st->file->nconsts + st->file->nblocks + 2;
    const char **names = ax_alloc(st->ctx->arena, sizeof *names * (size_t)cap);
    int n = lower_callable_names(names);
    names[n++] = "Chain";
    for (int i = 0; i < st->file->nblocks; i++) names[n++] = st->file->blocks[i].name;
    for (int i = 0; i < st->nscope; i++) names[n++] = st->scope[i].name;
    for (int i = 0; i < st->file->nconsts; i++) names[n++] = st->file->consts[i].name;
    const char *axc = lower_torch_name(e->name);
    if (axc) {
        ax_error(st->ctx, e->loc, "unknown name '%s'; PyTorch's %s is %s in axc", e->name,
                 e->name, axc);
        return;
    }
    lower_unknown(st, e->loc, ax_sprintf(st->ctx->arena, "unknown name '%s'", e->name),
                  e->name, names, n);
}

/* Reports why name (not a usable callable here) cannot be applied. */
static void not_callable(lower_state *st, const ast_node *e)
{
    const char *name = e->name;
    if (lower_find_ctor(name))
        ax_error(st->ctx, e->loc, "'%s' is a layer constructor; call it: %s(...)", name, name);
    else if (scope_find(st, name) || find_const(st, name) >= 0)
        ax_error(st->ctx, e->loc, "'%s' is a value, not a layer or function; it cannot be applied",
                 name);
    else unknown_name(st, e);
}

/* ---- expressions ----------------------------------------------------------- */

static int lower_ident(lower_state *st, const ast_node *e)
{
    const lower_binding *b = scope_find(st, e->name);
    if (b && !b->layer) return b->node;
    if (b)
        ax_error(st->ctx, e->loc, "'%s' is a layer, not a value; apply it: %s(x) or x |> %s",
                 e->name, e->name, e->name);
    else if (lower_find_fn(e->name))
        ax_error(st->ctx, e->loc, "'%s' is a function, not a value; apply it: %s(x) or x |> %s",
                 e->name, e->name, e->name);
    else if (lower_find_ctor(e->name))
        ax_error(st->ctx, e->loc, "'%s' is a layer constructor, not a value; apply it: x |> %s(...)",
                 e->name, e->name);
    else unknown_name(st, e);
    return IR_NONE;
}

static int lower_binop(lower_state *st, const ast_node *e)
{
    int src[2] = {lower_expr(st, e->lhs), lower_expr(st, e->rhs)};
    if (src[0] == IR_NONE || src[1] == IR_NONE) return IR_NONE;
    bool scalar = ir_at(st->g, src[0])->op == IR_OP_scalar ||
                  ir_at(st->g, src[1])->op == IR_OP_scalar;
    ir_op op;
    switch (e->op) {
    case '+': op = IR_OP_add; break;
    case '-': op = IR_OP_sub; break;
    case AST_OP_DOTMUL: op = IR_OP_mul; break;
    case AST_OP_DOTDIV: op = IR_OP_div; break;
    case AST_OP_DOTPOW: op = IR_OP_pow; break;
    case '*':
        if (!scalar) {
            ax_error(st->ctx, e->loc, "'*' needs a scalar on one side; use '.*' for an "
                     "elementwise product or matmul(a, b) for a matrix product");
            return IR_NONE;
        }
        op = IR_OP_mul;
        break;
    default:
        if (!scalar) {
            ax_error(st->ctx, e->loc, "'/' needs a scalar on one side; use './' for an "
                     "elementwise quotient");
            return IR_NONE;
        }
        op = IR_OP_div;
    }
    return lower_add(st, op, src, 2, NULL, e->loc, NULL);
}

/* Lowers the positional arguments of call (no keywords allowed) into *in,
 * an arena array of any length. */
static bool lower_positional(lower_state *st, const ast_node *call, int **in_out, int *nin)
{
    bool ok = true;
    int *in = ax_alloc(st->ctx->arena, sizeof *in * (size_t)(call->nargs + 1));
    *in_out = in;
    *nin = 0;
    for (int i = 0; i < call->nargs; i++) {
        const ast_node *a = call->args[i];
        if (a->kind == AST_KWARG) {
            ax_error(st->ctx, a->loc, "keyword argument '%s' is not accepted here", a->name);
            ok = false;
        } else {
            in[*nin] = lower_expr(st, a);
            ok = ok && in[(*nin)++] != IR_NONE;
        }
    }
    return ok;
}

/* The layer an inline declaration form f (Dense(...), Chain(...), a block
 * call) creates, named layer_name or the next inline name.  Inside a block
 * instance the layer is made on the instance's first application and
 * reused by the later ones (the k-th use of f in an application is the
 * k-th layer made there).  NULL after an error. */
static lower_layer *inline_layer(lower_state *st, const ast_node *f, const char *layer_name,
                                 ax_loc decl)
{
    lower_layer *inst = layer_name ? NULL : st->instance;
    for (int i = 0; inst && i < inst->ninlines; i++) {
        lower_inline *c = &inst->inlines[i];
        if (c->at == f && c->stamp != st->stamp) {
            c->stamp = st->stamp;
            return c->layer;
        }
    }
    bool is_decl;
    lower_layer *l = lower_declare(st, layer_name ? layer_name : lower_inline_name(st), f, decl,
                                   &is_decl);
    if (!is_decl) {
        not_callable(st, f->callee->kind == AST_IDENT ? f->callee : f);
        return NULL;
    }
    if (!inst || !l) return l;
    if (inst->ninlines == inst->inlines_cap) {
        inst->inlines_cap = inst->inlines_cap ? 2 * inst->inlines_cap : 8;
        lower_inline *grown = ax_alloc(st->ctx->arena, sizeof *grown * (size_t)inst->inlines_cap);
        if (inst->ninlines) memcpy(grown, inst->inlines, sizeof *grown * (size_t)inst->ninlines);
        inst->inlines = grown;
    }
    lower_inline c = {f, l, st->stamp};
    inst->inlines[inst->ninlines++] = c;
    return l;
}

/* Applies the callable expression f (a name, an inline constructor call or a
 * keyword-only function call) to in[0..nin).  layer_name/decl name and
 * locate an inline constructor's layer (NULL: the next inline index). */
static int apply_callable(lower_state *st, const ast_node *f, const int *in, int nin,
                          const char *layer_name, ax_loc decl, ax_loc loc)
{
    const ast_node *id = f->kind == AST_CALL ? f->callee : f;
    if (f->kind == AST_CALL && f->op == AST_OP_DOTCALL) {
        ax_error(st->ctx, f->loc, "a broadcast call f.(...) is a value, not a layer or function to "
                 "apply; pass every argument to it: f.(x, ...)");
        return IR_NONE;
    }
    if (id->kind != AST_IDENT) {
        ax_error(st->ctx, f->loc, "expected a layer or a function here");
        return IR_NONE;
    }
    const lower_binding *b = scope_find(st, id->name);
    const lower_fn *fn = b ? NULL : lower_find_fn(id->name);
    const lower_ctor *ctor = b ? NULL : lower_find_ctor(id->name);
    lower_args args;
    if (b && is_failed(b)) return IR_NONE;
    if (f->kind == AST_IDENT && b && b->layer) {
        b->layer->used = true;
        return lower_apply_layer(st, b->layer, in, nin, loc);
    }
    if (f->kind == AST_IDENT && fn) {
        memset(&args, 0, sizeof args);
        args.loc = loc;
    } else if (f->kind == AST_CALL && !b && (ctor || !fn)) {
        lower_layer *l = inline_layer(st, f, layer_name, decl);
        return l ? lower_apply_layer(st, l, in, nin, loc) : IR_NONE;
    } else if (f->kind == AST_CALL && fn) {
        lower_split_args(st, f, &args);
        args.loc = loc;
        if (args.npos > 0) {
            ax_error(st->ctx, f->loc, "%s(...) applied to a value takes keyword arguments "
                     "only (the value is its first argument)", id->name);
            return IR_NONE;
        }
    } else {
        if (f->kind == AST_CALL && b)
            ax_error(st->ctx, f->loc, "'%s(...)' is not a layer or a function", id->name);
        else not_callable(st, id);
        return IR_NONE;
    }
    args.in = in;
    args.nin = nin;
    return lower_apply_fn(st, fn, &args);
}

int lower_apply_callable(lower_state *st, const ast_node *f, const int *in, int nin,
                         const char *layer_name, ax_loc decl, ax_loc loc)
{
    return apply_callable(st, f, in, nin, layer_name, decl, loc);
}

/* f.(args): Julia's broadcast call of an elementwise function, which is
 * f(args) here (every elementwise function broadcasts already). */
static int lower_broadcast_call(lower_state *st, const ast_node *e)
{
    const ast_node *callee = e->callee;
    if (callee->kind != AST_IDENT) {
        ax_error(st->ctx, callee->loc, "this expression cannot be called");
        return IR_NONE;
    }
    const lower_binding *b = scope_find(st, callee->name);
    const lower_fn *fn = b ? NULL : lower_find_fn(callee->name);
    if (!b && !fn && !lower_find_ctor(callee->name) && !lower_find_block(st, callee->name)) {
        not_callable(st, callee);
        return IR_NONE;
    }
    if (!fn || !lower_fn_is_elementwise(fn)) {
        ax_error(st->ctx, callee->loc, "'%s' is not an elementwise function: a broadcast call f.(...) "
                 "takes one (relu.(x), max.(a, b), clamp.(x, lo, hi)); write %s(...)", callee->name,
                 callee->name);
        return IR_NONE;
    }
    lower_args args;
    lower_split_args(st, e, &args);
    return lower_apply_fn(st, fn, &args);
}

/* A call in value position: f(x, ...) for a layer, function or an inline
 * constructor applied at once (Dense(4 => 8)(x)). */
static int lower_call(lower_state *st, const ast_node *e)
{
    const ast_node *callee = e->callee;
    int *in, nin;
    if (e->op == AST_OP_DOTCALL) return lower_broadcast_call(st, e);
    if (callee->kind == AST_CALL) {
        if (!lower_positional(st, e, &in, &nin)) return IR_NONE;
        return apply_callable(st, callee, in, nin, NULL, callee->loc, e->loc);
    }
    if (callee->kind == AST_INDEX) {   /* blocks[2](x) */
        lower_layer *l = lower_index_layer(st, callee);
        if (!l || !lower_positional(st, e, &in, &nin)) return IR_NONE;
        return lower_apply_layer(st, l, in, nin, e->loc);
    }
    if (callee->kind != AST_IDENT) {
        ax_error(st->ctx, callee->loc, "this expression cannot be called");
        return IR_NONE;
    }
    const lower_binding *b = scope_find(st, callee->name);
    const lower_fn *fn = b ? NULL : lower_find_fn(callee->name);
    if (b && b->layer) {
        b->layer->used = true;
        if (!lower_positional(st, e, &in, &nin)) return IR_NONE;
        return lower_apply_layer(st, b->layer, in, nin, e->loc);
    }
    if (b && is_failed(b)) return IR_NONE;
    if (fn) {
        lower_args args;
        lower_split_args(st, e, &args);
        if (args.npos > 0) return lower_apply_fn(st, fn, &args);
        ax_error(st->ctx, e->loc, "%s(...) with keyword arguments only is a partial "
                 "application; apply it to a value: x |> %s(...)", callee->name,
                 callee->name);
        return IR_NONE;
    }
    if (!b && lower_find_block(st, callee->name)) {
        ax_error(st->ctx, e->loc, "block %s(...) called with a value; declare an instance "
                 "(name = %s(param=...)) and apply it: name(x)", callee->name, callee->name);
        return IR_NONE;
    }
    if (!b && strcmp(callee->name, "chunk") == 0) {
        ax_error(st->ctx, e->loc, "chunk(...) gives several values; bind them: "
                 "a, b = chunk(x, 2; dims=k)");
        return IR_NONE;
    }
    if (!b && lower_find_ctor(callee->name)) {
        ax_error(st->ctx, e->loc, "layer constructor %s(...) used as a value; declare it "
                 "(name = %s(...)) or apply it: x |> %s(...)", callee->name, callee->name,
                 callee->name);
        return IR_NONE;
    }
    not_callable(st, callee);
    return IR_NONE;
}

int lower_expr(lower_state *st, const ast_node *e)
{
    lower_num v;
    int x;
    if (is_const_expr(st, e))
        return lower_eval_num(st, e, &v) ? add_scalar(st, v.f, e->loc) : IR_NONE;
    switch (e->kind) {
    case AST_IDENT: return lower_ident(st, e);
    case AST_CALL: return lower_call(st, e);
    case AST_INDEX: return lower_index_value(st, e);   /* a list[i] of layers: lower_ident's error */
    case AST_BINOP: return lower_binop(st, e);
    case AST_PIPE:
        x = lower_expr(st, e->lhs);
        return x == IR_NONE ? IR_NONE : apply_callable(st, e->rhs, &x, 1, NULL, e->rhs->loc, e->loc);
    case AST_NEG:
        x = lower_expr(st, e->lhs);
        return x == IR_NONE ? IR_NONE : lower_add(st, IR_OP_neg, &x, 1, NULL, e->loc, NULL);
    default:
        ax_error(st->ctx, e->loc, "a %s is not a value here",
                 e->kind == AST_TUPLE ? "tuple" : e->kind == AST_PAIR ? "pair (=>)" : "keyword argument");
        return IR_NONE;
    }
}

/* ---- model header ---------------------------------------------------------- */

/* Every dtype spelling (long names first, then short ones), for suggestions. */
#define NDTYPE_NAMES (2 * AXRT_DTYPE_COUNT)
static const char *const *dtype_names(void)
{
    static const char *names[NDTYPE_NAMES];
    for (int t = 0; t < AXRT_DTYPE_COUNT; t++) {
        names[t] = ir_dtypes[t].name;
        names[AXRT_DTYPE_COUNT + t] = ir_dtypes[t].short_name;
    }
    return names;
}

static void lower_option(lower_state *st, const ast_option *o)
{
    static const char *const keys[] = {"backend", "dtype"};
    ax_arena *a = st->ctx->arena;
    axrt_dtype dt;
    if (strcmp(o->key, "backend") == 0) {
        const char *names[IR_TARGET_COUNT];
        for (int t = 0; t < IR_TARGET_COUNT; t++)
            names[t] = ir_targets[t].name;
        ir_target_id t = ir_target_parse(o->value);
        if (t != IR_TARGET_COUNT) {
            st->g->backend = t;
            return;
        }
        lower_unknown(st, o->loc, ax_sprintf(a, "unknown backend '%s' (expected %s)", o->value,
                      ir_target_list(a, ", ", " or ")), o->value, names, IR_TARGET_COUNT);
    } else if (strcmp(o->key, "dtype") == 0) {
        if (ir_dtype_parse(o->value, &dt) && (dt == AXRT_F32 || dt == AXRT_F64 ||
                                              dt == AXRT_F16 || dt == AXRT_BF16)) {
            st->g->dtype = dt;
            return;
        }
        lower_unknown(st, o->loc, ax_sprintf(a, "unknown model dtype '%s' (expected Float32, "
                      "Float16, BFloat16 or Float64)", o->value), o->value, dtype_names(), 4);
    } else {
        lower_unknown(st, o->loc, ax_sprintf(a, "unknown model option '%s'", o->key), o->key,
                      keys, 2);
    }
}

/* One IR_OP_input per signature parameter. */
static void lower_input(lower_state *st, const ast_param *p)
{
    axrt_dtype dt = AXRT_F32;
    bool ok = true;
    if (!ir_dtype_parse(p->type, &dt)) {
        lower_unknown(st, p->type_loc, ax_sprintf(st->ctx->arena, "unknown element type '%s'",
                      p->type), p->type, dtype_names(), NDTYPE_NAMES);
        ok = false;
    }
    if (p->ndims > IR_MAX_RANK) {
        ax_error(st->ctx, p->loc, "input '%s' has %d dimensions (at most %d)", p->name,
                 p->ndims, IR_MAX_RANK);
        return;
    }
    int64_t shape[IR_MAX_RANK];
    for (int i = 0; i < p->ndims; i++) {
        lower_num v;
        if (!lower_eval_num(st, p->dims[i], &v)) ok = false;
        else if (!v.is_int || v.i < 1) {
            ax_error(st->ctx, p->dims[i]->loc, "dimension %d of input '%s' must be a positive "
                     "integer", i, p->name);
            ok = false;
        } else shape[i] = v.i;
    }
    for (int i = 0; i < st->g->ninputs; i++)
        if (strcmp(ir_at(st->g, st->g->inputs[i])->name, p->name) == 0) {
            ax_error(st->ctx, p->loc, "duplicate input name '%s'", p->name);
            ok = false;
        }
    if (!ok) return;
    int id = ir_add(st->g, IR_OP_input, NULL, 0, p->loc);
    ir_node *n = ir_at(st->g, id);
    n->attrs = ir_attrs_unset();
    n->name = p->name;
    n->dtype = dt;
    n->rank = p->ndims;
    memcpy(n->shape, shape, sizeof *shape * (size_t)p->ndims);
    ir_add_input(st->g, id);
}

/* ---- bodies -------------------------------------------------------------------- */

/* A stand-in for a value that could not be built, after its error: the
 * statements that follow a failed chain statement still apply to it, so
 * their own mistakes are reported, while pass_shape skips it and all that
 * depends on it (IR_FAILED_RANK) instead of reporting shape errors against
 * a value that is not the one written. */
static int failed_value(lower_state *st, ax_loc loc)
{
    int id = lower_add(st, IR_OP_scalar, NULL, 0, NULL, loc, NULL);
    ir_at(st->g, id)->rank = IR_FAILED_RANK;
    return id;
}

/* Chain form: each statement applies to the previous value (docs/language.md#chain-form). */
static void lower_chain(lower_state *st)
{
    const ast_model *m = st->model;
    if (st->g->ninputs != 1) {
        if (st->g->ninputs == m->nparams)
            ax_error(st->ctx, m->loc, "a chain model (begin ... end) takes exactly one input; "
                     "'%s' has %d (use the function form)", m->name, m->nparams);
        return;
    }
    int cur = st->g->inputs[0];
    for (int i = 0; i < m->nstmts; i++) {
        const ast_stmt *s = m->stmts[i];   /* never a return: the parser rejects those */
        const ast_node *v = s->value;
        if (v->kind != AST_IDENT && v->kind != AST_CALL) {
            ax_error(st->ctx, v->loc, "a chain statement must be a layer constructor or a "
                     "function name (it is applied to the previous value)");
            cur = failed_value(st, v->loc);
            continue;
        }
        const char *name = s->kind == AST_STMT_ASSIGN ? s->name : ax_sprintf(st->ctx->arena, "%d", i);
        int next = apply_callable(st, v, &cur, 1, name, s->loc, v->loc);
        cur = next != IR_NONE ? next : failed_value(st, v->loc);
    }
    ir_add_output(st->g, cur, "out0");
}

/* `name = Constructor(...)` (or a Chain, a block instance, a list: docs/language.md#composition)
 * declares a layer named by the binding; the other bindings are values.
 * inst: the block instance whose body statement index this is (it
 * declared its layers already), else NULL. */
static void lower_assign(lower_state *st, const ast_stmt *s, const lower_layer *inst, int index)
{
    const ast_node *v = s->value;
    if (inst && inst->declared[index]) {
        scope_bind(st, s->name, IR_NONE, inst->decls[index]);
        return;
    }
    bool is_decl;
    lower_num n;
    if (is_const_expr(st, v)) {   /* a number: usable where a const is (Conv(k, c => 2c)) */
        if (lower_eval_num(st, v, &n)) lower_scope_bind_num(st, s->name, n);
        else scope_bind(st, s->name, IR_NONE, NULL);
        return;
    }
    lower_layer *l = lower_declare(st, s->name, v, s->loc, &is_decl);
    if (is_decl) scope_bind(st, s->name, IR_NONE, l);
    else scope_bind(st, s->name, lower_expr(st, v), NULL);
}

static void lower_return(lower_state *st, const ast_stmt *s)
{
    for (int i = 0; i < s->nrets; i++) {
        const ast_node *e = s->rets[i];
        const lower_binding *b = e->kind == AST_IDENT ? scope_find(st, e->name) : NULL;
        const char *name = b && !b->layer ? e->name : ax_sprintf(st->ctx->arena, "out%d", i);
        for (int j = 0; j < i; j++)
            if (strcmp(st->g->output_names[j], name) == 0)
                ax_error(st->ctx, e->loc, "output '%s' is returned twice", name);
        ir_add_output(st->g, lower_expr(st, e), name);
    }
}

/* `a, b, ... = chunk(x, n; dims=k)`: one result node per name (ir.h
 * "Several results"); `y, h = gru(x)` / `y, h, c = lstm(x)`: PyTorch's
 * output and final states; on an error every name is bound as a failed value. */
static void lower_unpack(lower_state *st, const ast_stmt *s)
{
    const ast_node *v = s->value;
    int producer = IR_NONE;
    const bool call = v->kind == AST_CALL && v->op != AST_OP_DOTCALL;
    const lower_binding *lb = call && v->callee->kind == AST_IDENT ? scope_find(st, v->callee->name) : NULL;
    if (lb && lb->layer && lower_is_rnn(lb->layer)) {   /* y, h_n(, c_n) = gru(x) / lstm(x) */
        int *in, nin, outs[3] = {IR_NONE, IR_NONE, IR_NONE};
        lb->layer->used = true;
        if (lower_positional(st, v, &in, &nin))
            lower_rnn_unpack(st, lb->layer, in, nin, v->loc, s->ntargets, outs);
        for (int k = 0; k < s->ntargets; k++) scope_bind(st, s->targets[k]->name, k < 3 ? outs[k] : IR_NONE, NULL);
        return;
    }
    if (call && v->callee->kind == AST_IDENT && !scope_find(st, v->callee->name) &&
        strcmp(v->callee->name, "chunk") == 0)
        producer = lower_chunk(st, v, s->ntargets);
    else if (call && v->callee->kind == AST_IDENT && !scope_find(st, v->callee->name) &&
             strcmp(v->callee->name, "split") == 0) {
        lower_split(st, s);   /* one slice node per piece (lower_slice.c) */
        return;
    } else
        ax_error(st->ctx, v->loc, "%d names are bound, but only chunk(...) gives several values",
                 s->ntargets);
    for (int k = 0; k < s->ntargets; k++) {
        ir_attrs attrs = ir_attrs_unset();
        attrs.index = k;
        const ast_node *t = s->targets[k];
        int r = producer == IR_NONE ? IR_NONE
                                    : lower_add(st, IR_OP_result, &producer, 1, &attrs, t->loc, NULL);
        scope_bind(st, t->name, r, NULL);
    }
}

/* The input node named name, or IR_NONE when that input failed to lower. */
static int input_node(const lower_state *st, const char *name)
{
    for (int i = 0; i < st->g->ninputs; i++)
        if (strcmp(ir_at(st->g, st->g->inputs[i])->name, name) == 0) return st->g->inputs[i];
    return IR_NONE;
}

/* A declared layer never applied still has parameters (--weights expects
 * them, --save-weights writes them): warn, as a C compiler does for an
 * unused variable.  Only without errors, which may have hidden a use. */
static void warn_unused_layers(lower_state *st)
{
    if (st->ctx->errors) return;
    for (int i = 0; i < st->nscope; i++) {
        lower_layer *l = st->scope[i].layer;
        if (l && !l->used)
            ax_warning(st->ctx, l->loc, "layer '%s' is declared but never used (its parameters "
                       "are still part of the model's weights)", l->name);
    }
}

const ast_stmt *lower_body(lower_state *st, ast_stmt *const *stmts, int n, const lower_layer *inst)
{
    for (int i = 0; i < n; i++) {
        const ast_stmt *s = stmts[i];
        if (s->kind == AST_STMT_ASSIGN) lower_assign(st, s, inst, i);
        else if (s->kind == AST_STMT_UNPACK) lower_unpack(st, s);
        else if (s->kind == AST_STMT_EXPR) ax_warning(st->ctx, s->loc, "statement has no effect");
        else if (s->kind == AST_STMT_FOR) lower_for(st, s);
        else {
            if (i + 1 < n) ax_error(st->ctx, stmts[i + 1]->loc, "statement after return");
            return s;
        }
    }
    return NULL;
}

/* Function form (docs/language.md#function-form).  An input that failed is bound as a failed value, so
 * its uses stay silent. */
static void lower_function(lower_state *st)
{
    const ast_model *m = st->model;
    for (int i = 0; i < m->nparams; i++)
        scope_bind(st, m->params[i].name, input_node(st, m->params[i].name), NULL);
    const ast_stmt *ret = lower_body(st, m->stmts, m->nstmts, NULL);
    if (ret) {
        lower_return(st, ret);
        warn_unused_layers(st);
    } else {
        ax_error(st->ctx, m->loc, "model '%s' has no return statement", m->name);
    }
}

ir_graph *lower_model(ax_ctx *ctx, const ast_file *f, int index, const ax_define *defs,
                      int ndefs)
{
    const ast_model *m = &f->models[index];
    lower_state st;
    memset(&st, 0, sizeof st);
    st.ctx = ctx;
    st.file = f;
    st.model = m;
    st.defs = defs;
    st.ndefs = ndefs;
    st.const_state = ax_alloc(ctx->arena, sizeof *st.const_state * (size_t)(f->nconsts + 1));
    st.const_value = ax_alloc(ctx->arena, sizeof *st.const_value * (size_t)(f->nconsts + 1));
    st.block_failed = ax_alloc(ctx->arena, sizeof *st.block_failed * (size_t)(f->nblocks + 1));
    st.g = ir_graph_new(ctx, m->name, m->loc);
    st.g->dtype = AXRT_F32;
    st.g->backend = IR_TARGET_c;
    st.g->wording = &lower_ax_wording;
    for (int i = 0; i < m->nopts; i++) lower_option(&st, &m->opts[i]);
    for (int i = 0; i < m->nparams; i++) lower_input(&st, &m->params[i]);
    if (m->is_function) lower_function(&st);
    else lower_chain(&st);
    return st.g;
}

void lower_check_defines(ax_ctx *ctx, const ast_file *f, const ax_define *defs, int ndefs)
{
    const char **names = ax_alloc(ctx->arena, sizeof *names * (size_t)(f->nconsts + 1));
    for (int i = 0; i < f->nconsts; i++) names[i] = f->consts[i].name;
    for (int i = 0; i < ndefs; i++) {
        int j = 0;
        while (j < f->nconsts && strcmp(names[j], defs[i].name) != 0) j++;
        if (j < f->nconsts) continue;
        const char *best = ax_suggest(defs[i].name, names, f->nconsts);
        if (best)
            ax_warning(ctx, ax_noloc(), "-D %s: no const named '%s' in the file; did you mean "
                       "'%s'?", defs[i].name, defs[i].name, best);
        else
            ax_warning(ctx, ax_noloc(), "-D %s: no const named '%s' in the file", defs[i].name,
                       defs[i].name);
    }
}
