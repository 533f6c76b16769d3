/* cg_c_fused.c — the C back end's loop programs (fused elementwise loops) and the unary
 * formulas they and unary_grad's loop program print (runtime/axrt_unary.h,
 * stringified).
 * Part of cg_c.c's emitter (cg_c_internal.h). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cg_c_internal.h"

/* ---- fused elementwise loops ------------------------------------------------
 * A fused_elementwise node's plan is a loop program (ir_loop, decided by
 * cg_plan_loop.c): printed here as it is, one C loop nest with each input
 * indexed by literal strides and each op a local. */

/* The C expression of each unary op: the runtime's own formula
 * (runtime/axrt_unary.h) stringified with placeholder names that
 * unary_expression replaces: AXC_X the argument, AXC_T the element type,
 * AXC_A alpha, AXC_MATH_f the libm function f for the type.  The table is
 * generated from ops.def's UNARY_OP rows, and the static assertion fails
 * the build when the runtime has no formula for a row. */
#define MATH_EXP AXC_MATH_exp
#define MATH_LOG AXC_MATH_log
#define MATH_SQRT AXC_MATH_sqrt
#define MATH_TANH AXC_MATH_tanh
#define MATH_ERF AXC_MATH_erf
#define MATH_EXPM1 AXC_MATH_expm1
#define MATH_LOG1P AXC_MATH_log1p
#define MATH_FABS AXC_MATH_fabs
#define MATH_FN(f) AXC_MATH_##f
#include "axrt_unary.h"
#define CG_STR2(x) #x
#define CG_STR(x) CG_STR2(x)
#define CG_FORMULA(name) CG_STR(AXRT_UNARY_##name(AXC_X, AXC_T, AXC_A))
/* The same for each derivative (AXRT_DERIV_<name>), for unary_grad. */
#define CG_DERIV(name) CG_STR(AXRT_DERIV_##name(AXC_X, AXC_T, AXC_A))

#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define UNARY_OP(name, flags)                                                             \
    _Static_assert(sizeof CG_FORMULA(name) != sizeof "AXRT_UNARY_" #name "(AXC_X, AXC_T, AXC_A)", \
                   "runtime/axrt_unary.h has no formula for " #name);                      \
    _Static_assert(sizeof CG_DERIV(name) != sizeof "AXRT_DERIV_" #name "(AXC_X, AXC_T, AXC_A)", \
                   "runtime/axrt_unary.h has no derivative for " #name);
#include "ops.def"
#undef OP

static const struct {
    const char *value, *deriv;
} unary_formulas[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define UNARY_OP(name, flags) [IR_OP_##name] = {CG_FORMULA(name), CG_DERIV(name)},
#include "ops.def"
#undef OP
};

static const char *const binary_symbols[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define BINARY_OP(name, symbol) [IR_OP_##name] = symbol,
#include "ops.def"
#undef OP
};

/* formula (a stringified axrt_unary.h row) with its placeholders replaced. */
static const char *formula_text(ax_arena *a, const char *formula, const char *arg, axrt_dtype dtype,
                                double alpha)
{
    static const char *const names[] = {"AXC_X", "AXC_T", "AXC_A", "AXC_MATH_"};
    const char *values[] = {arg, ctype(dtype), cgc_real_text(a, ctype(dtype), alpha), ""};
    ax_buf text = {0};
    for (const char *c = formula; *c;) {
        int k = 0;
        while (k < 4 && strncmp(c, names[k], strlen(names[k])) != 0)
            k++;
        if (k == 4) {
            ax_buf_put(&text, c++, 1);
            continue;
        }
        c += strlen(names[k]);
        if (k < 3) {
            ax_buf_puts(&text, values[k]);
            continue;
        }
        while (isalnum((unsigned char)*c)) /* AXC_MATH_exp -> exp, then the suffix */
            ax_buf_put(&text, c++, 1);
        ax_buf_puts(&text, dtype == AXRT_F64 ? "" : "f");
    }
    const char *result = ax_strdup(a, text.data);
    ax_buf_free(&text);
    return result;
}

const char *cg_unary_text(ax_arena *a, int op, const char *arg, axrt_dtype dtype, double alpha)
{
    if (!unary_formulas[op].value)
        ax_die("cg: %s in a fused loop", ir_ops[op].name);
    return formula_text(a, unary_formulas[op].value, arg, dtype, alpha);
}

const char *cg_binary_text(ax_arena *a, int op, const char *lhs, const char *rhs, axrt_dtype dtype)
{
    const char *symbol = binary_symbols[op];
    if (symbol[0] == '?') /* "?>": the larger (a NaN in either gives NaN), axrt_unary.h's clamp_min and max */
        return ax_sprintf(a, "((%s %c %s || %s != %s) ? %s : %s)", lhs, symbol[1], rhs, lhs, lhs, lhs, rhs);
    if (isalpha((unsigned char)symbol[0])) /* libm: powf, fmodf */
        return ax_sprintf(a, "%s%s(%s, %s)", symbol, dtype == AXRT_F64 ? "" : "f", lhs, rhs);
    return ax_sprintf(a, "%s %s %s", lhs, symbol, rhs);
}

/* Temporary v of loop program l as a C local: a load is a<input>, the
 * others t<step> (the loads come first, ir_plan.h). */
static const char *loop_temp(const emitter *em, const ir_loop *l, int v)
{
    if (l->ops[v].kind == IR_LOOP_LOAD)
        return ax_sprintf(arena_of(em), "a%d", l->ops[v].arg[0]);
    return ax_sprintf(arena_of(em), "t%d", v - l->ninputs);
}

/* "i0 * 16 + i1" for one input's strides; "0" when fully broadcast. */
static const char *loop_index(const emitter *em, const int64_t *strides, int loops)
{
    ax_buf text = {0};
    for (int d = 0; d < loops; d++) {
        if (strides[d] == 0)
            continue;
        ax_buf_printf(&text, "%si%d", text.len ? " + " : "", d);
        if (strides[d] != 1)
            ax_buf_printf(&text, " * %lld", (long long)strides[d]);
    }
    const char *result = ax_strdup(arena_of(em), text.len ? text.data : "0");
    ax_buf_free(&text);
    return result;
}

/* Op v as a C declaration of its local. */
static void emit_loop_op(emitter *em, const ir_loop *l, int v, const char *indent)
{
    const ir_loop_op *o = &l->ops[v];
    const char *t = ctype(l->dtype);
    ax_buf_printf(em->out, "%sconst %s %s = ", indent, t, loop_temp(em, l, v));
    switch (o->kind) {
    case IR_LOOP_LOAD:
        ax_buf_printf(em->out, "x%d_[%s]", o->arg[0], loop_index(em, l->in_strides[o->arg[0]], l->nloops));
        break;
    case IR_LOOP_CONST: ax_buf_puts(em->out, cgc_real_literal(em, l->dtype, o->real)); break;
    case IR_LOOP_BINARY:
        ax_buf_puts(em->out, cg_binary_text(arena_of(em), o->op, loop_temp(em, l, o->arg[0]),
                                            loop_temp(em, l, o->arg[1]), l->dtype));
        break;
    case IR_LOOP_UNARY:
        ax_buf_puts(em->out, cg_unary_text(arena_of(em), o->op, loop_temp(em, l, o->arg[0]), l->dtype, o->real));
        break;
    case IR_LOOP_DERIV: ax_die("cg_c: a derivative in the fused loop of %%%d", l->output);
    }
    ax_buf_puts(em->out, ";\n");
}

/* The store's index, a running counter o: the plan's store is dense. */
static void check_dense_store(const ir_loop *l)
{
    int64_t stride = 1;
    for (int d = l->nloops - 1; d >= 0; stride *= l->dims[d--])
        if (l->out_strides[d] != stride)
            ax_die("cg_c: loop program of %%%d stores out of order", l->output);
}

/* ---- a unary_grad's loop program (cg_plan_derivative_loop) ------------------
 * dy * f'(x) over one flat loop, printed with f' written in (AXRT_DERIV_<f>)
 * over a local v.  The plan writes it in one form; another is a bug. */
static bool is_derivative_form(const ir_loop *l)
{
    const ir_loop_op *o = l->ops;
    return l->nloops == 1 && l->ninputs == 2 && l->nops == 4 && l->store == 3 && l->in_strides[0][0] == 1 &&
           l->in_strides[1][0] == 1 && l->out_strides[0] == 1 && o[0].kind == IR_LOOP_LOAD && o[0].arg[0] == 0 &&
           o[1].kind == IR_LOOP_LOAD && o[1].arg[0] == 1 && o[2].kind == IR_LOOP_DERIV && o[2].arg[0] == 1 &&
           o[3].kind == IR_LOOP_BINARY && o[3].op == IR_OP_mul && o[3].arg[0] == 0 && o[3].arg[1] == 2;
}

/* f'(v) in the temporaries' dtype. */
static const char *derivative_text(emitter *em, const ir_loop *l)
{
    const ir_loop_op *d = &l->ops[2];
    if ((unsigned)d->op >= IR_OP_COUNT || !unary_formulas[d->op].deriv)
        ax_die("cg_c: unary_grad of op %d", d->op);
    return formula_text(arena_of(em), unary_formulas[d->op].deriv, "v", l->compute, d->real);
}

/* Half operands, Float32 temporaries (a half model's mixed-precision
 * training): dy and x converted to float a block of 256 at a time, each
 * result rounded once back to the half type (y may be dy: a block is read
 * before written). */
static void emit_half_derivative_loop(emitter *em, const ir_loop *l)
{
    const char *sfx = l->dtype == AXRT_F16 ? "f16" : "bf16", *dt = ir_dtypes[l->dtype].enum_name;
    const long long count = (long long)l->dims[0];
    ax_buf_printf(em->out, "    {\n        float dy_[256], x_[256];\n        size_t at, i, k;\n"
                           "        for (at = 0; at < %lld; at += k) {\n"
                           "            k = %lld - at < 256 ? (size_t)(%lld - at) : 256;\n"
                           "            axrt_cast_f32(%s + at, %s, dy_, k);\n            axrt_cast_f32(%s + at, %s, x_, k);\n"
                           "            for (i = 0; i < k; i++) {\n                const float v = x_[i];\n"
                           "                dy_[i] = dy_[i] * (%s);\n            }\n"
                           "            axrt_cast_%s(dy_, AXRT_F32, %s + at, k);\n        }\n    }\n",
                  count, count, count, cgc_storage(em, l->input[0]), dt, cgc_storage(em, l->input[1]), dt,
                  derivative_text(em, l), sfx, cgc_storage(em, l->output));
}

static void emit_derivative_loop(emitter *em, const ir_loop *l)
{
    if (!is_derivative_form(l) || (l->compute != l->dtype && l->compute != AXRT_F32))
        ax_die("cg_c: loop program of %%%d is not a derivative's", l->output);
    if (l->compute != l->dtype) {
        emit_half_derivative_loop(em, l);
        return;
    }
    const char *t = ctype(l->dtype);
    ax_buf_printf(em->out, "    {\n        const %s *dy_ = %s, *x_ = %s;\n        %s *y_ = %s;\n        size_t i;\n"
                  "        for (i = 0; i < %lld; i++) {\n            const %s v = x_[i];\n"
                  "            y_[i] = dy_[i] * (%s);\n        }\n    }\n",
                  t, cgc_storage(em, l->input[0]), cgc_storage(em, l->input[1]), t, cgc_storage(em, l->output),
                  (long long)l->dims[0], t, derivative_text(em, l));
}

/* A loop program with a derivative is a unary_grad's, printed in its own
 * form (above); the others are fused elementwise loops. */
void cgc_emit_loop(emitter *em, const ir_loop *l)
{
    const char *t = ctype(l->dtype);
    for (int v = 0; v < l->nops; v++)
        if (l->ops[v].kind == IR_LOOP_DERIV) {
            emit_derivative_loop(em, l);
            return;
        }
    if (l->compute != l->dtype)
        ax_die("cg_c: fused loop of %%%d converts", l->output);
    check_dense_store(l);
    ax_buf_puts(em->out, "    {\n");
    for (int k = 0; k < l->ninputs; k++)
        ax_buf_printf(em->out, "        const %s *x%d_ = %s;\n", t, k, cgc_storage(em, l->input[k]));
    ax_buf_printf(em->out, "        %s *y_ = %s;\n        size_t o = 0", t, cgc_storage(em, l->output));
    for (int d = 0; d < l->nloops; d++)
        ax_buf_printf(em->out, ", i%d", d);
    ax_buf_puts(em->out, ";\n");
    char indent[64];
    snprintf(indent, sizeof indent, "%*s", 8 + 4 * l->nloops, "");
    for (int d = 0; d < l->nloops; d++) {
        if (d == l->nloops - 1) /* the preamble's: the innermost loop's iterations are independent */
            ax_buf_printf(em->out, "%*sAXC_IVDEP\n", 8 + 4 * d, "");
        ax_buf_printf(em->out, "%*sfor (i%d = 0; i%d < %lld; i%d++%s)%s\n", 8 + 4 * d, "", d, d,
                      (long long)l->dims[d], d, d == l->nloops - 1 ? ", o++" : "", d == l->nloops - 1 ? " {" : "");
    }
    for (int v = 0; v < l->nops; v++)
        emit_loop_op(em, l, v, indent);
    ax_buf_printf(em->out, "%sy_[o] = %s;\n%*s}\n    }\n", indent, loop_temp(em, l, l->store), 4 + 4 * l->nloops, "");
}
