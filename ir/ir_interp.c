/* ir_interp.c — the reference interpreter (ir_interp.h).
 *
 * Every node's value is a heap array of doubles in row-major order, whatever
 * the node's dtype: inputs and params are widened on entry, graph outputs are
 * narrowed to their node's dtype at the end, and only an explicit cast rounds
 * in between (so "Float64 input -> cast -> Float32 model" sees float values);
 * but a Float16/BFloat16 node's result is rounded to its format, as a half
 * model stores every activation (docs/precision.md: stored in the half type,
 * computed in wider precision).
 * The semantics are PyTorch's, written out naively and independently of the
 * runtime kernels and the code generators so that it can cross-check them.
 * A value is freed after its last live reader; graph outputs are kept, and a
 * node that no live node reads (and is no output) is not evaluated at all. */
#include "ir_interp.h"
#include "ir_use.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

typedef struct interp {
    const ir_graph *g;
    const void *const *inputs; /* the caller's, in g->inputs order */
    double **vals;   /* per node id; NULL for dead, not yet computed or freed */
    int *last_use;   /* per node id: the last node reading it, or nnodes for outputs */
    ir_interp_observer *observe; /* or NULL */
    void *user;
} interp;

/* ---- dtype conversion ------------------------------------------------- */

static double f16_to_double(uint16_t h)
{
    int exponent = (h >> 10) & 0x1f;
    int mantissa = h & 0x3ff;
    double magnitude;
    if (exponent == 0)
        magnitude = ldexp(mantissa, -24);
    else if (exponent == 31)
        magnitude = mantissa ? NAN : INFINITY;
    else
        magnitude = ldexp(mantissa + 1024, exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

static double bf16_to_double(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* x rounded to nearest, ties to even, in a binary format with `digits`
 * significand bits, smallest normal exponent emin and largest finite value
 * max (beyond which it overflows to infinity). */
static double round_to_format(double x, int digits, int emin, double max)
{
    if (!isfinite(x) || x == 0)
        return x;
    int e;
    frexp(x, &e);
    int lead = e - 1 < emin ? emin : e - 1;
    double quantum = ldexp(1.0, lead - (digits - 1));
    double rounded = nearbyint(x / quantum) * quantum;
    return fabs(rounded) > max ? copysign(INFINITY, x) : rounded;
}

static double round_f16(double x) { return round_to_format(x, 11, -14, 65504.0); }
static double round_bf16(double x) { return round_to_format(x, 8, -126, 0x1.fep127); }

/* Bits of a value already representable in binary16. */
static uint16_t f16_bits(double r)
{
    uint16_t sign = signbit(r) ? 0x8000 : 0;
    double a = fabs(r);
    if (isnan(r))
        return sign | 0x7e00;
    if (isinf(a))
        return sign | 0x7c00;
    if (a < 0x1p-14)
        return sign | (uint16_t)(a * 0x1p24);
    int e;
    double fraction = frexp(a, &e);
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)((fraction * 2 - 1) * 1024);
}

/* Bits of a value already representable in bfloat16. */
static uint16_t bf16_bits(double r)
{
    float f = (float)r;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return isnan(f) ? (uint16_t)((bits >> 16) | 0x40) : (uint16_t)(bits >> 16);
}

/* Truncation toward zero, saturated to [lo, hi] (NaN -> 0) so that an
 * out-of-range value is defined behaviour here. */
static double truncate_to(double x, double lo, double hi)
{
    if (isnan(x))
        return 0;
    x = trunc(x);
    return x < lo ? lo : x > hi ? hi : x;
}

/* The value x takes when stored in dtype, as a double (what cast computes). */
static double round_to_dtype(double x, axrt_dtype dtype)
{
    switch (dtype) {
    case AXRT_F32: return (float)x;
    case AXRT_F64: return x;
    case AXRT_F16: return round_f16(x);
    case AXRT_BF16: return round_bf16(x);
    case AXRT_I8: return truncate_to(x, INT8_MIN, INT8_MAX);
    case AXRT_I32: return truncate_to(x, INT32_MIN, INT32_MAX);
    /* 2^63 is the first double above INT64_MAX; the largest below is 2^63 - 1024 */
    case AXRT_I64: return truncate_to(x, -0x1p63, 0x1p63 - 1024);
    default: return NAN;
    }
}

static double load_element(const void *data, axrt_dtype dtype, int64_t i)
{
    switch (dtype) {
    case AXRT_F32: return ((const float *)data)[i];
    case AXRT_F64: return ((const double *)data)[i];
    case AXRT_F16: return f16_to_double(((const uint16_t *)data)[i]);
    case AXRT_BF16: return bf16_to_double(((const uint16_t *)data)[i]);
    case AXRT_I8: return ((const int8_t *)data)[i];
    case AXRT_I32: return ((const int32_t *)data)[i];
    case AXRT_I64: return (double)((const int64_t *)data)[i];
    default: return NAN;
    }
}

static void store_element(void *data, axrt_dtype dtype, int64_t i, double x)
{
    double r = round_to_dtype(x, dtype);
    switch (dtype) {
    case AXRT_F32: ((float *)data)[i] = (float)r; break;
    case AXRT_F64: ((double *)data)[i] = r; break;
    case AXRT_F16: ((uint16_t *)data)[i] = f16_bits(r); break;
    case AXRT_BF16: ((uint16_t *)data)[i] = bf16_bits(r); break;
    case AXRT_I8: ((int8_t *)data)[i] = (int8_t)r; break;
    case AXRT_I32: ((int32_t *)data)[i] = (int32_t)r; break;
    case AXRT_I64: ((int64_t *)data)[i] = (int64_t)r; break;
    default: break;
    }
}

double ir_element_get(const void *data, axrt_dtype dtype, int64_t i)
{
    return load_element(data, dtype, i);
}

void ir_element_set(void *data, axrt_dtype dtype, int64_t i, double x)
{
    store_element(data, dtype, i, x);
}

/* ---- small helpers ------------------------------------------------------ */

static int64_t dims_product(const int64_t *shape, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= shape[i];
    return p;
}

/* A tensor seen as [outer, len, inner] around attrs.axis (reductions, softmax). */
typedef struct axis_view { int64_t outer, len, inner; } axis_view;

static axis_view split_at_axis(const ir_node *x, int axis)
{
    axis_view v = {dims_product(x->shape, 0, axis), x->shape[axis],
                   dims_product(x->shape, axis + 1, x->rank)};
    return v;
}

static const ir_node *operand(const interp *in, const ir_node *n, int k)
{
    return k < n->nsrc && n->src[k] != IR_NONE ? &in->g->nodes[n->src[k]] : NULL;
}

/* Operand k's values, or NULL for an absent optional operand. */
static const double *operand_vals(const interp *in, const ir_node *n, int k)
{
    return k < n->nsrc && n->src[k] != IR_NONE ? in->vals[n->src[k]] : NULL;
}

/* Element strides of a tensor of shape dims[0..rank) right-aligned against an
 * out_rank-dimensional broadcast shape (NumPy rules): a missing or size-1
 * dimension gets stride 0.  unit is the stride of the innermost dimension. */
static void broadcast_strides(const int64_t *dims, int rank, int out_rank, int64_t unit,
                              int64_t *strides)
{
    int64_t stride = unit;
    for (int d = out_rank - 1; d >= 0; d--) {
        int own = d - (out_rank - rank);
        strides[d] = own >= 0 && dims[own] != 1 ? stride : 0;
        if (own >= 0)
            stride *= dims[own];
    }
}

/* Offset of element `linear` of a tensor of shape out_shape in an operand
 * with the given (broadcast) strides. */
static int64_t broadcast_offset(int64_t linear, const int64_t *out_shape, int rank,
                                const int64_t *strides)
{
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; d--) {
        offset += (linear % out_shape[d]) * strides[d];
        linear /= out_shape[d];
    }
    return offset;
}

/* ---- elementwise ------------------------------------------------------- */

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* One function per UNARY_OP row of ops.def (the table below is generated
 * from those rows, so an activation without its function here does not
 * compile); alpha is attrs.alpha for elu and leaky_relu. */
static double interp_relu(double x, double alpha) { (void)alpha; return x < 0 ? 0 : x; } /* as torch: NaN stays NaN, -0 stays -0 */
static double interp_relu6(double x, double alpha) { (void)alpha; return x < 0 ? 0 : x > 6 ? 6 : x; }
static double interp_sigmoid(double x, double alpha) { (void)alpha; return sigmoid(x); }
static double interp_tanh(double x, double alpha) { (void)alpha; return tanh(x); }
static double interp_swish(double x, double alpha) { (void)alpha; return x * sigmoid(x); }
static double interp_gelu(double x, double alpha) { (void)alpha; return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double interp_gelu_tanh(double x, double alpha)
{
    (void)alpha;
    return 0.5 * x * (1 + tanh(sqrt(2 / PI) * (x + 0.044715 * x * x * x)));
}
static double interp_softplus(double x, double alpha) { (void)alpha; return x > 20 ? x : log1p(exp(x)); }
static double interp_elu(double x, double alpha) { return x > 0 ? x : x == 0 ? 0.0 : alpha * expm1(x); } /* torch: elu(-0) is +0 */
static double interp_leaky_relu(double x, double alpha) { return x > 0 ? x : alpha * x; }
static double interp_hardswish(double x, double alpha)
{
    (void)alpha;   /* x * relu6(x + 3) / 6, written so that -inf gives 0 and NaN stays NaN */
    return x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6;
}
static double interp_hardsigmoid(double x, double alpha)
{
    (void)alpha;
    return x <= -3 ? 0 : x >= 3 ? 1 : (x + 3) / 6;
}
static double interp_mish(double x, double alpha) { return x * tanh(interp_softplus(x, alpha)); }
static double interp_selu(double x, double alpha)
{
    (void)alpha;
    return 1.0507009873554804934193349852946 * (x > 0 ? x : 1.6732632423543772848170429916717 * expm1(x));
}
static double interp_reciprocal(double x, double alpha) { (void)alpha; return 1 / x; }
static double interp_sin(double x, double alpha) { (void)alpha; return sin(x); }
static double interp_cos(double x, double alpha) { (void)alpha; return cos(x); }
static double interp_tan(double x, double alpha) { (void)alpha; return tan(x); }
static double interp_asin(double x, double alpha) { (void)alpha; return asin(x); }
static double interp_acos(double x, double alpha) { (void)alpha; return acos(x); }
static double interp_atan(double x, double alpha) { (void)alpha; return atan(x); }
static double interp_sinh(double x, double alpha) { (void)alpha; return sinh(x); }
static double interp_cosh(double x, double alpha) { (void)alpha; return cosh(x); }
static double interp_asinh(double x, double alpha) { (void)alpha; return asinh(x); }
static double interp_acosh(double x, double alpha) { (void)alpha; return acosh(x); }
static double interp_atanh(double x, double alpha) { (void)alpha; return atanh(x); }
static double interp_floor(double x, double alpha) { (void)alpha; return floor(x); }
static double interp_ceil(double x, double alpha) { (void)alpha; return ceil(x); }
static double interp_round(double x, double alpha) { (void)alpha; return rint(x); }
static double interp_sign(double x, double alpha) { (void)alpha; return x > 0 ? 1 : x < 0 ? -1 : x; }
static double interp_exp(double x, double alpha) { (void)alpha; return exp(x); }
static double interp_log(double x, double alpha) { (void)alpha; return log(x); }
static double interp_sqrt(double x, double alpha) { (void)alpha; return sqrt(x); }
static double interp_abs(double x, double alpha) { (void)alpha; return fabs(x); }
static double interp_neg(double x, double alpha) { (void)alpha; return -x; }
static double interp_erf(double x, double alpha) { (void)alpha; return erf(x); }

typedef double unary_fn(double x, double alpha);
static unary_fn *const unary_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define UNARY_OP(name, flags) [IR_OP_##name] = interp_##name,
#include "ops.def"
#undef OP
};

/* One unary op at x (an epilogue, a fused step or a node); alpha for elu
 * and leaky_relu.  NaN for an op without a function (a non-unary op). */
static double unary_value(ir_op op, double alpha, double x)
{
    return unary_fns[op] ? unary_fns[op](x, alpha) : NAN;
}

double ir_interp_unary(ir_op op, double alpha, double x)
{
    return op >= 0 && op < IR_OP_COUNT ? unary_value(op, alpha, x) : NAN;
}

static int eval_unary(const interp *in, const ir_node *n, double *out)
{
    const double *x = operand_vals(in, n, 0);
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = unary_value(n->op, n->attrs.alpha, x[i]);
    return 0;
}

/* One derivative per UNARY_OP row (the table is generated from those rows,
 * so an activation without one does not compile): f'(x) as PyTorch's
 * autograd takes it, kinks included (relu'(0) = 0, abs'(0) = 0). */
static double deriv_relu(double x, double alpha) { (void)alpha; return x > 0 ? 1 : 0; }
static double deriv_relu6(double x, double alpha) { (void)alpha; return x > 0 && x < 6 ? 1 : 0; }
static double deriv_sigmoid(double x, double alpha) { (void)alpha; double s = sigmoid(x); return s * (1 - s); }
static double deriv_tanh(double x, double alpha) { (void)alpha; double t = tanh(x); return 1 - t * t; }
static double deriv_swish(double x, double alpha) { (void)alpha; double s = sigmoid(x); return s * (1 + x * (1 - s)); }
static double deriv_gelu(double x, double alpha)
{
    (void)alpha;
    return 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * PI);
}
static double deriv_gelu_tanh(double x, double alpha)
{
    (void)alpha;
    const double k = sqrt(2 / PI), t = tanh(k * (x + 0.044715 * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
}
static double deriv_softplus(double x, double alpha) { (void)alpha; return x > 20 ? 1 : sigmoid(x); }
static double deriv_elu(double x, double alpha) { return x > 0 ? 1 : alpha * exp(x); }
static double deriv_leaky_relu(double x, double alpha) { return x > 0 ? 1 : alpha; }
static double deriv_hardswish(double x, double alpha) { (void)alpha; return x < -3 ? 0 : x <= 3 ? x / 3 + 0.5 : 1; }
static double deriv_hardsigmoid(double x, double alpha) { (void)alpha; return x > -3 && x < 3 ? 1.0 / 6 : 0; }
static double deriv_mish(double x, double alpha)
{
    double t = tanh(interp_softplus(x, alpha));
    return t + x * sigmoid(x) * (1 - t * t);
}
static double deriv_selu(double x, double alpha)
{
    (void)alpha;
    return 1.0507009873554804934193349852946 * (x > 0 ? 1 : 1.6732632423543772848170429916717 * exp(x));
}
static double deriv_reciprocal(double x, double alpha) { (void)alpha; return -1 / (x * x); }
static double deriv_sin(double x, double alpha) { (void)alpha; return cos(x); }
static double deriv_cos(double x, double alpha) { (void)alpha; return -sin(x); }
static double deriv_tan(double x, double alpha) { (void)alpha; double c = cos(x); return 1 / (c * c); }
static double deriv_asin(double x, double alpha) { (void)alpha; return 1 / sqrt(1 - x * x); }
static double deriv_acos(double x, double alpha) { (void)alpha; return -1 / sqrt(1 - x * x); }
static double deriv_atan(double x, double alpha) { (void)alpha; return 1 / (1 + x * x); }
static double deriv_sinh(double x, double alpha) { (void)alpha; return cosh(x); }
static double deriv_cosh(double x, double alpha) { (void)alpha; return sinh(x); }
static double deriv_asinh(double x, double alpha) { (void)alpha; return 1 / sqrt(x * x + 1); }
static double deriv_acosh(double x, double alpha) { (void)alpha; return 1 / sqrt(x * x - 1); }
static double deriv_atanh(double x, double alpha) { (void)alpha; return 1 / (1 - x * x); }
/* Step functions: zero almost everywhere, as autograd takes them. */
static double deriv_floor(double x, double alpha) { (void)alpha, (void)x; return 0; }
static double deriv_ceil(double x, double alpha) { (void)alpha, (void)x; return 0; }
static double deriv_round(double x, double alpha) { (void)alpha, (void)x; return 0; }
static double deriv_sign(double x, double alpha) { (void)alpha, (void)x; return 0; }
static double deriv_exp(double x, double alpha) { (void)alpha; return exp(x); }
static double deriv_log(double x, double alpha) { (void)alpha; return 1 / x; }
static double deriv_sqrt(double x, double alpha) { (void)alpha; return 0.5 / sqrt(x); }
static double deriv_abs(double x, double alpha) { (void)alpha; return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double deriv_neg(double x, double alpha) { (void)alpha, (void)x; return -1; }
static double deriv_erf(double x, double alpha) { (void)alpha; return 2 / sqrt(PI) * exp(-x * x); }

static unary_fn *const deriv_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define UNARY_OP(name, flags) [IR_OP_##name] = deriv_##name,
#include "ops.def"
#undef OP
};

/* dy * f'(x), f = attrs.of_op (same shapes: pass_grad builds it so). */
static int eval_unary_grad(const interp *in, const ir_node *n, double *out)
{
    const double *dy = operand_vals(in, n, 0), *x = operand_vals(in, n, 1);
    unary_fn *d = (unsigned)n->attrs.of_op < IR_OP_COUNT ? deriv_fns[n->attrs.of_op] : NULL;
    if (!d || ir_numel(operand(in, n, 0)) != ir_numel(n) || ir_numel(operand(in, n, 1)) != ir_numel(n))
        return -1;
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = dy[i] * d(x[i], n->attrs.alpha);
    return 0;
}

static int eval_cast(const interp *in, const ir_node *n, double *out)
{
    const double *x = operand_vals(in, n, 0);
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = round_to_dtype(x[i], n->dtype);
    return 0;
}

/* One function per BINARY_OP row, as for the unary ones. */
static double interp_add(double a, double b) { return a + b; }
static double interp_sub(double a, double b) { return a - b; }
static double interp_mul(double a, double b) { return a * b; }
static double interp_div(double a, double b) { return a / b; }
static double interp_pow(double a, double b) { return pow(a, b); }
static double interp_fmod(double a, double b) { return fmod(a, b); }
/* torch.clamp_min/clamp_max and torch.maximum/minimum: NaN when either operand is NaN */
static double interp_clamp_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : fmax(a, b); }
static double interp_clamp_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : fmin(a, b); }
#define interp_max interp_clamp_min
#define interp_min interp_clamp_max

typedef double binary_fn(double a, double b);
static binary_fn *const binary_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags)
#define BINARY_OP(name, symbol) [IR_OP_##name] = interp_##name,
#include "ops.def"
#undef OP
};

static double binary_value(ir_op op, double a, double b)
{
    return binary_fns[op] ? binary_fns[op](a, b) : NAN;
}

static int eval_binary(const interp *in, const ir_node *n, double *out)
{
    const ir_node *a = operand(in, n, 0), *b = operand(in, n, 1);
    const double *av = operand_vals(in, n, 0), *bv = operand_vals(in, n, 1);
    int64_t a_strides[IR_MAX_RANK], b_strides[IR_MAX_RANK];
    broadcast_strides(a->shape, a->rank, n->rank, 1, a_strides);
    broadcast_strides(b->shape, b->rank, n->rank, 1, b_strides);
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = binary_value(n->op, av[broadcast_offset(i, n->shape, n->rank, a_strides)],
                              bv[broadcast_offset(i, n->shape, n->rank, b_strides)]);
    return 0;
}

/* The fused program (ir.h ir_fused_step) at output element i, each operand
 * read through its attrs.strides; t holds one value per step (doubles, as
 * the unfused nodes' values would be). */
static double fused_value(const interp *in, const ir_node *n, int64_t i, double *t)
{
    for (int s = 0; s < n->attrs.nsteps; s++) {
        const ir_fused_step *step = &n->attrs.steps[s];
        const int nargs = step->op == IR_OP_scalar ? 0 : ir_ops[step->op].kind == IR_BINARY ? 2 : 1;
        double arg[2] = {0, 0};
        for (int a = 0; a < nargs; a++) {
            const int k = IR_FUSED_OPERAND_INDEX(step->arg[a]);
            arg[a] = step->arg[a] >= 0 ? t[step->arg[a]]
                     : in->vals[n->src[k]][broadcast_offset(i, n->shape, n->rank, n->attrs.strides[k])];
        }
        if (step->op == IR_OP_scalar)
            t[s] = step->value;
        else if (ir_ops[step->op].kind == IR_BINARY)
            t[s] = binary_value((ir_op)step->op, arg[0], arg[1]);
        else
            t[s] = unary_value((ir_op)step->op, step->value, arg[0]);
    }
    return t[n->attrs.nsteps - 1];
}

static int eval_fused(const interp *in, const ir_node *n, double *out)
{
    double *t = malloc((size_t)n->attrs.nsteps * sizeof *t);
    if (!t)
        return -1;
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = fused_value(in, n, i, t);
    free(t);
    return 0;
}

/* ---- reductions and softmax over attrs.axis, seen as [outer, len, inner] */

static int eval_reduce(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0);
    const double *xv = operand_vals(in, n, 0);
    const axis_view view = split_at_axis(x, n->attrs.axis);
    const int64_t outer = view.outer, len = view.len, inner = view.inner;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const double *line = xv + o * len * inner + i;
            double acc = n->op == IR_OP_maximum ? -INFINITY : n->op == IR_OP_minimum ? INFINITY
                       : n->op == IR_OP_prod ? 1 : 0;
            for (int64_t k = 0; k < len; k++) {
                double v = line[k * inner];
                if (n->op == IR_OP_maximum)
                    acc = (v > acc || isnan(v)) ? v : acc;
                else if (n->op == IR_OP_minimum)
                    acc = (v < acc || isnan(v)) ? v : acc;
                else if (n->op == IR_OP_prod)
                    acc *= v;
                else
                    acc += v;
            }
            out[o * inner + i] = n->op == IR_OP_mean ? acc / (double)len : acc;
        }
    }
    return 0;
}

/* torch.argmax: the first index of the largest element of each line, the
 * first NaN if there is one (NaN counts as the largest). */
static int eval_argmax(const interp *in, const ir_node *n, double *out)
{
    const double *xv = operand_vals(in, n, 0);
    const axis_view view = split_at_axis(operand(in, n, 0), n->attrs.axis);
    for (int64_t o = 0; o < view.outer; o++) {
        for (int64_t i = 0; i < view.inner; i++) {
            const double *line = xv + o * view.len * view.inner + i;
            int64_t best = 0;
            for (int64_t k = 1; k < view.len && !isnan(line[best * view.inner]); k++)
                if (isnan(line[k * view.inner]) || line[k * view.inner] > line[best * view.inner])
                    best = k;
            out[o * view.inner + i] = (double)best;
        }
    }
    return 0;
}

static int eval_softmax(const interp *in, const ir_node *n, double *out)
{
    const double *xv = operand_vals(in, n, 0);
    const axis_view view = split_at_axis(n, n->attrs.axis);
    const int64_t outer = view.outer, len = view.len, inner = view.inner;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            double max = -INFINITY, total = 0;
            for (int64_t k = 0; k < len; k++)
                max = fmax(max, xv[base + k * inner]);
            for (int64_t k = 0; k < len; k++)
                total += exp(xv[base + k * inner] - max);
            for (int64_t k = 0; k < len; k++) {
                double shifted = xv[base + k * inner] - max;
                out[base + k * inner] =
                    n->op == IR_OP_log_softmax ? shifted - log(total) : exp(shifted) / total;
            }
        }
    }
    return 0;
}

/* ---- data movement ----------------------------------------------------- */

static int eval_reshape(const interp *in, const ir_node *n, double *out)
{
    memcpy(out, operand_vals(in, n, 0), (size_t)ir_numel(n) * sizeof *out);
    return 0;
}

/* torch.permute: output dim k is input dim perm[k]. */
static int eval_transpose(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0);
    const double *xv = operand_vals(in, n, 0);
    int64_t x_strides[IR_MAX_RANK], strides[IR_MAX_RANK];
    for (int d = x->rank - 1; d >= 0; d--)
        x_strides[d] = d == x->rank - 1 ? 1 : x_strides[d + 1] * x->shape[d + 1];
    for (int k = 0; k < n->rank; k++)
        strides[k] = x_strides[n->attrs.perm[k]];
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = xv[broadcast_offset(i, n->shape, n->rank, strides)];
    return 0;
}

/* slice: the element at begin + i * step of each dim (attrs normalised by pass_shape). */
static int eval_slice(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0);
    const double *xv = operand_vals(in, n, 0);
    int64_t strides[IR_MAX_RANK];
    const int64_t offset = ir_slice_strides(&n->attrs, x->shape, x->rank, strides);
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = xv[offset + broadcast_offset(i, n->shape, n->rank, strides)];
    return 0;
}

static int eval_concat(const interp *in, const ir_node *n, double *out)
{
    int axis = n->attrs.axis;
    int64_t outer = dims_product(n->shape, 0, axis);
    int64_t out_row = dims_product(n->shape, axis, n->rank);
    int64_t column = 0;
    for (int k = 0; k < n->nsrc; k++) {
        const ir_node *x = operand(in, n, k);
        const double *xv = operand_vals(in, n, k);
        int64_t row = dims_product(x->shape, axis, x->rank);
        for (int64_t o = 0; o < outer; o++)
            memcpy(out + o * out_row + column, xv + o * row, (size_t)row * sizeof *out);
        column += row;
    }
    return 0;
}

/* Several results (ir.h): the producer's value here is a copy of its
 * operand, and each result node copies its part out of it. */
static int eval_chunk(const interp *in, const ir_node *n, double *out)
{
    memcpy(out, operand_vals(in, n, 0), (size_t)ir_numel(n) * sizeof *out);
    return 0;
}

static int eval_result(const interp *in, const ir_node *n, double *out)
{
    const ir_node *p = operand(in, n, 0);
    const double *pv = operand_vals(in, n, 0);
    if (!ir_has_results(p->op))
        return -1;
    const int axis = p->attrs.axis;
    int64_t start, size;
    ir_result_extent(in->g, n, &start, &size);
    const int64_t outer = dims_product(p->shape, 0, axis);
    const int64_t inner = dims_product(p->shape, axis + 1, p->rank);
    for (int64_t o = 0; o < outer; o++)
        memcpy(out + o * size * inner, pv + (o * p->shape[axis] + start) * inner,
               (size_t)(size * inner) * sizeof *out);
    return 0;
}

/* ---- linear algebra ---------------------------------------------------- */

/* out[r, o] = x[r, :] . w[o, :] + bias[o] for rows r; bias may be NULL. */
static void linear_rows(const double *x, int64_t rows, int64_t in_dim, const double *w,
                        const double *bias, int64_t out_dim, double *out)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t o = 0; o < out_dim; o++) {
            double acc = bias ? bias[o] : 0;
            for (int64_t i = 0; i < in_dim; i++)
                acc += x[r * in_dim + i] * w[o * in_dim + i];
            out[r * out_dim + o] = acc;
        }
    }
}

static int eval_dense(const interp *in, const ir_node *n, double *out)
{
    const ir_node *w = operand(in, n, 1);
    int64_t out_dim = w->shape[0], in_dim = w->shape[1];
    linear_rows(operand_vals(in, n, 0), ir_numel(n) / out_dim, in_dim, operand_vals(in, n, 1),
                operand_vals(in, n, 2), out_dim, out);
    return 0;
}

/* A matmul operand as a stack of matrices: batch dims, rows, cols.  A 1-D
 * operand is a row vector on the left and a column vector on the right. */
typedef struct matrix_stack {
    int batch_rank;
    const int64_t *batch_dims;
    int64_t rows, cols;
} matrix_stack;

static matrix_stack as_matrix_stack(const ir_node *x, bool left)
{
    matrix_stack m = {0, x->shape, 1, 1};
    if (x->rank == 1) {
        if (left)
            m.cols = x->shape[0];
        else
            m.rows = x->shape[0];
        return m;
    }
    m.batch_rank = x->rank - 2;
    m.rows = x->shape[x->rank - 2];
    m.cols = x->shape[x->rank - 1];
    return m;
}

/* torch.matmul: batch dims broadcast; the dims a 1-D operand added are
 * dropped from the result, which leaves its row-major layout unchanged. */
static int eval_matmul(const interp *in, const ir_node *n, double *out)
{
    matrix_stack a = as_matrix_stack(operand(in, n, 0), true);
    matrix_stack b = as_matrix_stack(operand(in, n, 1), false);
    const double *av = operand_vals(in, n, 0), *bv = operand_vals(in, n, 1);
    int batch_rank = a.batch_rank > b.batch_rank ? a.batch_rank : b.batch_rank;
    int64_t batch_shape[IR_MAX_RANK], a_strides[IR_MAX_RANK], b_strides[IR_MAX_RANK];
    for (int d = 0; d < batch_rank; d++) {
        int da = d - (batch_rank - a.batch_rank), db = d - (batch_rank - b.batch_rank);
        int64_t size_a = da >= 0 ? a.batch_dims[da] : 1, size_b = db >= 0 ? b.batch_dims[db] : 1;
        batch_shape[d] = size_a > size_b ? size_a : size_b;
    }
    broadcast_strides(a.batch_dims, a.batch_rank, batch_rank, a.rows * a.cols, a_strides);
    broadcast_strides(b.batch_dims, b.batch_rank, batch_rank, b.rows * b.cols, b_strides);
    int64_t batches = dims_product(batch_shape, 0, batch_rank), m = a.rows, k = a.cols, cols = b.cols;
    if (b.rows != k || batches * m * cols != ir_numel(n))
        return -1;
    for (int64_t t = 0; t < batches; t++) {
        const double *at = av + broadcast_offset(t, batch_shape, batch_rank, a_strides);
        const double *bt = bv + broadcast_offset(t, batch_shape, batch_rank, b_strides);
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < cols; j++) {
                double acc = 0;
                for (int64_t p = 0; p < k; p++)
                    acc += at[i * k + p] * bt[p * cols + j];
                out[(t * m + i) * cols + j] = acc;
            }
        }
    }
    return 0;
}

/* ---- normalisation ------------------------------------------------------ */

static int eval_layernorm(const interp *in, const ir_node *n, double *out)
{
    const double *x = operand_vals(in, n, 0), *w = operand_vals(in, n, 1);
    const double *bias = operand_vals(in, n, 2);
    int64_t d = n->shape[n->rank - 1], rows = ir_numel(n) / d;
    for (int64_t r = 0; r < rows; r++) {
        const double *row = x + r * d;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < d; i++)
            mean += row[i];
        mean /= (double)d;
        for (int64_t i = 0; i < d; i++)
            var += (row[i] - mean) * (row[i] - mean);
        var /= (double)d;
        double inv_std = 1 / sqrt(var + n->attrs.eps);
        for (int64_t i = 0; i < d; i++)
            out[r * d + i] = (row[i] - mean) * inv_std * w[i] + bias[i];
    }
    return 0;
}

/* torch.nn.GroupNorm on [N, S..., C]: per sample and group, the mean and
 * biased variance over the positions and the group's C/groups channels. */
static int eval_groupnorm(const interp *in, const ir_node *n, double *out)
{
    const double *x = operand_vals(in, n, 0), *w = operand_vals(in, n, 1);
    const double *bias = operand_vals(in, n, 2);
    int64_t c = n->shape[n->rank - 1], batch = n->shape[0], cg = c / n->attrs.groups;
    int64_t spatial = ir_numel(n) / batch / c;
    double count = (double)(spatial * cg);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t g = 0; g < n->attrs.groups; g++) {
            int64_t base = b * spatial * c + g * cg;
            double mean = 0, var = 0;
            for (int64_t s = 0; s < spatial; s++)
                for (int64_t i = 0; i < cg; i++) mean += x[base + s * c + i];
            mean /= count;
            for (int64_t s = 0; s < spatial; s++)
                for (int64_t i = 0; i < cg; i++)
                    var += (x[base + s * c + i] - mean) * (x[base + s * c + i] - mean);
            double inv_std = 1 / sqrt(var / count + n->attrs.eps);
            for (int64_t s = 0; s < spatial; s++)
                for (int64_t i = 0; i < cg; i++)
                    out[base + s * c + i] = (x[base + s * c + i] - mean) * inv_std *
                                            (w ? w[g * cg + i] : 1) + (bias ? bias[g * cg + i] : 0);
        }
    return 0;
}

static int eval_batchnorm(const interp *in, const ir_node *n, double *out)
{
    const double *x = operand_vals(in, n, 0), *w = operand_vals(in, n, 1);
    const double *bias = operand_vals(in, n, 2), *mean = operand_vals(in, n, 3);
    const double *var = operand_vals(in, n, 4);
    int64_t c = n->shape[n->rank - 1];
    for (int64_t i = 0; i < ir_numel(n); i++) {
        int64_t ch = i % c;
        out[i] = (x[i] - mean[ch]) / sqrt(var[ch] + n->attrs.eps) * w[ch] + bias[ch];
    }
    return 0;
}

/* ---- convolution and pooling (NHWC) ------------------------------------- */

/* Input pixel (n, y, x) of an NHWC tensor, or NULL when (y, x) is padding. */
static const double *nhwc_pixel(const double *data, const int64_t *shape, int64_t batch,
                                int64_t y, int64_t x)
{
    if (y < 0 || y >= shape[1] || x < 0 || x >= shape[2])
        return NULL;
    return data + ((batch * shape[1] + y) * shape[2] + x) * shape[3];
}

/* One conv output value: channel oc at output pixel (b, oy, ox). */
static double conv_at(const ir_node *n, const ir_node *x, const double *xv, const ir_node *w,
                      const double *wv, int64_t b, int64_t oy, int64_t ox, int64_t oc)
{
    const ir_attrs *at = &n->attrs;
    int64_t in_per_group = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    int64_t out_per_group = w->shape[0] / at->groups;
    int64_t first_in = (oc / out_per_group) * in_per_group;
    double acc = 0;
    for (int64_t ky = 0; ky < kh; ky++) {
        for (int64_t kx = 0; kx < kw; kx++) {
            const double *pixel = nhwc_pixel(xv, x->shape, b,
                                             oy * at->stride[0] - at->pad[0] + ky * at->dilation[0],
                                             ox * at->stride[1] - at->pad[1] + kx * at->dilation[1]);
            if (!pixel)
                continue;
            for (int64_t ic = 0; ic < in_per_group; ic++)
                acc += pixel[first_in + ic] * wv[((oc * in_per_group + ic) * kh + ky) * kw + kx];
        }
    }
    return acc;
}

static int eval_conv(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0), *w = operand(in, n, 1);
    const double *xv = operand_vals(in, n, 0), *wv = operand_vals(in, n, 1);
    const double *bias = operand_vals(in, n, 2);
    int64_t oh = n->shape[1], ow = n->shape[2], oc_count = n->shape[3];
    for (int64_t b = 0; b < n->shape[0]; b++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t oc = 0; oc < oc_count; oc++)
                    out[((b * oh + oy) * ow + ox) * oc_count + oc] =
                        (bias ? bias[oc] : 0) + conv_at(n, x, xv, w, wv, b, oy, ox, oc);
    return 0;
}

/* One pooled value: channel ch of the window at output pixel (b, oy, ox).
 * Padding is -inf for max; for mean it is zero and counted in the divisor. */
static double pool_at(const ir_node *n, const ir_node *x, const double *xv, int64_t b,
                      int64_t oy, int64_t ox, int64_t ch)
{
    const ir_attrs *at = &n->attrs;
    bool is_max = n->op == IR_OP_maxpool;
    double acc = is_max ? -INFINITY : 0;
    int64_t y0 = oy * at->stride[0] - at->pad[0], x0 = ox * at->stride[1] - at->pad[1];
    int64_t counted = 0, rows = 0, cols = 0;
    for (int ky = 0; ky < at->kernel[0]; ky++) {
        /* the padded area a mean divides by ends before ceil mode's extra rows */
        rows += y0 + ky < x->shape[1] + at->pad[2] - at->ceil_extra[0];
        for (int kx = 0; kx < at->kernel[1]; kx++) {
            cols += ky == 0 && x0 + kx < x->shape[2] + at->pad[3] - at->ceil_extra[1];
            const double *pixel = nhwc_pixel(xv, x->shape, b, y0 + ky, x0 + kx);
            if (!pixel)
                continue;
            double v = pixel[ch];
            counted++;
            acc = !is_max ? acc + v : (v > acc || isnan(v)) ? v : acc;
        }
    }
    return is_max ? acc : acc / (double)(at->exclude_pad ? counted : rows * cols);
}

static int eval_pool(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0);
    const double *xv = operand_vals(in, n, 0);
    int64_t oh = n->shape[1], ow = n->shape[2], c = n->shape[3];
    for (int64_t b = 0; b < n->shape[0]; b++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t ch = 0; ch < c; ch++)
                    out[((b * oh + oy) * ow + ox) * c + ch] = pool_at(n, x, xv, b, oy, ox, ch);
    return 0;
}

/* ---- backward kernels of the training graph (pass_grad) ------------------- */

/* dW of conv attrs over x = operand 1 and dy = operand 0: every output pixel's
 * dy times the input pixel each weight tap read (conv_at's walk). */
static int eval_conv_grad_weight(const interp *in, const ir_node *n, double *out)
{
    const ir_node *dyn = operand(in, n, 0), *x = operand(in, n, 1);
    const double *dy = operand_vals(in, n, 0), *xv = operand_vals(in, n, 1);
    const ir_attrs *at = &n->attrs;
    const int64_t oc = n->shape[0], icg = n->shape[1], kh = n->shape[2], kw = n->shape[3];
    const int64_t ocg = oc / at->groups, oh = dyn->shape[1], ow = dyn->shape[2];
    memset(out, 0, (size_t)ir_numel(n) * sizeof *out);
    for (int64_t b = 0; b < dyn->shape[0]; b++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t ky = 0; ky < kh; ky++)
                    for (int64_t kx = 0; kx < kw; kx++) {
                        const double *pixel = nhwc_pixel(xv, x->shape, b,
                                                         oy * at->stride[0] - at->pad[0] + ky * at->dilation[0],
                                                         ox * at->stride[1] - at->pad[1] + kx * at->dilation[1]);
                        if (!pixel) continue;
                        for (int64_t o = 0; o < oc; o++) {
                            double g = dy[((b * oh + oy) * ow + ox) * oc + o];
                            const double *xg = pixel + (o / ocg) * icg;
                            for (int64_t ic = 0; ic < icg; ic++)
                                out[((o * icg + ic) * kh + ky) * kw + kx] += g * xg[ic];
                        }
                    }
    return 0;
}

/* dx of the pool attrs.of_op: each window's dy to the first maximum (as
 * pool_at picks it), or spread over its counted pixels divided as pool_at. */
static int eval_pool_grad(const interp *in, const ir_node *n, double *out)
{
    const ir_node *dyn = operand(in, n, 0), *x = operand(in, n, 1);
    const double *dy = operand_vals(in, n, 0), *xv = operand_vals(in, n, 1);
    const ir_attrs *at = &n->attrs;
    const bool is_max = at->of_op == IR_OP_maxpool;
    const int64_t oh = dyn->shape[1], ow = dyn->shape[2], c = dyn->shape[3];
    memset(out, 0, (size_t)ir_numel(n) * sizeof *out);
    for (int64_t b = 0; b < dyn->shape[0]; b++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t ch = 0; ch < c; ch++) {
                    const int64_t y0 = oy * at->stride[0] - at->pad[0], x0 = ox * at->stride[1] - at->pad[1];
                    int64_t best = -1, counted = 0, rows = 0, cols = 0;
                    double acc = -INFINITY;
                    for (int ky = 0; ky < at->kernel[0]; ky++) {
                        rows += y0 + ky < x->shape[1] + at->pad[2] - at->ceil_extra[0];
                        for (int kx = 0; kx < at->kernel[1]; kx++) {
                            cols += ky == 0 && x0 + kx < x->shape[2] + at->pad[3] - at->ceil_extra[1];
                            const double *pixel = nhwc_pixel(xv, x->shape, b, y0 + ky, x0 + kx);
                            if (!pixel) continue;
                            counted++;
                            if (is_max && (best < 0 || pixel[ch] > acc || isnan(pixel[ch])))
                                acc = pixel[ch], best = pixel + ch - xv;
                        }
                    }
                    const double g = dy[((b * oh + oy) * ow + ox) * c + ch];
                    if (is_max) {
                        if (best >= 0) out[best] += g;
                        continue;
                    }
                    const double share = g / (double)(at->exclude_pad ? counted : rows * cols);
                    for (int ky = 0; ky < at->kernel[0]; ky++)
                        for (int kx = 0; kx < at->kernel[1]; kx++) {
                            const double *pixel = nhwc_pixel(xv, x->shape, b, y0 + ky, x0 + kx);
                            if (pixel) out[pixel + ch - xv] += share;
                        }
                }
    return 0;
}

/* The slice's inverse: zeros, dy written at the slice's elements (eval_slice's walk). */
static int eval_slice_grad(const interp *in, const ir_node *n, double *out)
{
    const ir_node *dyn = operand(in, n, 0);
    const double *dy = operand_vals(in, n, 0);
    int64_t strides[IR_MAX_RANK];
    const int64_t offset = ir_slice_strides(&n->attrs, n->shape, n->rank, strides);
    memset(out, 0, (size_t)ir_numel(n) * sizeof *out);
    for (int64_t i = 0; i < ir_numel(dyn); i++)
        out[offset + broadcast_offset(i, dyn->shape, dyn->rank, strides)] += dy[i];
    return 0;
}

/* The table's gradient: row idx[i] += dy[i, :]. */
static int eval_embedding_grad(const interp *in, const ir_node *n, double *out)
{
    const ir_node *idx = operand(in, n, 0);
    const double *iv = operand_vals(in, n, 0), *dy = operand_vals(in, n, 1);
    const int64_t vocab = n->shape[0], dim = n->shape[1];
    memset(out, 0, (size_t)ir_numel(n) * sizeof *out);
    for (int64_t i = 0; i < ir_numel(idx); i++) {
        if (!(iv[i] >= 0 && iv[i] < (double)vocab))
            return -1;
        for (int64_t k = 0; k < dim; k++)
            out[(int64_t)iv[i] * dim + k] += dy[i * dim + k];
    }
    return 0;
}

/* x * keep / (1 - p) with the counter's (seed, step); no counter: x. */
static int eval_dropout(const interp *in, const ir_node *n, double *out)
{
    const double *x = operand_vals(in, n, 0), *counter = operand_vals(in, n, 1);
    const double p = n->attrs.alpha;
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = !counter ? x[i]
                 : axrt_dropout_keep((uint64_t)counter[0], (uint64_t)n->attrs.index, (uint64_t)counter[1],
                                     (uint64_t)i, p) ? x[i] / (1 - p) : 0;
    return 0;
}

/* torch.nn.ConvTranspose2d on NHWC: every input pixel scattered through the
 * kernel, weight [in, out/groups, kh, kw]. */
static int eval_conv_transpose(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0), *w = operand(in, n, 1);
    const double *xv = operand_vals(in, n, 0), *wv = operand_vals(in, n, 1), *bias = operand_vals(in, n, 2);
    const ir_attrs *a = &n->attrs;
    int64_t h = x->shape[1], wd = x->shape[2], c = x->shape[3], oh = n->shape[1], ow = n->shape[2];
    int64_t oc = n->shape[3], kh = w->shape[2], kw = w->shape[3], cg = c / a->groups, og = oc / a->groups;
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = bias ? bias[i % oc] : 0;
    for (int64_t b = 0; b < x->shape[0]; b++)
        for (int64_t iy = 0; iy < h; iy++)
            for (int64_t ix = 0; ix < wd; ix++)
                for (int64_t ci = 0; ci < c; ci++) {
                    double v = xv[((b * h + iy) * wd + ix) * c + ci];
                    int64_t g = ci / cg;
                    for (int64_t ky = 0; ky < kh; ky++)
                        for (int64_t kx = 0; kx < kw; kx++) {
                            int64_t oy = iy * a->stride[0] - a->pad[0] + ky * a->dilation[0];
                            int64_t ox = ix * a->stride[1] - a->pad[1] + kx * a->dilation[1];
                            if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                            for (int64_t o = 0; o < og; o++)
                                out[((b * oh + oy) * ow + ox) * oc + g * og + o] +=
                                    v * wv[((ci * og + o) * kh + ky) * kw + kx];
                        }
                }
    return 0;
}

static int eval_upsample(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0);
    const double *xv = operand_vals(in, n, 0);
    int64_t h = x->shape[1], w = x->shape[2], c = x->shape[3], oh = n->shape[1], ow = n->shape[2];
    for (int64_t b = 0; b < n->shape[0]; b++)
        for (int64_t oy = 0; oy < oh; oy++) {
            int64_t y0, y1, x0, x1;
            double fy, fx;
            ir_upsample_source(oy, h, n->attrs.scale[0], n->attrs.mode, &y0, &y1, &fy);
            for (int64_t ox = 0; ox < ow; ox++) {
                ir_upsample_source(ox, w, n->attrs.scale[1], n->attrs.mode, &x0, &x1, &fx);
                const double *r0 = xv + (b * h + y0) * w * c, *r1 = xv + (b * h + y1) * w * c;
                for (int64_t ch = 0; ch < c; ch++) {
                    double top = r0[x0 * c + ch] * (1 - fx) + r0[x1 * c + ch] * fx;
                    double bottom = r1[x0 * c + ch] * (1 - fx) + r1[x1 * c + ch] * fx;
                    out[((b * oh + oy) * ow + ox) * c + ch] =
                        n->attrs.mode == IR_UPSAMPLE_NEAREST ? r0[x0 * c + ch] : top * (1 - fy) + bottom * fy;
                }
            }
        }
    return 0;
}

static int eval_globalpool(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0);
    const double *xv = operand_vals(in, n, 0);
    int64_t hw = x->shape[1] * x->shape[2], c = x->shape[3];
    for (int64_t b = 0; b < x->shape[0]; b++) {
        for (int64_t ch = 0; ch < c; ch++) {
            double acc = 0;
            for (int64_t p = 0; p < hw; p++)
                acc += xv[(b * hw + p) * c + ch];
            out[b * c + ch] = acc / (double)hw;
        }
    }
    return 0;
}

/* ---- attention ----------------------------------------------------------- */

/* Shapes of one mha node and its projected q, k, v ([batch, len, d]). */
typedef struct mha_dims {
    int64_t batch, lq, lk, d, heads, head_dim;
    bool causal;
} mha_dims;

/* One head of one batch: ctx[i, head cols] = softmax(Q Kᵀ/√hd + mask) V. */
static void attend_head(const mha_dims *m, const double *q, const double *k, const double *v,
                        const double *key_mask, double *scores, double *ctx)
{
    double scale = 1 / sqrt((double)m->head_dim);
    for (int64_t i = 0; i < m->lq; i++) {
        int64_t visible = m->causal ? (i + 1 < m->lk ? i + 1 : m->lk) : m->lk;
        double max = -INFINITY, total = 0;
        for (int64_t j = 0; j < visible; j++) {
            double dot = 0;
            for (int64_t c = 0; c < m->head_dim; c++)
                dot += q[i * m->d + c] * k[j * m->d + c];
            scores[j] = key_mask && key_mask[j] == 0 ? -INFINITY : dot * scale;
            max = fmax(max, scores[j]);
        }
        for (int64_t j = 0; j < visible; j++)
            total += scores[j] = exp(scores[j] - max);
        for (int64_t c = 0; c < m->head_dim; c++) {
            double acc = 0;
            for (int64_t j = 0; j < visible; j++)
                acc += scores[j] * v[j * m->d + c];
            ctx[i * m->d + c] = acc / total;
        }
    }
}

/* ---- recurrent layers --------------------------------------------------- */

/* One step of a torch.nn.GRU cell over the gate pre-activations gi = W_ih x
 * + b_ih and gh = W_hh h + b_hh (r, z, n of h each): h becomes h'.  Without
 * linear_before_reset (ONNX's default) the n gate sees W_hn (r * h) + b_hn,
 * which needs w_hh_n and b_hh_n. */
static void gru_step(const double *gi, const double *gh, int64_t hid, bool lbr,
                     const double *w_hh, const double *b_hh, double *h, double *rh)
{
    for (int64_t j = 0; j < hid; j++) rh[j] = sigmoid(gi[j] + gh[j]) * h[j];
    for (int64_t j = 0; j < hid; j++) {
        double r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[hid + j] + gh[hid + j]), hn;
        if (lbr) {
            hn = r * gh[2 * hid + j];
        } else {
            hn = b_hh ? b_hh[2 * hid + j] : 0;
            for (int64_t k = 0; k < hid; k++) hn += w_hh[(2 * hid + j) * hid + k] * rh[k];
        }
        double nv = tanh(gi[2 * hid + j] + hn);
        rh[hid + j] = (1 - z) * nv + z * h[j];
    }
    memcpy(h, rh + hid, (size_t)hid * sizeof *h);
}

/* One step of a torch.nn.LSTM cell: gates i, f, g, o in gi + gh. */
static void lstm_step(const double *gi, const double *gh, int64_t hid, double *h, double *c)
{
    for (int64_t j = 0; j < hid; j++) {
        double ig = sigmoid(gi[j] + gh[j]), fg = sigmoid(gi[hid + j] + gh[hid + j]);
        double gg = tanh(gi[2 * hid + j] + gh[2 * hid + j]), og = sigmoid(gi[3 * hid + j] + gh[3 * hid + j]);
        c[j] = fg * c[j] + ig * gg;
        h[j] = og * tanh(c[j]);
    }
}

/* gru / lstm (ops.def): per batch element, the state runs over the steps in
 * order (or reversed) and each step's h is the output row. */
static int eval_rnn(const interp *in, const ir_node *n, double *out)
{
    const ir_node *x = operand(in, n, 0);
    const bool lstm = n->op == IR_OP_lstm;
    const int64_t batch = x->shape[0], len = x->shape[1], idim = x->shape[2], hid = n->shape[2];
    const int64_t gates = (lstm ? 4 : 3) * hid;
    const double *xv = operand_vals(in, n, 0), *w_ih = operand_vals(in, n, 1), *w_hh = operand_vals(in, n, 2);
    const double *b_ih = operand_vals(in, n, 3), *b_hh = operand_vals(in, n, 4), *h0 = operand_vals(in, n, 5);
    const double *c0 = lstm ? operand_vals(in, n, 6) : NULL;
    double *buf = malloc((size_t)(2 * gates + 4 * hid) * sizeof *buf);
    if (!buf)
        return -1;
    double *gi = buf, *gh = gi + gates, *h = gh + gates, *c = h + hid, *tmp = c + hid;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t j = 0; j < hid; j++) {
            h[j] = h0 ? h0[b * hid + j] : 0;
            c[j] = c0 ? c0[b * hid + j] : 0;
        }
        for (int64_t s = 0; s < len; s++) {
            int64_t t = n->attrs.reverse ? len - 1 - s : s;
            linear_rows(xv + (b * len + t) * idim, 1, idim, w_ih, b_ih, gates, gi);
            linear_rows(h, 1, hid, w_hh, b_hh, gates, gh);
            if (lstm)
                lstm_step(gi, gh, hid, h, c);
            else
                gru_step(gi, gh, hid, n->attrs.linear_before_reset, w_hh, b_hh, h, tmp);
            memcpy(out + (b * len + t) * hid, n->attrs.cell ? c : h, (size_t)hid * sizeof *h);
        }
    }
    free(buf);
    return 0;
}

/* torch.nn.MultiheadAttention(batch_first=True): project q, k, v with the
 * three row blocks of in_proj, attend per head, concatenate, out_proj. */
static int eval_mha(const interp *in, const ir_node *n, double *out)
{
    const ir_node *q = operand(in, n, 0), *k = operand(in, n, 1);
    mha_dims m = {q->shape[0], q->shape[1], k->shape[1], q->shape[2], n->attrs.heads, 0,
                  n->attrs.causal};
    if (m.heads <= 0 || m.d % m.heads)
        return -1;
    m.head_dim = m.d / m.heads;
    const double *in_w = operand_vals(in, n, 3), *in_b = operand_vals(in, n, 4);
    const double *key_mask = n->nsrc > 7 ? operand_vals(in, n, 7) : NULL;
    size_t q_elems = (size_t)(m.batch * m.lq * m.d), kv_elems = (size_t)(m.batch * m.lk * m.d);
    double *qp = malloc(q_elems * sizeof *qp), *ctx = malloc(q_elems * sizeof *ctx);
    double *kp = malloc(kv_elems * sizeof *kp), *vp = malloc(kv_elems * sizeof *vp);
    double *scores = malloc((size_t)m.lk * sizeof *scores);
    int status = qp && ctx && kp && vp && scores ? 0 : -1;
    if (status == 0) {
        linear_rows(operand_vals(in, n, 0), m.batch * m.lq, m.d, in_w, in_b, m.d, qp);
        linear_rows(operand_vals(in, n, 1), m.batch * m.lk, m.d, in_w + m.d * m.d,
                    in_b ? in_b + m.d : NULL, m.d, kp);
        linear_rows(operand_vals(in, n, 2), m.batch * m.lk, m.d, in_w + 2 * m.d * m.d,
                    in_b ? in_b + 2 * m.d : NULL, m.d, vp);
        for (int64_t b = 0; b < m.batch; b++)
            for (int64_t h = 0; h < m.heads; h++)
                attend_head(&m, qp + b * m.lq * m.d + h * m.head_dim,
                            kp + b * m.lk * m.d + h * m.head_dim,
                            vp + b * m.lk * m.d + h * m.head_dim, key_mask ? key_mask + b * m.lk : NULL,
                            scores,
                            ctx + b * m.lq * m.d + h * m.head_dim);
        linear_rows(ctx, m.batch * m.lq, m.d, operand_vals(in, n, 5), operand_vals(in, n, 6), m.d,
                    out);
    }
    free(qp);
    free(ctx);
    free(kp);
    free(vp);
    free(scores);
    return status;
}

/* ---- embedding ------------------------------------------------------------ */

static int eval_embedding(const interp *in, const ir_node *n, double *out)
{
    const ir_node *idx = operand(in, n, 0), *w = operand(in, n, 1);
    const double *iv = operand_vals(in, n, 0), *wv = operand_vals(in, n, 1);
    int64_t vocab = w->shape[0], dim = w->shape[1];
    for (int64_t i = 0; i < ir_numel(idx); i++) {
        /* An index outside the table is the caller's error; the CLI reports it. */
        if (!(iv[i] >= 0 && iv[i] < (double)vocab))
            return -1;
        memcpy(out + i * dim, wv + (int64_t)iv[i] * dim, (size_t)dim * sizeof *out);
    }
    return 0;
}

/* ---- driver ---------------------------------------------------------------- */

/* Widens n elements of dtype at data into out. */
static void load_all(const void *data, axrt_dtype dtype, int64_t count, double *out)
{
    for (int64_t i = 0; i < count; i++)
        out[i] = load_element(data, dtype, i);
}

/* Sources: the caller's inputs, the node's param data, its scalar. */
static int eval_input(const interp *in, const ir_node *n, double *out)
{
    const int id = (int)(n - in->g->nodes);
    for (int i = 0; i < in->g->ninputs; i++) {
        if (in->g->inputs[i] == id) {
            load_all(in->inputs[i], n->dtype, ir_numel(n), out);
            return 0;
        }
    }
    return -1;
}

static int eval_param(const interp *in, const ir_node *n, double *out)
{
    (void)in;
    if (!n->data)
        return -1;
    load_all(n->data, n->dtype, ir_numel(n), out);
    return 0;
}

static int eval_scalar(const interp *in, const ir_node *n, double *out)
{
    (void)in;
    out[0] = n->attrs.scalar;
    return 0;
}

/* The dispatch, generated from ops.def's family column: eval_<family>. */
typedef int eval_fn(const interp *in, const ir_node *n, double *out);
static eval_fn *const eval_fns[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) [IR_OP_##name] = eval_##family,
#include "ops.def"
#undef OP
};

/* Computes node id into out (ir_numel elements). */
static int eval_node(const interp *in, int id, double *out)
{
    const ir_node *n = &in->g->nodes[id];
    int rc = eval_fns[n->op](in, n, out);
    if (n->dtype == AXRT_F16 || n->dtype == AXRT_BF16)
        for (int64_t i = 0; rc == 0 && ir_has_results(n->op) == 0 && i < ir_numel(n); i++)
            out[i] = round_to_dtype(out[i], n->dtype);
    return rc;
}

/* The fused epilogue: the residual operand (attrs.residual) added, then
 * attrs.act (a UNARY op) applied to the node's result. */
static int apply_epilogue(const interp *in, const ir_node *n, double *out)
{
    if (n->attrs.residual != IR_NONE) {
        const double *r = operand_vals(in, n, n->attrs.residual);
        for (int64_t i = 0; i < ir_numel(n); i++)
            out[i] += r[i];
    }
    if (n->attrs.act == IR_NONE)
        return 0;
    if (n->attrs.act < 0 || n->attrs.act >= IR_OP_COUNT || ir_ops[n->attrs.act].kind != IR_UNARY)
        return -1;
    for (int64_t i = 0; i < ir_numel(n); i++)
        out[i] = unary_value((ir_op)n->attrs.act, n->attrs.alpha, out[i]);
    return 0;
}

/* last_use[id] = the highest live node reading id; outputs live to the end. */
static void find_last_uses(const ir_graph *g, int *last_use)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    for (int id = 0; id < g->nnodes; id++)
        last_use[id] = ir_use_is_output(&u, id) ? g->nnodes : u.last[id];
    ir_use_free(&u);
}

/* Frees every value whose last reader is node id. */
static void release_operands(interp *in, int id)
{
    const ir_node *n = &in->g->nodes[id];
    for (int k = 0; k < n->nsrc; k++) {
        int s = n->src[k];
        if (s != IR_NONE && in->last_use[s] == id) {
            free(in->vals[s]);
            in->vals[s] = NULL;
        }
    }
}

static int evaluate_all(interp *in)
{
    for (int id = 0; id < in->g->nnodes; id++) {
        const ir_node *n = &in->g->nodes[id];
        if (n->dead || in->last_use[id] < 0)
            continue;
        int64_t count = ir_numel(n);
        in->vals[id] = malloc((size_t)(count > 0 ? count : 1) * sizeof(double));
        if (!in->vals[id] || eval_node(in, id, in->vals[id]) != 0 ||
            apply_epilogue(in, n, in->vals[id]) != 0)
            return -1;
        if (in->observe)
            in->observe(in->user, id, in->vals[id], count);
        release_operands(in, id);
    }
    return 0;
}

int ir_interp_run(const ir_graph *g, const void *const *inputs, void *const *outputs)
{
    return ir_interp_run_observed(g, inputs, outputs, NULL, NULL);
}

int ir_interp_run_observed(const ir_graph *g, const void *const *inputs, void *const *outputs,
                           ir_interp_observer *observe, void *user)
{
    interp in = {g, inputs, calloc((size_t)g->nnodes + 1, sizeof(double *)),
                 malloc(((size_t)g->nnodes + 1) * sizeof(int)), observe, user};
    int status = in.vals && in.last_use ? 0 : -1;
    if (status == 0) {
        find_last_uses(g, in.last_use);
        status = evaluate_all(&in);
    }
    for (int i = 0; i < g->noutputs && status == 0; i++) {
        const ir_node *n = &g->nodes[g->outputs[i]];
        for (int64_t e = 0; e < ir_numel(n); e++)
            store_element(outputs[i], n->dtype, e, in.vals[g->outputs[i]][e]);
    }
    for (int id = 0; in.vals && id < g->nnodes; id++)
        free(in.vals[id]);
    free(in.vals);
    free(in.last_use);
    return status;
}
