/* lower_layers.c — the layer constructors (docs/language.md#layers) and functions
 * (docs/language.md#functions) as data tables: each constructor has its positional usage, its
 * keyword list and a builder that validates arguments and creates the
 * parameter nodes (PyTorch state_dict names and shapes); each function has
 * its op, operand counts and keyword category.  Applying a layer or function
 * appends compute nodes; shapes are left to pass_shape. */
#include <string.h>

#include "lower_internal.h"

typedef bool (*ctor_build)(lower_state *st, lower_layer *l, const lower_args *a);

struct lower_ctor {
    const char *name;
    int npos;                       /* positional arguments */
    const char *usage;              /* positional usage, for "X expects ..." */
    const char *const *keywords;    /* NULL-terminated */
    ctor_build build;
};

typedef enum fn_tuple { FN_NO_TUPLE, FN_SHAPE_TUPLE, FN_PERM_TUPLE } fn_tuple;
typedef enum fn_kw { KW_NONE, KW_ALPHA, KW_DIMS, KW_DIMS_REQUIRED, KW_REDUCE } fn_kw;

struct lower_fn {
    const char *name;
    ir_op op;                       /* IR_OP_COUNT: identity (no node) */
    int min_in, max_in;             /* tensor operands */
    fn_tuple tuple;                 /* a tuple argument after the tensors */
    fn_kw kw;
    double alpha;                   /* KW_ALPHA default */
    bool activation;                /* accepted by activation= */
    const char *usage;
};

/* ---- argument helpers ---------------------------------------------------- */

/* The value of keyword name in a, or NULL when not given. */
static const ast_node *kw_value(const lower_args *a, const char *name)
{
    for (int i = 0; i < a->nkw; i++)
        if (strcmp(a->kw[i]->name, name) == 0) return a->kw[i]->lhs;
    return NULL;
}

/* PyTorch spellings and what axc writes instead (docs/language.md#layers, #composition, #more-operators). */
static const char *const torch_names[][2] = {
    {"Linear", "Dense(in => out)"}, {"Conv2d", "Conv((kh, kw), in => out)"},
    {"BatchNorm2d", "BatchNorm(C)"},
    {"BatchNorm1d", "BatchNorm(C)"}, {"InstanceNorm2d", "InstanceNorm(C)"},
    {"ConvTranspose2d", "ConvTranspose((kh, kw), in => out)"},
    {"InstanceNorm1d", "InstanceNorm(C)"}, {"MaxPool2d", "MaxPool((kh, kw))"},
    {"AvgPool2d", "MeanPool((kh, kw))"}, {"AdaptiveAvgPool2d", "AdaptiveMeanPool((h, w))"},
    {"Sequential", "Chain(...)"}, {"ModuleList", "a list [E for i in a:b]"},
    {"MultiheadAttention", "MultiHeadAttention(d => heads)"}, {"ReLU", "relu"},
    {"UpsamplingNearest2d", "Upsample(scale)"}, {"UpsamplingBilinear2d", "Upsample(scale, mode=bilinear, align_corners=true)"},
    {"ReLU6", "relu6"}, {"GELU", "gelu"}, {"SiLU", "silu"}, {"Sigmoid", "sigmoid"},
    {"Tanh", "tanh"}, {"Hardswish", "hardswish"}, {"Hardsigmoid", "hardsigmoid"},
    {"Softmax", "softmax"}, {"Identity", "identity"}, {"cat", "concat(a, b; dims=k)"},
    {"permute", "transpose(x, perm)"}, {"view", "reshape(x, shape)"},
};

/* PyTorch keyword spellings -> axc's (shown as "axc spells it ..."). */
static const char *const torch_keywords[][2] = {
    {"padding", "pad="}, {"kernel_size", "the first argument: Conv((kh, kw), in => out)"},
    {"in_channels", "in => out"}, {"out_channels", "in => out"},
    {"in_features", "in => out"}, {"out_features", "in => out"},
    {"dim", "dims="}, {"keepdim", "keepdims="}, {"ceil_mode", "ceil="},
    {"scale_factor", "the first argument: Upsample(scale)"}, {"num_groups", "GroupNorm(groups, C)"},
};

const char *lower_torch_name(const char *name)
{
    for (size_t i = 0; i < sizeof torch_names / sizeof torch_names[0]; i++)
        if (strcmp(torch_names[i][0], name) == 0) return torch_names[i][1];
    return NULL;
}

static const char *torch_keyword(const char *name)
{
    for (size_t i = 0; i < sizeof torch_keywords / sizeof torch_keywords[0]; i++)
        if (strcmp(torch_keywords[i][0], name) == 0) return torch_keywords[i][1];
    return NULL;
}

/* Reports keywords not in allowed (with a suggestion) and repeated ones. */
static bool check_keywords(lower_state *st, const char *owner, const char *const *allowed,
                           const lower_args *a)
{
    static const char *const none[] = {NULL};
    if (!allowed) allowed = none;
    int nallowed = 0;
    while (allowed[nallowed]) nallowed++;
    bool ok = true;
    for (int i = 0; i < a->nkw; i++) {
        const ast_node *k = a->kw[i];
        int j = 0;
        while (j < nallowed && strcmp(allowed[j], k->name) != 0) j++;
        if (j == nallowed && torch_keyword(k->name)) {
            const lower_ctor *c = strcmp(k->name, "kernel_size") == 0 ? lower_find_ctor(owner) : NULL;
            ax_error(st->ctx, k->loc, "%s has no keyword '%s' (PyTorch's spelling); axc spells "
                     "it %s", owner, k->name, c ? ax_sprintf(st->ctx->arena, "the first argument: %s%s",
                                                             owner, c->usage) : torch_keyword(k->name));
            ok = false;
        } else if (j == nallowed) {
            lower_unknown(st, k->loc, ax_sprintf(st->ctx->arena, "%s has no keyword '%s'",
                          owner, k->name), k->name, allowed, nallowed);
            ok = false;
        }
        for (j = 0; j < i; j++)
            if (strcmp(a->kw[j]->name, k->name) == 0) {
                ax_error(st->ctx, k->loc, "keyword '%s' given twice", k->name);
                ok = false;
            }
    }
    return ok;
}

/* An integer constant >= min; what names it in the message. */
static bool eval_int_min(lower_state *st, const ast_node *e, const char *what, int64_t min,
                         int64_t *out)
{
    lower_num v;
    if (!lower_eval_num(st, e, &v)) return false;
    if (!v.is_int || v.i < min || v.i > INT32_MAX) {
        ax_error(st->ctx, e->loc, "%s must be an integer >= %lld", what, (long long)min);
        return false;
    }
    *out = v.i;
    return true;
}

/* `in => out` with both positive integers. */
static bool eval_pair(lower_state *st, const ast_node *e, const char *ctor, const char *usage,
                      int64_t *lhs, int64_t *rhs)
{
    if (e->kind != AST_PAIR) {
        ax_error(st->ctx, e->loc, "%s expects %s", ctor, usage);
        return false;
    }
    bool ok = eval_int_min(st, e->lhs, ax_sprintf(st->ctx->arena, "%s: the left side of =>", ctor),
                           1, lhs);
    return eval_int_min(st, e->rhs, ax_sprintf(st->ctx->arena, "%s: the right side of =>", ctor),
                        1, rhs) && ok;
}

/* An integer or a tuple of n integers (each >= min) into out[0..n);
 * a single integer is repeated.  what names the accepted forms. */
static bool eval_int_or_tuple(lower_state *st, const ast_node *e, int n, int64_t min,
                              const char *what, int *out)
{
    lower_num v;
    if (e->kind != AST_TUPLE) {
        if (!lower_eval_num(st, e, &v)) return false;
        if (!v.is_int || v.i < min || v.i > INT32_MAX) goto bad;
        for (int i = 0; i < n; i++) out[i] = (int)v.i;
        return true;
    }
    if (e->nargs != n) goto bad;
    for (int i = 0; i < n; i++) {
        if (!lower_eval_num(st, e->args[i], &v)) return false;
        if (!v.is_int || v.i < min || v.i > INT32_MAX) goto bad;
        out[i] = (int)v.i;
    }
    return true;
bad:
    ax_error(st->ctx, e->loc, "%s", what);
    return false;
}

static bool is_ident(const ast_node *e, const char *name)
{
    return e->kind == AST_IDENT && strcmp(e->name, name) == 0;
}

static bool kw_bool(lower_state *st, const lower_args *a, const char *name, bool *out)
{
    const ast_node *v = kw_value(a, name);
    if (!v) return true;
    if (is_ident(v, "true") || is_ident(v, "false")) {
        *out = is_ident(v, "true");
        return true;
    }
    ax_error(st->ctx, v->loc, "%s expects true or false", name);
    return false;
}

/* A number keyword into *out (left as is when absent); positive demands > 0. */
static bool kw_float(lower_state *st, const lower_args *a, const char *name, bool positive,
                     double *out)
{
    const ast_node *v = kw_value(a, name);
    lower_num n;
    if (!v) return true;
    if (!lower_eval_num(st, v, &n)) return false;
    if (positive && !(n.f > 0)) {
        ax_error(st->ctx, v->loc, "%s must be > 0, got %g", name, n.f);
        return false;
    }
    *out = n.f;
    return true;
}

/* An axis (dims=k, negative counts from the end) into *axis. */
static bool kw_dims(lower_state *st, const lower_args *a, bool required, const char *owner,
                    int *axis)
{
    const ast_node *v = kw_value(a, "dims");
    lower_num n;
    if (!v) {
        if (required) ax_error(st->ctx, a->loc, "%s needs dims=k (the axis)", owner);
        return !required;
    }
    if (v->kind == AST_TUPLE) {
        ax_error(st->ctx, v->loc, "%s takes one axis (dims=k); several axes (dims=(1, 2)) are "
                 "for the reductions sum, mean, maximum, minimum and prod", owner);
        return false;
    }
    if (!lower_eval_num(st, v, &n)) return false;
    if (!n.is_int || n.i < -IR_MAX_RANK || n.i >= IR_MAX_RANK) {
        ax_error(st->ctx, v->loc, "dims expects an integer axis in [-%d, %d)", IR_MAX_RANK,
                 IR_MAX_RANK);
        return false;
    }
    *axis = (int)n.i;
    return true;
}

/* ---- functions ----------------------------------------------------------- */

#define UNARY(n, o, act) {n, IR_OP_##o, 1, 1, FN_NO_TUPLE, KW_NONE, 0, act, "(x)"}
static const lower_fn functions[] = {
    {"identity", IR_OP_COUNT, 1, 1, FN_NO_TUPLE, KW_NONE, 0, true, "(x)"},
    UNARY("relu", relu, true),
    UNARY("relu6", relu6, true),
    UNARY("sigmoid", sigmoid, true),
    UNARY("tanh", tanh, true),
    UNARY("swish", swish, true),
    UNARY("silu", swish, true),
    UNARY("gelu", gelu, true),
    UNARY("gelu_tanh", gelu_tanh, true),
    UNARY("softplus", softplus, true),
    {"elu", IR_OP_elu, 1, 1, FN_NO_TUPLE, KW_ALPHA, 1.0, true, "(x; alpha=1.0)"},
    {"leaky_relu", IR_OP_leaky_relu, 1, 1, FN_NO_TUPLE, KW_ALPHA, 0.01, true, "(x; alpha=0.01)"},
    {"softmax", IR_OP_softmax, 1, 1, FN_NO_TUPLE, KW_DIMS, 0, true, "(x; dims=-1)"},
    {"log_softmax", IR_OP_log_softmax, 1, 1, FN_NO_TUPLE, KW_DIMS, 0, true, "(x; dims=-1)"},
    UNARY("exp", exp, false),
    UNARY("log", log, false),
    UNARY("sqrt", sqrt, false),
    UNARY("abs", abs, false),
    UNARY("neg", neg, false),
    UNARY("erf", erf, false),
    UNARY("hardswish", hardswish, true),
    UNARY("hardsigmoid", hardsigmoid, true),
    UNARY("mish", mish, true),
    UNARY("selu", selu, true),
    UNARY("reciprocal", reciprocal, false),
    UNARY("sin", sin, false),
    UNARY("cos", cos, false),
    UNARY("tan", tan, false),
    UNARY("asin", asin, false),
    UNARY("acos", acos, false),
    UNARY("atan", atan, false),
    UNARY("sinh", sinh, false),
    UNARY("cosh", cosh, false),
    UNARY("asinh", asinh, false),
    UNARY("acosh", acosh, false),
    UNARY("atanh", atanh, false),
    UNARY("floor", floor, false),
    UNARY("ceil", ceil, false),
    UNARY("round", round, false),
    UNARY("sign", sign, false),
    {"reshape", IR_OP_reshape, 1, 1, FN_SHAPE_TUPLE, KW_NONE, 0, false, "(x, (d0, d1, ...))"},
    {"transpose", IR_OP_transpose, 1, 1, FN_PERM_TUPLE, KW_NONE, 0, false, "(x, (p0, p1, ...))"},
    {"concat", IR_OP_concat, 1, IR_SRC_UNBOUNDED, FN_NO_TUPLE, KW_DIMS_REQUIRED, 0, false,
     "(a, b, ...; dims=k)"},
    {"sum", IR_OP_sum, 1, 1, FN_NO_TUPLE, KW_REDUCE, 0, false, "(x; dims=k)"},
    {"mean", IR_OP_mean, 1, 1, FN_NO_TUPLE, KW_REDUCE, 0, false, "(x; dims=k)"},
    {"maximum", IR_OP_maximum, 1, 1, FN_NO_TUPLE, KW_REDUCE, 0, false, "(x; dims=k)"},
    {"minimum", IR_OP_minimum, 1, 1, FN_NO_TUPLE, KW_REDUCE, 0, false, "(x; dims=k)"},
    {"prod", IR_OP_prod, 1, 1, FN_NO_TUPLE, KW_REDUCE, 0, false, "(x; dims=k)"},
    {"argmax", IR_OP_argmax, 1, 1, FN_NO_TUPLE, KW_REDUCE, 0, false, "(x; dims=k)"},
    {"matmul", IR_OP_matmul, 2, 2, FN_NO_TUPLE, KW_NONE, 0, false, "(a, b)"},
    {"fmod", IR_OP_fmod, 2, 2, FN_NO_TUPLE, KW_NONE, 0, false, "(a, b)"},
    {"max", IR_OP_max, 2, 2, FN_NO_TUPLE, KW_NONE, 0, false, "(a, b)"},
    {"min", IR_OP_min, 2, 2, FN_NO_TUPLE, KW_NONE, 0, false, "(a, b)"},
    {"clamp", IR_OP_clamp_min, 3, 3, FN_NO_TUPLE, KW_NONE, 0, false, "(x, lo, hi)"},
};
#undef UNARY
#define NFUNCTIONS ((int)(sizeof functions / sizeof functions[0]))

static const char *const kw_alpha[] = {"alpha", NULL};
static const char *const kw_dims_only[] = {"dims", NULL};

const lower_fn *lower_find_fn(const char *name)
{
    for (int i = 0; i < NFUNCTIONS; i++)
        if (strcmp(functions[i].name, name) == 0) return &functions[i];
    return NULL;
}

bool lower_fn_is_elementwise(const lower_fn *fn)
{
    return fn->op == IR_OP_COUNT || ir_ops[fn->op].kind == IR_UNARY || ir_ops[fn->op].kind == IR_BINARY;
}

/* Keyword attributes of fn (alpha, dims) into attrs. */
static bool fn_keywords(lower_state *st, const lower_fn *fn, const lower_args *a, ir_attrs *attrs)
{
    const char *const *allowed = fn->kw == KW_ALPHA ? kw_alpha
                               : fn->kw == KW_NONE  ? NULL : kw_dims_only;
    if (!check_keywords(st, fn->name, allowed, a)) return false;
    if (fn->kw == KW_ALPHA) {
        attrs->alpha = fn->alpha;
        return kw_float(st, a, "alpha", false, &attrs->alpha);
    }
    if (fn->kw == KW_DIMS || fn->kw == KW_DIMS_REQUIRED)
        return kw_dims(st, a, fn->kw == KW_DIMS_REQUIRED, fn->name, &attrs->axis);
    return true;
}

int lower_chunk(lower_state *st, const ast_node *call, int nresults)
{
    static const char *const kw_dims_only_chunk[] = {"dims", NULL};
    lower_args a;
    lower_split_args(st, call, &a);
    a.loc = call->loc;
    if (a.npos != 2) {
        ax_error(st->ctx, call->loc, "chunk expects (x, n; dims=k)");
        return IR_NONE;
    }
    ir_attrs attrs = ir_attrs_unset();
    lower_num n;
    int x = lower_expr(st, a.pos[0]);
    bool ok = check_keywords(st, "chunk", kw_dims_only_chunk, &a) &&
              kw_dims(st, &a, true, "chunk", &attrs.axis);
    if (!ok || !lower_eval_num(st, a.pos[1], &n)) return IR_NONE;
    if (!n.is_int || n.i < 1 || n.i > 65536) {
        ax_error(st->ctx, a.pos[1]->loc, "chunk: the number of parts must be an integer in "
                 "1..65536");
        return IR_NONE;
    }
    if (x == IR_NONE) return IR_NONE;
    attrs.parts = (int)n.i;
    attrs.nresults = nresults;
    return lower_add(st, IR_OP_chunk, &x, 1, &attrs, call->loc, NULL);
}

/* reshape's (d0, d1, ...): one -1 allowed, others >= 1. */
static bool shape_tuple(lower_state *st, const ast_node *e, ir_attrs *attrs)
{
    ast_node *const *dims = e->kind == AST_TUPLE ? e->args : (ast_node *const *)&e;
    int n = e->kind == AST_TUPLE ? e->nargs : 1, wild = 0;
    if (n > IR_MAX_RANK) {
        ax_error(st->ctx, e->loc, "reshape: at most %d dimensions", IR_MAX_RANK);
        return false;
    }
    for (int i = 0; i < n; i++) {
        lower_num v;
        if (!lower_eval_num(st, dims[i], &v)) return false;
        if (!v.is_int || v.i == 0 || v.i < -1 || (v.i == -1 && wild++)) {
            ax_error(st->ctx, dims[i]->loc,
                     "reshape dimensions must be positive integers (one -1 allowed)");
            return false;
        }
        attrs->newshape[i] = v.i;
    }
    attrs->nnewshape = n;
    return true;
}

/* transpose's (p0, p1, ...): a permutation of 0..n-1, negative entries
 * counting from the end (normalised here: n is the rank). */
static bool perm_tuple(lower_state *st, const ast_node *e, ir_attrs *attrs)
{
    int n = e->kind == AST_TUPLE ? e->nargs : 0;
    bool seen[IR_MAX_RANK] = {false};
    if (n < 1 || n > IR_MAX_RANK) {
        ax_error(st->ctx, e->loc, "transpose expects a permutation tuple (p0, p1, ...)");
        return false;
    }
    for (int i = 0; i < n; i++) {
        lower_num v;
        if (!lower_eval_num(st, e->args[i], &v)) return false;
        int64_t p = v.is_int && v.i < 0 ? v.i + n : v.i;
        if (!v.is_int || p < 0 || p >= n || seen[p]) {
            ax_error(st->ctx, e->loc, "transpose expects a permutation of 0..%d", n - 1);
            return false;
        }
        seen[p] = true;
        attrs->perm[i] = (int)p;
    }
    attrs->nperm = n;
    return true;
}

static const char *const kw_reduce[] = {"dims", "keepdims", NULL};

/* dims=k or dims=(k0, k1, ...) of a reduction into axes[]; false after an error. */
static bool reduce_axes(lower_state *st, const lower_fn *fn, const lower_args *a, int *axes,
                        int *naxes)
{
    const ast_node *v = kw_value(a, "dims");
    if (!v) {
        ax_error(st->ctx, a->loc, "%s needs dims=k or dims=(k0, k1, ...) (the axes)", fn->name);
        return false;
    }
    ast_node *const *items = v->kind == AST_TUPLE ? v->args : (ast_node *const *)&v;
    *naxes = v->kind == AST_TUPLE ? v->nargs : 1;
    for (int i = 0; i < *naxes; i++) {
        lower_num n;
        if (*naxes > IR_MAX_RANK || !lower_eval_num(st, items[i], &n)) return false;
        if (!n.is_int || n.i < -IR_MAX_RANK || n.i >= IR_MAX_RANK) {
            ax_error(st->ctx, items[i]->loc, "dims expects integer axes in [-%d, %d)",
                     IR_MAX_RANK, IR_MAX_RANK);
            return false;
        }
        axes[i] = (int)n.i;
    }
    return true;
}

/* sum/mean/maximum/minimum/prod over one or several axes (one node per
 * axis, each keeping its axis as 1; a mean of means over equal-sized lines
 * is the mean over all), then keepdims=false drops them; argmax over one
 * axis (torch.argmax's dim), its dim kept likewise unless keepdims=false. */
static int lower_reduce(lower_state *st, const lower_fn *fn, const lower_args *a, int x)
{
    int axes[IR_MAX_RANK], naxes = 1;
    bool keep = true;
    if (!check_keywords(st, fn->name, kw_reduce, a)) return IR_NONE;
    bool ok = fn->op == IR_OP_argmax ? kw_dims(st, a, true, fn->name, &axes[0])
                                     : reduce_axes(st, fn, a, axes, &naxes);
    if (!ok || !kw_bool(st, a, "keepdims", &keep))
        return IR_NONE;
    for (int i = 0; i < naxes; i++) {
        ir_attrs attrs = ir_attrs_unset();
        attrs.axis = axes[i];
        x = lower_add(st, fn->op, &x, 1, &attrs, a->loc, NULL);
    }
    if (keep) return x;
    ir_attrs squeeze = ir_attrs_unset();
    memcpy(squeeze.squeeze, axes, sizeof *axes * (size_t)naxes);
    squeeze.nsqueeze = naxes;
    return lower_add(st, IR_OP_reshape, &x, 1, &squeeze, a->loc, NULL);
}

/* PyTorch's clamp(x, min=, max=): false after suggesting the positional spelling. */
static bool clamp_torch_keywords_absent(lower_state *st, const lower_args *a)
{
    for (int i = 0; i < a->nkw; i++)
        if (strcmp(a->kw[i]->name, "min") == 0 || strcmp(a->kw[i]->name, "max") == 0) {
            ax_error(st->ctx, a->kw[i]->loc, "clamp takes its bounds as arguments, clamp(x, lo, hi), "
                     "not as PyTorch's keyword '%s='", a->kw[i]->name);
            return false;
        }
    return true;
}

/* clamp(x, lo, hi): torch.clamp, clamp_max(clamp_min(x, lo), hi); lo and hi
 * broadcast like any operand (numbers or tensors). */
static int lower_clamp(lower_state *st, const lower_args *a, const int *src)
{
    if (!check_keywords(st, "clamp", NULL, a)) return IR_NONE;
    int lower[2] = {src[0], src[1]};
    int upper[2] = {lower_add(st, IR_OP_clamp_min, lower, 2, NULL, a->loc, NULL), src[2]};
    return lower_add(st, IR_OP_clamp_max, upper, 2, NULL, a->loc, NULL);
}

int lower_apply_fn(lower_state *st, const lower_fn *fn, const lower_args *a)
{
    int ntuple = fn->tuple != FN_NO_TUPLE, total = a->nin + a->npos;
    int ntensor = total - ntuple;
    if (fn->op == IR_OP_clamp_min && !clamp_torch_keywords_absent(st, a)) return IR_NONE;
    if (ntensor > fn->max_in && fn->max_in > 1 && ntensor >= a->nin) {
        ax_error(st->ctx, a->loc, "%s takes at most %d operands, got %d", fn->name, fn->max_in, ntensor);
        return IR_NONE;
    }
    if (ntensor < fn->min_in || ntensor > fn->max_in || ntensor < a->nin) {
        ax_error(st->ctx, a->loc, "%s expects %s", fn->name, fn->usage);
        return IR_NONE;
    }
    int *src = ax_alloc(st->ctx->arena, sizeof *src * (size_t)(ntensor + 1));
    bool ok = true;
    for (int i = 0; i < ntensor; i++) {
        src[i] = i < a->nin ? a->in[i] : lower_expr(st, a->pos[i - a->nin]);
        ok = ok && src[i] != IR_NONE;
    }
    if (fn->kw == KW_REDUCE) return ok ? lower_reduce(st, fn, a, src[0]) : IR_NONE;
    if (fn->op == IR_OP_clamp_min) return ok ? lower_clamp(st, a, src) : IR_NONE;
    ir_attrs attrs = ir_attrs_unset();
    ok = fn_keywords(st, fn, a, &attrs) && ok;
    if (fn->tuple == FN_SHAPE_TUPLE) ok = ok && shape_tuple(st, a->pos[a->npos - 1], &attrs);
    if (fn->tuple == FN_PERM_TUPLE) ok = ok && perm_tuple(st, a->pos[a->npos - 1], &attrs);
    if (!ok) return IR_NONE;
    if (fn->op == IR_OP_COUNT) return src[0];
    return lower_add(st, fn->op, src, ntensor, &attrs, a->loc, NULL);
}

/* ---- layers -------------------------------------------------------------- */

/* Appends parameter "<layer>.<pname>" (model dtype, declaration loc). */
static void add_param(lower_state *st, lower_layer *l, const char *pname, ir_param_role role,
                      int rank, const int64_t *shape)
{
    int id = ir_add(st->g, IR_OP_param, NULL, 0, l->loc);
    ir_node *n = ir_at(st->g, id);
    n->attrs = ir_attrs_unset();
    n->name = ax_sprintf(st->ctx->arena, "%s.%s", l->name, pname);
    n->dtype = st->g->dtype;
    n->role = role;
    n->rank = rank;
    memcpy(n->shape, shape, (size_t)rank * sizeof *shape);
    if (l->rnn_params) l->rnn_params[l->nparams++] = id;
    else l->params[l->nparams++] = id;
}

static void add_vector_param(lower_state *st, lower_layer *l, const char *pname,
                             ir_param_role role, int64_t len)
{
    add_param(st, l, pname, role, 1, &len);
}

static void add_absent_param(lower_layer *l)
{
    if (l->rnn_params) l->rnn_params[l->nparams++] = IR_NONE;
    else l->params[l->nparams++] = IR_NONE;
}

/* activation=NAME: an activation function applied after the layer. */
static bool kw_activation(lower_state *st, lower_layer *l, const lower_args *a)
{
    const ast_node *v = kw_value(a, "activation");
    if (!v) return true;
    const lower_fn *fn = v->kind == AST_IDENT ? lower_find_fn(v->name) : NULL;
    if (!fn || !fn->activation) {
        const char *names[NFUNCTIONS];
        int n = 0;
        for (int i = 0; i < NFUNCTIONS; i++)
            if (functions[i].activation) names[n++] = functions[i].name;
        const char *name = v->kind == AST_IDENT ? v->name : "";
        lower_unknown(st, v->loc, ax_sprintf(st->ctx->arena,
                      "activation expects an activation function name (relu, gelu, ...)%s%s%s",
                      *name ? ", not '" : "", name, *name ? "'" : ""), name, names, n);
        return false;
    }
    l->act = fn->op;
    l->act_attrs = ir_attrs_unset();
    l->act_attrs.alpha = fn->alpha;
    return true;
}

static bool build_dense(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t in = 1, out = 1;
    bool bias = true;
    bool ok = eval_pair(st, a->pos[0], "Dense", "(in => out)", &in, &out);
    ok = kw_bool(st, a, "bias", &bias) && ok;
    ok = kw_activation(st, l, a) && ok;
    if (!ok) return false;
    l->op = IR_OP_dense;
    add_param(st, l, "weight", IR_PARAM_GLOROT, 2, (int64_t[]){out, in});
    if (bias) add_vector_param(st, l, "bias", IR_PARAM_ZEROS, out);
    else add_absent_param(l);
    return true;
}

/* pad=: int, (h, w), (top, bottom, left, right) or same. */
static bool kw_pad(lower_state *st, const lower_args *a, ir_attrs *attrs)
{
    const ast_node *v = kw_value(a, "pad");
    int p[4];
    if (!v) return true;
    if (is_ident(v, "same")) {
        attrs->pad_same = true;
        return true;
    }
    const char *what = "pad expects an integer, an (h, w) tuple, a (top, bottom, left, right)"
                       " tuple or same";
    if (v->kind == AST_TUPLE && v->nargs == 4) {
        if (!eval_int_or_tuple(st, v, 4, 0, what, p)) return false;
        int tlbr[4] = {p[0], p[2], p[1], p[3]};
        memcpy(attrs->pad, tlbr, sizeof tlbr);
        return true;
    }
    if (!eval_int_or_tuple(st, v, 2, 0, what, p)) return false;
    int tlbr[4] = {p[0], p[1], p[0], p[1]};
    memcpy(attrs->pad, tlbr, sizeof tlbr);
    return true;
}

static bool kw_pair(lower_state *st, const lower_args *a, const char *name, int *out)
{
    const ast_node *v = kw_value(a, name);
    if (!v) return true;
    return eval_int_or_tuple(st, v, 2, 1, ax_sprintf(st->ctx->arena,
                             "%s expects a positive integer or an (h, w) tuple", name), out);
}

/* groups=: a positive integer or `in` (depthwise); must divide in and out. */
static bool kw_groups(lower_state *st, const lower_args *a, int64_t in, int64_t out, int *groups)
{
    const ast_node *v = kw_value(a, "groups");
    int64_t g = 1;
    if (!v) return true;
    if (is_ident(v, "in")) g = in;
    else if (!eval_int_min(st, v, "groups (an integer or in)", 1, &g)) return false;
    if (in % g != 0 || out % g != 0) {
        ax_error(st->ctx, v->loc, "groups=%lld must divide both in (%lld) and out (%lld) channels",
                 (long long)g, (long long)in, (long long)out);
        return false;
    }
    *groups = (int)g;
    return true;
}

/* Conv((k,), in => out; stride, pad, dilation, groups, activation, bias) on
 * [N, L, C]: torch.nn.Conv1d, weight [out, in/groups, k]; applied as a 2-D
 * conv of kernel (1, k) by apply_conv1d. */
static bool build_conv1d(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t in = 1, out = 1, k = 1, stride = 1, dilation = 1, pad = 0;
    bool bias = true, ok = true;
    ir_attrs *at = &l->attrs;
    ok = eval_int_min(st, a->pos[0]->args[0], "Conv kernel size", 1, &k);
    ok = eval_pair(st, a->pos[1], "Conv", "((k,), in => out)", &in, &out) && ok;
    const char *const names[3] = {"stride", "dilation", "pad"};
    int64_t *values[3] = {&stride, &dilation, &pad};
    for (int i = 0; i < 3; i++) {
        const ast_node *v = kw_value(a, names[i]);
        if (v && i == 2 && is_ident(v, "same")) at->pad_same = true;
        else if (v) ok = eval_int_min(st, v->kind == AST_TUPLE && v->nargs == 1 ? v->args[0] : v,
                                      ax_sprintf(st->ctx->arena, "%s of a 1-D Conv", names[i]),
                                      i == 2 ? 0 : 1, values[i]) && ok;
    }
    ok = ok && kw_groups(st, a, in, out, &at->groups);
    ok = kw_bool(st, a, "bias", &bias) && ok;
    ok = kw_activation(st, l, a) && ok;
    if (!ok) return false;
    l->op = IR_OP_conv;
    at->kernel[0] = 1, at->kernel[1] = (int)k;
    at->stride[0] = 1, at->stride[1] = (int)stride;
    at->dilation[0] = 1, at->dilation[1] = (int)dilation;
    at->pad[1] = at->pad[3] = (int)pad;
    add_param(st, l, "weight", IR_PARAM_GLOROT, 3, (int64_t[]){out, in / at->groups, k});
    if (bias) add_vector_param(st, l, "bias", IR_PARAM_ZEROS, out);
    else add_absent_param(l);
    return true;
}

/* [N, L, C] -> [N, 1, L, C], the conv with the weight viewed as
 * [out, in/groups, 1, k], back to [N, L', out]. */
static int apply_conv1d(lower_state *st, const lower_layer *l, int x, ax_loc loc)
{
    const ir_node *w = ir_at(st->g, l->params[0]);
    ir_attrs up = ir_attrs_unset(), wv = ir_attrs_unset(), down = ir_attrs_unset();
    int64_t out = w->shape[0];
    up.nnewshape = 4, wv.nnewshape = 4, down.nnewshape = 3;
    up.zero_copies = down.zero_copies = true;
    memcpy(up.newshape, (int64_t[]){0, 1, -1, w->shape[1] * l->attrs.groups}, 4 * sizeof(int64_t));
    memcpy(wv.newshape, (int64_t[]){out, w->shape[1], 1, w->shape[2]}, 4 * sizeof(int64_t));
    memcpy(down.newshape, (int64_t[]){0, -1, out}, 3 * sizeof(int64_t));
    int src[3] = {lower_add(st, IR_OP_reshape, &x, 1, &up, loc, l->name),
                  lower_add(st, IR_OP_reshape, &l->params[0], 1, &wv, loc, l->name), l->params[1]};
    int y = lower_add(st, IR_OP_conv, src, 3, &l->attrs, loc, l->name);
    if (l->act != IR_OP_COUNT) y = lower_add(st, l->act, &y, 1, &l->act_attrs, loc, l->name);
    return lower_add(st, IR_OP_reshape, &y, 1, &down, loc, l->name);
}

static bool build_conv(lower_state *st, lower_layer *l, const lower_args *a)
{
    if (a->pos[0]->kind == AST_TUPLE && a->pos[0]->nargs == 1) return build_conv1d(st, l, a);
    int64_t in = 1, out = 1;
    bool bias = true;
    ir_attrs *at = &l->attrs;
    bool ok = eval_int_or_tuple(st, a->pos[0], 2, 1,
                                "Conv kernel expects a positive integer or a (kh, kw) tuple",
                                at->kernel);
    ok = eval_pair(st, a->pos[1], "Conv", "((kh, kw), in => out)", &in, &out) && ok;
    ok = kw_pair(st, a, "stride", at->stride) && ok;
    ok = kw_pair(st, a, "dilation", at->dilation) && ok;
    ok = kw_pad(st, a, at) && ok;
    ok = ok && kw_groups(st, a, in, out, &at->groups);
    ok = kw_bool(st, a, "bias", &bias) && ok;
    ok = kw_activation(st, l, a) && ok;
    if (!ok) return false;
    l->op = IR_OP_conv;
    add_param(st, l, "weight", IR_PARAM_GLOROT, 4,
              (int64_t[]){out, in / at->groups, at->kernel[0], at->kernel[1]});
    if (bias) add_vector_param(st, l, "bias", IR_PARAM_ZEROS, out);
    else add_absent_param(l);
    return true;
}

/* ConvTranspose((kh, kw), in => out; stride, pad, output_padding, dilation,
 * groups, activation, bias): torch.nn.ConvTranspose2d on NHWC, weight
 * [in, out/groups, kh, kw]; pad is an int or an (h, w) tuple. */
static bool build_convtranspose(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t in = 1, out = 1;
    int pad[2] = {0, 0};
    bool bias = true;
    ir_attrs *at = &l->attrs;
    bool ok = eval_int_or_tuple(st, a->pos[0], 2, 1, "ConvTranspose kernel expects a positive "
                                "integer or a (kh, kw) tuple", at->kernel);
    ok = eval_pair(st, a->pos[1], "ConvTranspose", "((kh, kw), in => out)", &in, &out) && ok;
    ok = kw_pair(st, a, "stride", at->stride) && ok;
    ok = kw_pair(st, a, "dilation", at->dilation) && ok;
    const ast_node *v = kw_value(a, "pad"), *op = kw_value(a, "output_padding");
    if (v) ok = eval_int_or_tuple(st, v, 2, 0, "ConvTranspose pad expects an integer or an (h, w) "
                                  "tuple", pad) && ok;
    if (op) ok = eval_int_or_tuple(st, op, 2, 0, "output_padding expects an integer or an (h, w) "
                                   "tuple", at->out_pad) && ok;
    ok = ok && kw_groups(st, a, in, out, &at->groups);
    ok = kw_bool(st, a, "bias", &bias) && ok;
    ok = kw_activation(st, l, a) && ok;
    if (!ok) return false;
    for (int i = 0; i < 2; i++) {
        if (at->out_pad[i] >= at->stride[i] && at->out_pad[i] >= at->dilation[i]) {
            ax_error(st->ctx, op->loc, "output_padding must be smaller than the stride or the dilation");
            return false;
        }
    }
    at->pad[0] = at->pad[2] = pad[0];
    at->pad[1] = at->pad[3] = pad[1];
    l->op = IR_OP_conv_transpose;
    add_param(st, l, "weight", IR_PARAM_GLOROT, 4,
              (int64_t[]){in, out / at->groups, at->kernel[0], at->kernel[1]});
    if (bias) add_vector_param(st, l, "bias", IR_PARAM_ZEROS, out);
    else add_absent_param(l);
    return true;
}

/* GRU(in => hidden; num_layers, bidirectional, bias, batch_first) and LSTM:
 * torch.nn.GRU / nn.LSTM's parameters, named weight_ih_l<k>[_reverse] and so
 * on in PyTorch's order, one gru/lstm node per layer and direction when
 * applied (apply_rnn). */
static bool build_rnn(lower_state *st, lower_layer *l, const lower_args *a)
{
    const bool lstm = strcmp(l->ctor->name, "LSTM") == 0;
    int64_t in = 1, hid = 1, layers = 1;
    bool bias = true, bidirectional = false;
    const ast_node *nl = kw_value(a, "num_layers");
    l->batch_first = true;
    bool ok = eval_pair(st, a->pos[0], l->ctor->name, "(in => hidden)", &in, &hid);
    if (nl) ok = eval_int_min(st, nl, "num_layers", 1, &layers) && ok;
    ok = kw_bool(st, a, "bias", &bias) && ok;
    ok = kw_bool(st, a, "bidirectional", &bidirectional) && ok;
    ok = kw_bool(st, a, "batch_first", &l->batch_first) && ok;
    if (!ok) return false;
    if (layers > 64) {
        ax_error(st->ctx, nl->loc, "num_layers must be at most 64");
        return false;
    }
    l->op = lstm ? IR_OP_lstm : IR_OP_gru;
    l->attrs.linear_before_reset = true;
    l->rnn_layers = (int)layers;
    l->rnn_dirs = bidirectional ? 2 : 1;
    l->max_in = lstm ? 3 : 2;
    l->rnn_params = ax_alloc(st->ctx->arena, sizeof *l->rnn_params * (size_t)(4 * layers * l->rnn_dirs));
    const int64_t gates = (lstm ? 4 : 3) * hid;
    for (int k = 0; k < l->rnn_layers; k++)
        for (int d = 0; d < l->rnn_dirs; d++) {
            const char *sfx = ax_sprintf(st->ctx->arena, "l%d%s", k, d ? "_reverse" : "");
            int64_t wi[2] = {gates, k ? l->rnn_dirs * hid : in}, wh[2] = {gates, hid};
            add_param(st, l, ax_sprintf(st->ctx->arena, "weight_ih_%s", sfx), IR_PARAM_GLOROT, 2, wi);
            add_param(st, l, ax_sprintf(st->ctx->arena, "weight_hh_%s", sfx), IR_PARAM_GLOROT, 2, wh);
            for (int b = 0; b < 2; b++) {
                if (bias)
                    add_vector_param(st, l, ax_sprintf(st->ctx->arena, "bias_%s_%s", b ? "hh" : "ih", sfx),
                                     IR_PARAM_ZEROS, gates);
                else
                    add_absent_param(l);
            }
        }
    return true;
}

/* Cell `cell` of an initial state [layers * dirs, N, H] as [N, H]. */
static int rnn_state_of_cell(lower_state *st, int state, int cell, ax_loc loc)
{
    ir_attrs at = ir_attrs_unset(), squeeze = ir_attrs_unset();
    at.nslice = 1;
    at.begin[0] = cell, at.end[0] = cell + 1, at.step[0] = 1;
    squeeze.nsqueeze = 1;   /* squeeze[0] = 0: the cell axis */
    int id = lower_add(st, IR_OP_slice, &state, 1, &at, loc, NULL);
    return lower_add(st, IR_OP_reshape, &id, 1, &squeeze, loc, NULL);
}

/* One cell's final state as [1, N, H]: the last step of its [N, L, H]
 * sequence (the first for the reverse direction). */
static int rnn_final(lower_state *st, int seq, bool reverse, ax_loc loc)
{
    ir_attrs at = ir_attrs_unset(), swap = ir_attrs_unset();
    at.nslice = 2;
    at.begin[0] = INT64_MIN, at.end[0] = INT64_MAX, at.step[0] = 1;
    at.begin[1] = reverse ? 0 : -1, at.end[1] = reverse ? 1 : INT64_MAX, at.step[1] = 1;
    swap.nperm = 3, swap.perm[0] = 1, swap.perm[1] = 0, swap.perm[2] = 2;
    int id = lower_add(st, IR_OP_slice, &seq, 1, &at, loc, NULL);
    return lower_add(st, IR_OP_transpose, &id, 1, &swap, loc, NULL);
}

/* The cells' [1, N, H] states joined as PyTorch's h_n / c_n [cells, N, H]. */
static int rnn_join_cells(lower_state *st, const int *cells, int n, ax_loc loc)
{
    ir_attrs cat = ir_attrs_unset();
    cat.axis = 0;
    for (int i = 0; i < n; i++)
        if (cells[i] == IR_NONE) return IR_NONE;
    return lower_add(st, IR_OP_concat, cells, n, &cat, loc, NULL);
}

/* GRU/LSTM applied to x, or (x, h0) / (x, h0, c0) with the states shaped
 * [layers * dirs, N, H] as PyTorch's: each layer's directions run over the
 * previous layer's output and are concatenated on the features.  hn / cn,
 * when not NULL, get each cell's final h / c (c: the same LSTM cell run
 * again keeping c, attrs.cell). */
static int rnn_run(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc, int *hn,
                   int *cn)
{
    if (nin != 1 && nin != l->max_in) {
        ax_error(st->ctx, loc, "layer '%s' (%s) expects %s, got %d inputs", l->name, l->ctor->name,
                 l->max_in == 3 ? "x or (x, h0, c0)" : "x or (x, h0)", nin);
        return IR_NONE;
    }
    ir_attrs swap = ir_attrs_unset();
    swap.nperm = 3, swap.perm[0] = 1, swap.perm[1] = 0, swap.perm[2] = 2;
    int x = in[0];
    if (!l->batch_first) x = lower_add(st, IR_OP_transpose, &x, 1, &swap, loc, NULL);
    for (int k = 0; k < l->rnn_layers && x != IR_NONE; k++) {
        int y[2];
        for (int d = 0; d < l->rnn_dirs; d++) {
            const int cell = k * l->rnn_dirs + d;
            int src[7] = {x}, n = 1;
            for (int i = 0; i < 4; i++) src[n++] = l->rnn_params[4 * cell + i];
            for (int i = 1; i < nin; i++) src[n++] = rnn_state_of_cell(st, in[i], cell, loc);
            while (n < ir_ops[l->op].max_src) src[n++] = IR_NONE;
            ir_attrs at = l->attrs;
            at.reverse = d == 1;
            y[d] = lower_add(st, l->op, src, n, &at, loc, l->name);
            if (hn) hn[cell] = rnn_final(st, y[d], d == 1, loc);
            at.cell = true;
            if (cn) cn[cell] = rnn_final(st, lower_add(st, l->op, src, n, &at, loc, l->name), d == 1, loc);
        }
        ir_attrs cat = ir_attrs_unset();
        cat.axis = 2;
        x = l->rnn_dirs == 2 ? lower_add(st, IR_OP_concat, y, 2, &cat, loc, l->name) : y[0];
    }
    if (!l->batch_first && x != IR_NONE) x = lower_add(st, IR_OP_transpose, &x, 1, &swap, loc, NULL);
    return x;
}

static int apply_rnn(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc)
{
    return rnn_run(st, l, in, nin, loc, NULL, NULL);
}

bool lower_is_rnn(const lower_layer *l) { return l->kind == LAYER_CTOR && l->rnn_params; }

bool lower_rnn_unpack(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc,
                      int nouts, int *outs)
{
    const int most = l->op == IR_OP_lstm ? 3 : 2, cells = l->rnn_layers * l->rnn_dirs;
    if (nouts < 2 || nouts > most) {
        ax_error(st->ctx, loc, "%s gives %s; bind %s names", l->ctor->name,
                 most == 3 ? "(output, h_n, c_n)" : "(output, h_n)", most == 3 ? "2 or 3" : "2");
        return false;
    }
    int *hn = ax_alloc(st->ctx->arena, sizeof *hn * (size_t)cells);
    int *cn = nouts > 2 ? ax_alloc(st->ctx->arena, sizeof *cn * (size_t)cells) : NULL;
    outs[0] = rnn_run(st, l, in, nin, loc, hn, cn);
    if (outs[0] == IR_NONE) return false;
    outs[1] = rnn_join_cells(st, hn, cells, loc);
    if (cn) outs[2] = rnn_join_cells(st, cn, cells, loc);
    return true;
}

/* MaxPool / MeanPool: stride defaults to the kernel. */
static bool build_pool(lower_state *st, lower_layer *l, const lower_args *a)
{
    ir_attrs *at = &l->attrs;
    bool ok = eval_int_or_tuple(st, a->pos[0], 2, 1, ax_sprintf(st->ctx->arena,
                                "%s kernel expects a positive integer or a (kh, kw) tuple",
                                lower_ctor_name(l->ctor)), at->kernel);
    if (!ok) return false;
    at->stride[0] = at->kernel[0];
    at->stride[1] = at->kernel[1];
    ok = kw_pair(st, a, "stride", at->stride);
    ok = kw_pad(st, a, at) && ok;
    ok = kw_bool(st, a, "ceil", &at->ceil) && ok;
    bool count_pad = true;
    ok = kw_bool(st, a, "count_include_pad", &count_pad) && ok;
    at->exclude_pad = !count_pad;
    l->op = strcmp(lower_ctor_name(l->ctor), "MaxPool") == 0 ? IR_OP_maxpool : IR_OP_meanpool;
    if (ok && kw_value(a, "count_include_pad") && l->op == IR_OP_maxpool) {
        ax_error(st->ctx, kw_value(a, "count_include_pad")->loc, "count_include_pad is a "
                 "MeanPool keyword (MaxPool's padding is -inf)");
        return false;
    }
    return ok;
}

/* AdaptiveMeanPool((h, w)): a mean pool whose window pass_shape derives
 * from the input size (torch.nn.AdaptiveAvgPool2d where (h, w) divides it). */
static bool build_adaptivepool(lower_state *st, lower_layer *l, const lower_args *a)
{
    l->op = IR_OP_meanpool;
    l->attrs.adaptive = true;
    return eval_int_or_tuple(st, a->pos[0], 2, 1, "AdaptiveMeanPool expects the output size: "
                             "a positive integer or an (h, w) tuple", l->attrs.kernel);
}

static bool build_globalpool(lower_state *st, lower_layer *l, const lower_args *a)
{
    l->op = IR_OP_globalmeanpool;
    return true;
}

static bool build_batchnorm(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t c = 1;
    l->attrs.eps = 1e-5;
    bool ok = eval_int_min(st, a->pos[0], "BatchNorm channels", 1, &c);
    ok = kw_float(st, a, "eps", true, &l->attrs.eps) && ok;
    ok = kw_activation(st, l, a) && ok;
    if (!ok) return false;
    l->op = IR_OP_batchnorm;
    add_vector_param(st, l, "weight", IR_PARAM_ONES, c);
    add_vector_param(st, l, "bias", IR_PARAM_ZEROS, c);
    add_vector_param(st, l, "running_mean", IR_PARAM_ZEROS, c);
    add_vector_param(st, l, "running_var", IR_PARAM_ONES, c);
    return true;
}

static bool build_layernorm(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t d = 1;
    l->attrs.eps = 1e-5;
    bool ok = eval_int_min(st, a->pos[0], "LayerNorm size", 1, &d);
    ok = kw_float(st, a, "eps", true, &l->attrs.eps) && ok;
    if (!ok) return false;
    l->op = IR_OP_layernorm;
    add_vector_param(st, l, "weight", IR_PARAM_ONES, d);
    add_vector_param(st, l, "bias", IR_PARAM_ZEROS, d);
    return true;
}

/* GroupNorm(groups, channels; eps=1e-5): torch.nn.GroupNorm's argument order. */
static bool build_groupnorm(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t groups = 1, c = 1;
    l->attrs.eps = 1e-5;
    bool ok = eval_int_min(st, a->pos[0], "GroupNorm groups", 1, &groups);
    ok = eval_int_min(st, a->pos[1], "GroupNorm channels", 1, &c) && ok;
    ok = kw_float(st, a, "eps", true, &l->attrs.eps) && ok;
    if (!ok) return false;
    if (c % groups != 0) {
        ax_error(st->ctx, a->pos[0]->loc, "GroupNorm: groups (%lld) must divide the channels (%lld)",
                 (long long)groups, (long long)c);
        return false;
    }
    l->op = IR_OP_groupnorm;
    l->attrs.groups = (int)groups;
    add_vector_param(st, l, "weight", IR_PARAM_ONES, c);
    add_vector_param(st, l, "bias", IR_PARAM_ZEROS, c);
    return true;
}

/* InstanceNorm(C; eps=1e-5, affine=false): torch.nn.InstanceNorm1d/2d (no
 * running statistics), a GroupNorm of C groups; weight and bias only with
 * affine=true. */
static bool build_instancenorm(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t c = 1;
    bool affine = false;
    l->attrs.eps = 1e-5;
    bool ok = eval_int_min(st, a->pos[0], "InstanceNorm channels", 1, &c);
    ok = kw_float(st, a, "eps", true, &l->attrs.eps) && ok;
    ok = kw_bool(st, a, "affine", &affine) && ok;
    if (!ok) return false;
    l->op = IR_OP_groupnorm;
    l->attrs.groups = (int)c;
    if (affine) {
        add_vector_param(st, l, "weight", IR_PARAM_ONES, c);
        add_vector_param(st, l, "bias", IR_PARAM_ZEROS, c);
    } else {
        add_absent_param(l);
        add_absent_param(l);
    }
    return true;
}

/* RMSNorm(D; eps): torch.nn.RMSNorm(D), whose eps defaults to the dtype's
 * machine epsilon; built from nodes by apply_rmsnorm. */
static bool build_rmsnorm(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t d = 1;
    l->attrs.eps = st->g->dtype == AXRT_F64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
    bool ok = eval_int_min(st, a->pos[0], "RMSNorm size", 1, &d);
    ok = kw_float(st, a, "eps", true, &l->attrs.eps) && ok;
    if (!ok) return false;
    l->op = IR_OP_mul;
    add_vector_param(st, l, "weight", IR_PARAM_ONES, d);
    return true;
}

/* x / sqrt(mean(x .* x; dims=-1) + eps) .* weight */
static int apply_rmsnorm(lower_state *st, const lower_layer *l, int x, ax_loc loc)
{
    ir_attrs none = ir_attrs_unset(), eps = ir_attrs_unset();
    eps.scalar = l->attrs.eps;
    int sq = lower_add(st, IR_OP_mul, (int[]){x, x}, 2, &none, loc, l->name);
    int mean = lower_add(st, IR_OP_mean, &sq, 1, &none, loc, l->name);
    int e = lower_add(st, IR_OP_scalar, NULL, 0, &eps, loc, NULL);
    ir_at(st->g, e)->rank = 0;
    int rms = lower_add(st, IR_OP_sqrt, (int[]){lower_add(st, IR_OP_add, (int[]){mean, e}, 2, &none,
                                                          loc, l->name)}, 1, &none, loc, l->name);
    int y = lower_add(st, IR_OP_div, (int[]){x, rms}, 2, &none, loc, l->name);
    return lower_add(st, IR_OP_mul, (int[]){y, l->params[0]}, 2, &none, loc, l->name);
}

/* Upsample(scale; mode=nearest|bilinear, align_corners=false): an integer
 * or (h, w) factor, torch.nn.Upsample(scale_factor=...) on NHWC. */
static bool build_upsample(lower_state *st, lower_layer *l, const lower_args *a)
{
    bool corners = false, ok = eval_int_or_tuple(st, a->pos[0], 2, 1, "Upsample expects the scale: a "
                                                 "positive integer or an (h, w) tuple", l->attrs.scale);
    ok = kw_bool(st, a, "align_corners", &corners) && ok;
    const ast_node *mode = kw_value(a, "mode");
    l->op = IR_OP_upsample;
    l->attrs.mode = IR_UPSAMPLE_NEAREST;
    if (mode && is_ident(mode, "bilinear")) {
        l->attrs.mode = corners ? IR_UPSAMPLE_BILINEAR_CORNERS : IR_UPSAMPLE_BILINEAR;
    } else if (mode && !is_ident(mode, "nearest")) {
        ax_error(st->ctx, mode->loc, "Upsample mode expects nearest or bilinear");
        return false;
    }
    if (ok && corners && l->attrs.mode == IR_UPSAMPLE_NEAREST) {
        ax_error(st->ctx, kw_value(a, "align_corners")->loc, "align_corners is a keyword of "
                 "mode=bilinear (nearest has no corners to align)");
        return false;
    }
    return ok;
}

static bool build_dropout(lower_state *st, lower_layer *l, const lower_args *a)
{
    lower_num p;
    if (!lower_eval_num(st, a->pos[0], &p)) return false;
    if (p.f < 0 || p.f >= 1) {
        ax_error(st->ctx, a->pos[0]->loc, "Dropout probability must be in [0, 1), got %g", p.f);
        return false;
    }
    l->op = st->ctx->training && p.f > 0 ? IR_OP_dropout : IR_OP_COUNT;   /* inference: the identity */
    l->attrs.alpha = p.f;
    return true;
}

static bool build_flatten(lower_state *st, lower_layer *l, const lower_args *a)
{
    l->op = IR_OP_reshape;
    l->attrs.flatten = true;
    return true;
}

static bool build_embedding(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t vocab = 1, dim = 1;
    if (!eval_pair(st, a->pos[0], "Embedding", "(vocab => dim)", &vocab, &dim)) return false;
    l->op = IR_OP_embedding;
    add_param(st, l, "weight", IR_PARAM_GLOROT, 2, (int64_t[]){vocab, dim});
    return true;
}

/* torch.nn.MultiheadAttention's parameters; applied to x or (q, k, v). */
static bool build_mha(lower_state *st, lower_layer *l, const lower_args *a)
{
    int64_t d = 1, heads = 1;
    bool bias = true, causal = false;
    bool ok = eval_pair(st, a->pos[0], "MultiHeadAttention", "(d => heads)", &d, &heads);
    ok = kw_bool(st, a, "bias", &bias) && ok;
    ok = kw_bool(st, a, "causal", &causal) && ok;
    if (!ok) return false;
    if (d % heads != 0) {
        ax_error(st->ctx, a->pos[0]->loc,
                 "MultiHeadAttention: d (%lld) must be a multiple of heads (%lld)",
                 (long long)d, (long long)heads);
        return false;
    }
    l->op = IR_OP_mha;
    l->attrs.heads = (int)heads;
    l->attrs.causal = causal;
    l->max_in = 3;
    add_param(st, l, "in_proj_weight", IR_PARAM_GLOROT, 2, (int64_t[]){3 * d, d});
    if (bias) add_vector_param(st, l, "in_proj_bias", IR_PARAM_ZEROS, 3 * d);
    else add_absent_param(l);
    add_param(st, l, "out_proj.weight", IR_PARAM_GLOROT, 2, (int64_t[]){d, d});
    if (bias) add_vector_param(st, l, "out_proj.bias", IR_PARAM_ZEROS, d);
    else add_absent_param(l);
    return true;
}

static const char *const kw_dense[] = {"activation", "bias", NULL};
static const char *const kw_conv[] = {"stride", "pad", "dilation", "groups", "activation",
                                      "bias", NULL};
static const char *const kw_pool[] = {"stride", "pad", "ceil", "count_include_pad", NULL};
static const char *const kw_batchnorm[] = {"eps", "activation", NULL};
static const char *const kw_eps[] = {"eps", NULL};
static const char *const kw_mha[] = {"bias", "causal", NULL};
static const char *const kw_upsample[] = {"mode", "align_corners", NULL};
static const char *const kw_instancenorm[] = {"eps", "affine", NULL};
static const char *const kw_convtranspose[] = {"stride", "pad", "output_padding", "dilation",
                                               "groups", "activation", "bias", NULL};

static const char *const kw_rnn[] = {"num_layers", "bias", "bidirectional", "batch_first", NULL};

static const lower_ctor ctors[] = {
    {"Dense", 1, "(in => out)", kw_dense, build_dense},
    {"Conv", 2, "((kh, kw), in => out)", kw_conv, build_conv},
    {"ConvTranspose", 2, "((kh, kw), in => out)", kw_convtranspose, build_convtranspose},
    {"MaxPool", 1, "((kh, kw))", kw_pool, build_pool},
    {"MeanPool", 1, "((kh, kw))", kw_pool, build_pool},
    {"GlobalMeanPool", 0, "()", NULL, build_globalpool},
    {"AdaptiveMeanPool", 1, "((h, w))", NULL, build_adaptivepool},
    {"BatchNorm", 1, "(channels)", kw_batchnorm, build_batchnorm},
    {"LayerNorm", 1, "(size)", kw_eps, build_layernorm},
    {"GroupNorm", 2, "(groups, channels)", kw_eps, build_groupnorm},
    {"RMSNorm", 1, "(size)", kw_eps, build_rmsnorm},
    {"InstanceNorm", 1, "(channels)", kw_instancenorm, build_instancenorm},
    {"Upsample", 1, "(scale)", kw_upsample, build_upsample},
    {"Dropout", 1, "(p)", NULL, build_dropout},
    {"Flatten", 0, "()", NULL, build_flatten},
    {"Embedding", 1, "(vocab => dim)", NULL, build_embedding},
    {"MultiHeadAttention", 1, "(d => heads)", kw_mha, build_mha},
    {"GRU", 1, "(in => hidden)", kw_rnn, build_rnn},
    {"LSTM", 1, "(in => hidden)", kw_rnn, build_rnn},
};
#define NCTORS ((int)(sizeof ctors / sizeof ctors[0]))

const lower_ctor *lower_find_ctor(const char *name)
{
    for (int i = 0; i < NCTORS; i++)
        if (strcmp(ctors[i].name, name) == 0) return &ctors[i];
    return NULL;
}

const char *lower_ctor_name(const lower_ctor *c) { return c->name; }

int lower_ncallables(void) { return NCTORS + NFUNCTIONS; }

int lower_callable_names(const char **names)
{
    int n = 0;
    for (int i = 0; i < NCTORS; i++) names[n++] = ctors[i].name;
    for (int i = 0; i < NFUNCTIONS; i++) names[n++] = functions[i].name;
    return n;
}

/* Attention: mha(x), mha(x, mask), mha(q, k, v) or mha(q, k, v, mask); the
 * key mask [N, S] (0 = padding) is the node's last operand. */
static int apply_mha(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc)
{
    if (nin < 1 || nin > 4) {
        ax_error(st->ctx, loc, "layer '%s' (%s) expects x, (x, mask), (q, k, v) or (q, k, v, mask), "
                 "got %d inputs", l->name, l->ctor->name, nin);
        return IR_NONE;
    }
    int src[IR_SRC_ROOM], n = 0;
    for (int i = 0; i < 3; i++) src[n++] = in[nin <= 2 ? 0 : i];
    for (int i = 0; i < l->nparams; i++) src[n++] = l->params[i];
    src[n++] = nin % 2 == 0 ? in[nin - 1] : IR_NONE;
    return lower_add(st, l->op, src, n, &l->attrs, loc, l->name);
}

lower_layer *lower_make_layer(lower_state *st, const lower_ctor *c, const ast_node *call,
                              const char *name, ax_loc decl)
{
    lower_args a;
    lower_split_args(st, call, &a);
    bool ok = check_keywords(st, c->name, c->keywords, &a);
    if (a.npos != c->npos) {
        ax_error(st->ctx, call->loc, "%s expects %s", c->name, c->usage);
        return NULL;
    }
    if (!lower_claim_layer_name(st, name, decl) || !ok) return NULL;
    lower_layer *l = ax_alloc(st->ctx->arena, sizeof *l);
    l->ctor = c;
    l->name = name;
    l->loc = decl;
    l->attrs = ir_attrs_unset();
    l->act = IR_OP_COUNT;
    l->min_in = l->max_in = 1;
    return c->build(st, l, &a) ? l : NULL;
}

int lower_apply_layer(lower_state *st, const lower_layer *l, const int *in, int nin, ax_loc loc)
{
    if (l->kind != LAYER_CTOR) return lower_apply_composite(st, l, in, nin, loc);
    if (l->op == IR_OP_mha) return apply_mha(st, l, in, nin, loc);
    if (l->rnn_params) return apply_rnn(st, l, in, nin, loc);
    if (nin != l->min_in && nin != l->max_in) {
        ax_error(st->ctx, loc, "layer '%s' (%s) expects 1 input, got %d", l->name,
                 l->ctor->name, nin);
        return IR_NONE;
    }
    if (l->op == IR_OP_COUNT) return in[0];
    if (l->op == IR_OP_dropout) {   /* its counter comes from pass_train_mode */
        int src[2] = {in[0], IR_NONE};
        return lower_add(st, l->op, src, 2, &l->attrs, loc, l->name);
    }
    if (l->ctor->build == build_rmsnorm) return apply_rmsnorm(st, l, in[0], loc);  /* several nodes */
    if (l->op == IR_OP_conv && ir_at(st->g, l->params[0])->rank == 3)
        return apply_conv1d(st, l, in[0], loc);
    int src[IR_SRC_ROOM], n = 0;
    for (int i = 0; i < nin; i++) src[n++] = in[i];
    for (int i = 0; i < l->nparams; i++) src[n++] = l->params[i];
    int id = lower_add(st, l->op, src, n, &l->attrs, loc, l->name);
    if (l->act != IR_OP_COUNT) id = lower_add(st, l->act, &id, 1, &l->act_attrs, loc, l->name);
    return id;
}
