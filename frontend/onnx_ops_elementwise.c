/* onnx_ops_elementwise.c — elementwise ONNX ops: the unary table (Relu ..
 * Gelu), Clip, the binary table (Add .. Mod) with broadcasting against NHWC
 * tensors, Sum/Mean/Min/Max, Cast, and the ones written with several IR ops
 * (Softsign, Selu, Celu, HardSigmoid, HardSwish, PRelu, ThresholdedRelu,
 * Shrink).  Every one folds when its inputs are constants. */
#ifdef AXC_ONNX
#include <math.h>
#include <string.h>

#include "onnx_ops.h"

/* ---- elementwise ---------------------------------------------------------- */

typedef struct unary_row { const char *name; ir_op op; double (*fold)(double); } unary_row;
static double u_relu(double x) { return x > 0 ? x : 0; }
static double u_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double u_neg(double x) { return -x; }
static double u_softplus(double x) { return log1p(exp(x)); }
static double u_not(double x) { return x == 0; }
static double u_recip(double x) { return 1 / x; }
static double u_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }

static const unary_row unary_rows[] = {
    {"Relu", IR_OP_relu, u_relu}, {"Sigmoid", IR_OP_sigmoid, u_sigmoid}, {"Tanh", IR_OP_tanh, tanh},
    {"Exp", IR_OP_exp, exp}, {"Log", IR_OP_log, log}, {"Sqrt", IR_OP_sqrt, sqrt},
    {"Abs", IR_OP_abs, fabs}, {"Neg", IR_OP_neg, u_neg}, {"Erf", IR_OP_erf, erf},
    {"Softplus", IR_OP_softplus, u_softplus}, {"Elu", IR_OP_elu, NULL},
    {"LeakyRelu", IR_OP_leaky_relu, NULL}, {"Floor", IR_OP_floor, floor},
    {"Ceil", IR_OP_ceil, ceil}, {"Not", IR_OP_COUNT, u_not}, {"Reciprocal", IR_OP_reciprocal, u_recip},
    {"Sin", IR_OP_sin, sin}, {"Cos", IR_OP_cos, cos}, {"Tan", IR_OP_tan, tan},
    {"Asin", IR_OP_asin, asin}, {"Acos", IR_OP_acos, acos}, {"Atan", IR_OP_atan, atan},
    {"Sinh", IR_OP_sinh, sinh}, {"Cosh", IR_OP_cosh, cosh}, {"Asinh", IR_OP_asinh, asinh},
    {"Acosh", IR_OP_acosh, acosh}, {"Atanh", IR_OP_atanh, atanh}, {"Round", IR_OP_round, nearbyint},
    {"Sign", IR_OP_sign, u_sign}, {"Mish", IR_OP_mish, NULL}, {"Gelu", IR_OP_gelu, NULL},
};

/* f on an integer, exact in int64 (negation wraps): *r, or false when f
 * has no integer form. */
static bool int_unary(double (*f)(double), int64_t x, int64_t *r)
{
    if (f == u_neg) *r = (int64_t)(0 - (uint64_t)x);
    else if (f == fabs) *r = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    else if (f == u_relu) *r = x > 0 ? x : 0;
    else if (f == u_sign) *r = x > 0 ? 1 : x < 0 ? -1 : 0;
    else if (f == u_not) *r = x == 0;
    else if (f == floor || f == ceil || f == nearbyint) *r = x;
    else return false;
    return true;
}

/* Gelu (opset 20): approximate "none" is the IR's gelu (erf), "tanh" its
 * gelu_tanh; any other value is refused. */
static ir_op gelu_op(ox_state *s)
{
    const char *approx = ox_attr_str(s, "approximate", "none");
    if (!strcmp(approx, "tanh")) return IR_OP_gelu_tanh;
    if (strcmp(approx, "none")) {
        ox_fail(s, "unsupported: Gelu approximate='%s' (none and tanh only)", approx);
        return IR_OP_COUNT;
    }
    return IR_OP_gelu;
}

bool op_unary(ox_state *s)
{
    const unary_row *r = NULL;
    for (size_t i = 0; i < sizeof unary_rows / sizeof *unary_rows; i++)
        if (!strcmp(unary_rows[i].name, s->node->op_type)) r = &unary_rows[i];
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    if (x->c && r->fold) {
        bool is_int = x->c->is_int && r->fold != u_sigmoid;
        ox_const *c = ox_fold_new(s, is_int, x->c->rank, x->c->shape);
        if (!c) return false;
        for (int64_t i = 0; i < c->count; i++) {
            int64_t k;
            if (!is_int) c->v[i] = r->fold(x->c->v[i]);
            else if (int_unary(r->fold, x->c->iv[i], &k) || ox_double_to_int(r->fold(x->c->v[i]), &k)) ox_set_int(c, i, k);
            else { ox_fail(s, "an integer result out of the int64 range"); return false; }
        }
        return ox_set_const(s, 0, c);
    }
    if (r->op == IR_OP_COUNT) {
        ox_unsupported(s, "this op on a computed tensor (only folded on constants)");
        return false;
    }
    ir_op op = r->op == IR_OP_gelu ? gelu_op(s) : r->op;
    if (op == IR_OP_COUNT) return false;
    ir_attrs a = ir_attrs_unset();
    a.alpha = ox_attr_float(s, "alpha", r->op == IR_OP_elu ? 1.0 : 0.01);
    int src = x->c ? ox_node(s, x) : x->node;
    return ox_set_node(s, 0, ox_add(s, op, &src, 1, &a), !x->c && x->nhwc);
}

/* Clip(0, 6) -> relu6, Clip(0, inf) -> relu, else min(max(x, lo), hi). */
bool op_clip(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0), *lo = IN(1), *hi = IN(2);
    if (!ok || !x) return false;
    double min = ox_attr_float(s, "min", -INFINITY), max = ox_attr_float(s, "max", INFINITY);
    if ((lo && !lo->c) || (hi && !hi->c)) {   /* computed bounds */
        int y = ox_node(s, x);
        if (lo) y = ox_max_min(s, true, y, lo->c ? ox_scalar(s, lo->c->v[0]) : ox_node(s, lo));
        if (hi) y = ox_max_min(s, false, y, hi->c ? ox_scalar(s, hi->c->v[0]) : ox_node(s, hi));
        return ox_set_node(s, 0, y, false);
    }
    if (lo) min = lo->c->v[0];
    if (hi) max = hi->c->v[0];
    ir_op op = min == 0 && max == 6 ? IR_OP_relu6 : min == 0 && isinf(max) ? IR_OP_relu : IR_OP_COUNT;
    if (op == IR_OP_COUNT) {   /* min(max(x, lo), hi) of IR ops */
        int y = ox_node(s, x);
        if (!isinf(min)) y = ox_max_min(s, true, y, ox_scalar(s, min));
        if (!isinf(max)) y = ox_max_min(s, false, y, ox_scalar(s, max));
        return ox_set_node(s, 0, y, false);
    }
    int src = ox_node(s, x);
    if (!x->c && x->nhwc) src = x->node;
    return ox_set_node(s, 0, ox_add(s, op, &src, 1, NULL), !x->c && x->nhwc);
}

typedef struct binary_row { const char *name; ir_op op; ox_binary_fn fold; bool logical; } binary_row;
static const binary_row binary_rows[] = {
    {"Add", IR_OP_add, ox_fold_add, false}, {"Sub", IR_OP_sub, ox_fold_sub, false},
    {"Mul", IR_OP_mul, ox_fold_mul, false}, {"Div", IR_OP_div, ox_fold_div, false},
    {"Pow", IR_OP_pow, ox_fold_pow, false}, {"Equal", IR_OP_COUNT, ox_fold_eq, true},
    {"Less", IR_OP_COUNT, ox_fold_lt, true}, {"Greater", IR_OP_COUNT, ox_fold_gt, true},
    {"LessOrEqual", IR_OP_COUNT, ox_fold_le, true}, {"GreaterOrEqual", IR_OP_COUNT, ox_fold_ge, true},
    {"And", IR_OP_COUNT, ox_fold_and, true}, {"Or", IR_OP_COUNT, ox_fold_or, true},
    {"Mod", IR_OP_fmod, ox_fold_mod, false},
};

bool op_binary(ox_state *s)
{
    const binary_row *r = NULL;
    for (size_t i = 0; i < sizeof binary_rows / sizeof *binary_rows; i++)
        if (!strcmp(binary_rows[i].name, s->node->op_type)) r = &binary_rows[i];
    bool ok = true;
    ox_val *a = IN(0), *b = IN(1);
    if (!ok || !a || !b) return false;
    if (ox_attr(s, "broadcast") && ox_attr(s, "axis")) {
        ox_unsupported(s, "opset-1 broadcasting with an axis attribute");
        return false;
    }
    bool python_mod = r->op == IR_OP_fmod && !ox_attr_int(s, "fmod", 0);
    if (a->c && b->c)
        return ox_set_const(s, 0, ox_fold_binary(s, a->c, b->c, r->op == IR_OP_fmod && !python_mod ? ox_fold_fmod : r->fold, r->logical));
    if (python_mod) {   /* the IR's fmod is C's: integer Mod is folded only */
        const ox_val *t = a->c ? b : a;
        if (ir_dtype_is_float(ir_at(s->g, t->node)->dtype))
            ox_fail(s, "Mod with fmod=0 on floating-point tensors (ONNX requires fmod=1 for them)");
        else ox_unsupported(s, "Mod of computed integer tensors (integer constants are folded)");
        return false;
    }
    if (r->op == IR_OP_COUNT) {
        ox_unsupported(s, "this op on computed tensors (only folded on constants)");
        return false;
    }
    return ox_binary_tensor(s, r->op, a, b);
}

/* Sum and Mean of any number of inputs; Min, Max folded or composed. */
bool op_variadic(ox_state *s)
{
    bool ok = true, mean = !strcmp(s->node->op_type, "Mean");
    bool fold_only = !strcmp(s->node->op_type, "Min") || !strcmp(s->node->op_type, "Max");
    ox_val *acc = IN(0);
    if (!ok || !acc) return false;
    if (ox_all_const(s)) {
        ox_binary_fn f = fold_only ? (s->node->op_type[1] == 'i' ? ox_fold_min : ox_fold_max) : ox_fold_add;
        ox_const *c = acc->c;
        for (int i = 1; i < NIN && c; i++) c = ox_fold_binary(s, c, IN(i)->c, f, false);
        if (c && mean) {
            ox_const *r = ox_fold_new(s, c->is_int, c->rank, c->shape);
            if (!r) return false;
            for (int64_t i = 0; i < c->count; i++) {
                if (c->is_int) ox_set_int(r, i, c->iv[i] / NIN);
                else r->v[i] = c->v[i] / NIN;
            }
            c = r;
        }
        return ox_set_const(s, 0, c);
    }
    if (fold_only) return op_composite(s);
    ox_val cur = *acc;
    for (int i = 1; i < NIN; i++) {
        ox_val *b = IN(i);
        if (!ok || !ox_binary_tensor(s, IR_OP_add, &cur, b)) return false;
        cur = *ox_lookup(s, s->node->output[0]);
    }
    if (NIN == 1) return op_identity(s);
    if (!mean) return true;
    int src[2] = {cur.node, ox_scalar(s, 1.0 / NIN)};
    return ox_set_node(s, 0, ox_add(s, IR_OP_mul, src, 2, NULL), cur.nhwc);
}

/* x wrapped to ONNX integer type to (two's complement, as a C cast to it;
 * a UINT64 keeps its bits in the int64). */
static int64_t cast_int(int64_t x, int64_t to)
{
    switch (to) {
    case 2: return (uint8_t)x;
    case 3: return (int8_t)(uint8_t)x;
    case 4: return (uint16_t)x;
    case 5: return (int16_t)(uint16_t)x;
    case 6: return (int32_t)(uint32_t)x;
    case 12: return (uint32_t)x;
    default: return x;
    }
}

bool op_cast(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t to = ox_attr_int(s, "to", 1);
    bool to_int = to != 1 && to != 10 && to != 11;
    if (to < 1 || to > 13 || to == 8) {   /* string, complex, bfloat16, float8 (opset 19), int4 (21)... */
        ox_fail(s, "unsupported: Cast to ONNX data type %lld (float, double and integer types only)", (long long)to);
        return false;
    }
    if (x->c) {
        ox_const *c = ox_fold_new(s, to_int, x->c->rank, x->c->shape);
        if (!c) return false;
        for (int64_t i = 0; i < c->count; i++) {
            int64_t k;
            if (!to_int) c->v[i] = to == 11 ? x->c->v[i] : (double)(float)x->c->v[i];
            else if (to == 9) ox_set_int(c, i, x->c->v[i] != 0);
            else if (x->c->is_int || ox_double_to_int(x->c->v[i], &k)) ox_set_int(c, i, cast_int(x->c->is_int ? x->c->iv[i] : k, to));
            else { ox_fail(s, "the value %g is not an integer in the int64 range", x->c->v[i]); return false; }
        }
        return ox_set_const(s, 0, c);
    }
    if (to_int || ir_at(s->g, x->node)->dtype != AXRT_F32) {
        ox_unsupported(s, "a Cast of a computed tensor to or from an integer type");
        return false;
    }
    return op_identity(s);
}

/* ---- composites of IR ops ------------------------------------------------ */

/* Elementwise ops written with the IR's: Softsign, Selu, Celu, HardSigmoid,
 * HardSwish, ThresholdedRelu-free set; Max/Min of tensors; PRelu. */
bool op_composite(ox_state *s)
{
    bool ok = true;
    const char *op = s->node->op_type;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    bool nhwc = !xv->c && xv->nhwc;
    int x = nhwc ? xv->node : ox_node(s, xv), y = IR_NONE;
    if (x == IR_NONE) return false;
    if (!strcmp(op, "Softsign"))
        y = ox_bin(s, IR_OP_div, x, ox_bin(s, IR_OP_add, ox_un(s, IR_OP_abs, x), ox_scalar_param(s, 1)));
    else if (!strcmp(op, "Selu")) {
        ir_attrs a = ir_attrs_unset();
        a.alpha = ox_attr_float(s, "alpha", 1.67326319217681884765625);
        y = ox_bin(s, IR_OP_mul, ox_add(s, IR_OP_elu, &x, 1, &a), ox_scalar_param(s, ox_attr_float(s, "gamma", 1.05070102214813232421875)));
    } else if (!strcmp(op, "Celu")) {
        double alpha = ox_attr_float(s, "alpha", 1.0);
        ir_attrs a = ir_attrs_unset();
        a.alpha = 1.0;
        int t = ox_bin(s, IR_OP_div, x, ox_scalar_param(s, alpha));
        y = t == IR_NONE ? t : ox_bin(s, IR_OP_mul, ox_add(s, IR_OP_elu, &t, 1, &a), ox_scalar_param(s, alpha));
    } else if (!strcmp(op, "HardSwish")) {   /* x * clamp(x / 6 + 1/2, 0, 1): torch's */
        y = ox_un(s, IR_OP_hardswish, x);
    } else if (!strcmp(op, "HardSigmoid")) {
        double alpha = ox_attr_float(s, "alpha", 0.2), beta = ox_attr_float(s, "beta", 0.5);
        /* clamp(alpha x + beta, 0, 1) = relu6(6 alpha x + 6 beta) / 6 */
        int t = ox_bin(s, IR_OP_add, ox_bin(s, IR_OP_mul, x, ox_scalar_param(s, 6 * alpha)), ox_scalar_param(s, 6 * beta));
        y = ox_bin(s, IR_OP_div, ox_un(s, IR_OP_relu6, t), ox_scalar_param(s, 6));
    } else if (!strcmp(op, "Max") || !strcmp(op, "Min") || !strcmp(op, "PRelu")) {
        y = x;
        nhwc = false;
        y = ox_node(s, xv);
        for (int i = 1; i < NIN && y != IR_NONE; i++) {
            ox_val *b = IN(i);
            if (!ok || !b) return false;
            if (b->c && b->c->is_int) { ox_unsupported(s, "an integer constant operand"); return false; }
            int bn = ox_node(s, b);
            const ir_node *yn = ir_at(s->g, y);
            if (op[0] == 'P' && b->c && b->c->rank == 1 && yn->rank > 2 && b->c->count == yn->shape[1] &&
                b->c->count != yn->shape[yn->rank - 1]) {   /* a slope per channel (old exports) */
                int64_t cs[IR_MAX_RANK];
                for (int k = 0; k < yn->rank - 1; k++) cs[k] = k == 0 ? b->c->count : 1;
                bn = ox_reshape_to(s, bn, cs, yn->rank - 1);
            }
            if (op[0] == 'P')   /* relu(x) - slope * relu(-x) */
                y = ox_bin(s, IR_OP_sub, ox_un(s, IR_OP_relu, y), ox_bin(s, IR_OP_mul, bn, ox_un(s, IR_OP_relu, ox_un(s, IR_OP_neg, y))));
            else y = ox_max_min(s, op[1] == 'a', y, bn);
        }
    }
    return ox_set_node(s, 0, y, nhwc);
}

/* 1 where t > 0, else 0 (exact: relu(sign(t))). */
static int step_positive(ox_state *s, int t)
{
    return ox_un(s, IR_OP_relu, ox_un(s, IR_OP_sign, t));
}

/* ThresholdedRelu x * [x > alpha]; Shrink [x < -l] (x + b) + [x > l] (x - b). */
bool op_piecewise(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    if (!ok || !xv) return false;
    bool nhwc = !xv->c && xv->nhwc;
    int x = nhwc ? xv->node : ox_node(s, xv), y;
    if (!strcmp(s->node->op_type, "ThresholdedRelu")) {
        double alpha = ox_attr_float(s, "alpha", 1.0);
        y = ox_bin(s, IR_OP_mul, x, step_positive(s, ox_bin(s, IR_OP_sub, x, ox_scalar_param(s, alpha))));
    } else {
        double l = ox_attr_float(s, "lambd", 0.5), b = ox_attr_float(s, "bias", 0.0);
        int below = step_positive(s, ox_bin(s, IR_OP_sub, ox_scalar_param(s, -l), x));
        int above = step_positive(s, ox_bin(s, IR_OP_sub, x, ox_scalar_param(s, l)));
        y = ox_bin(s, IR_OP_add, ox_bin(s, IR_OP_mul, below, ox_bin(s, IR_OP_add, x, ox_scalar_param(s, b))),
                ox_bin(s, IR_OP_mul, above, ox_bin(s, IR_OP_sub, x, ox_scalar_param(s, b))));
    }
    return ox_set_node(s, 0, y, nhwc);
}

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_elementwise_left_out;
#endif
