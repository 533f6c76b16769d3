/* axrt_unary.h — each elementwise activation's formula, written once.
 * AXRT_UNARY_<name>(v, T, A): v the argument (an expression without side
 * effects), T the compute type (the kernel template passes its ACC), A the
 * alpha parameter (elu, leaky_relu); MATH_EXP, MATH_TANH, ..., MATH_FN(f) are the
 * includer's libm functions for that type.  The
 * runtime's portable kernels (axrt_kernels.inc) expand these, and the C code
 * generator stringifies the same rows for its fused loops (codegen/cg_c.c),
 * so the two cannot drift.  Comparisons are written so that NaN propagates,
 * as in PyTorch.  The reference interpreter keeps its own independent copy
 * (ir/ir_interp.c) on purpose.  One row per UNARY_OP row of ir/ops.def. */
#ifndef AXRT_UNARY_H
#define AXRT_UNARY_H

#define AXRT_UNARY_relu(v, T, A) ((v) < (T)0 ? (T)0 : (v))
#define AXRT_UNARY_relu6(v, T, A) ((v) < (T)0 ? (T)0 : ((v) > (T)6 ? (T)6 : (v)))
#define AXRT_UNARY_sigmoid(v, T, A) ((T)1 / ((T)1 + MATH_EXP(-(v))))
#define AXRT_UNARY_tanh(v, T, A) MATH_TANH(v)
#define AXRT_UNARY_swish(v, T, A) ((v) / ((T)1 + MATH_EXP(-(v))))
#define AXRT_UNARY_gelu(v, T, A) ((T)0.5 * (v) * ((T)1 + MATH_ERF((v) * (T)0.70710678118654752440)))
#define AXRT_UNARY_gelu_tanh(v, T, A)                                                      \
    ((T)0.5 * (v) * ((T)1 + MATH_TANH((T)0.79788456080286535588 * ((v) + (T)0.044715 * (v) * (v) * (v)))))
/* torch.nn.Softplus(beta=1, threshold=20): linear above the threshold. */
#define AXRT_UNARY_softplus(v, T, A) ((v) > (T)20 ? (v) : MATH_LOG1P(MATH_EXP(v)))
#define AXRT_UNARY_elu(v, T, A) ((v) > (T)0 ? (v) : (A) * MATH_EXPM1(v))
#define AXRT_UNARY_leaky_relu(v, T, A) ((v) < (T)0 ? (A) * (v) : (v))
#define AXRT_UNARY_exp(v, T, A) MATH_EXP(v)
#define AXRT_UNARY_log(v, T, A) MATH_LOG(v)
#define AXRT_UNARY_sqrt(v, T, A) MATH_SQRT(v)
#define AXRT_UNARY_abs(v, T, A) MATH_FABS(v)
#define AXRT_UNARY_neg(v, T, A) (-(v))
#define AXRT_UNARY_erf(v, T, A) MATH_ERF(v)
/* torch.nn.Hardswish / Hardsigmoid: x * relu6(x + 3) / 6, relu6(x + 3) / 6. */
#define AXRT_UNARY_hardswish(v, T, A)                                                      \
    ((v) <= (T)-3 ? (T)0 : ((v) >= (T)3 ? (v) : (v) * ((v) + (T)3) / (T)6))
#define AXRT_UNARY_hardsigmoid(v, T, A)                                                    \
    ((v) <= (T)-3 ? (T)0 : ((v) >= (T)3 ? (T)1 : ((v) + (T)3) / (T)6))
/* torch.nn.Mish: x * tanh(softplus(x)), softplus linear above 20 as torch's. */
#define AXRT_UNARY_mish(v, T, A) ((v) * MATH_TANH((v) > (T)20 ? (v) : MATH_LOG1P(MATH_EXP(v))))
/* torch.nn.SELU with its fixed scale and alpha. */
#define AXRT_UNARY_selu(v, T, A)                                                           \
    ((T)1.0507009873554804934 * ((v) > (T)0 ? (v) : (T)1.6732632423543772848 * MATH_EXPM1(v)))
#define AXRT_UNARY_reciprocal(v, T, A) ((T)1 / (v))
/* Plain libm, one call each (MATH_FN(f): f for the type); round is rint,
 * halves to even as torch.round and ONNX Round. */
#define AXRT_UNARY_sin(v, T, A) MATH_FN(sin)(v)
#define AXRT_UNARY_cos(v, T, A) MATH_FN(cos)(v)
#define AXRT_UNARY_tan(v, T, A) MATH_FN(tan)(v)
#define AXRT_UNARY_asin(v, T, A) MATH_FN(asin)(v)
#define AXRT_UNARY_acos(v, T, A) MATH_FN(acos)(v)
#define AXRT_UNARY_atan(v, T, A) MATH_FN(atan)(v)
#define AXRT_UNARY_sinh(v, T, A) MATH_FN(sinh)(v)
#define AXRT_UNARY_cosh(v, T, A) MATH_FN(cosh)(v)
#define AXRT_UNARY_asinh(v, T, A) MATH_FN(asinh)(v)
#define AXRT_UNARY_acosh(v, T, A) MATH_FN(acosh)(v)
#define AXRT_UNARY_atanh(v, T, A) MATH_FN(atanh)(v)
#define AXRT_UNARY_floor(v, T, A) MATH_FN(floor)(v)
#define AXRT_UNARY_ceil(v, T, A) MATH_FN(ceil)(v)
#define AXRT_UNARY_round(v, T, A) MATH_FN(rint)(v)
/* torch.sign: NaN stays NaN, zero stays zero. */
#define AXRT_UNARY_sign(v, T, A) ((v) > (T)0 ? (T)1 : ((v) < (T)0 ? (T)-1 : (v)))

/* Each activation's derivative f'(v), as PyTorch's autograd takes it, kinks
 * included (relu'(0) = 0, abs'(0) = 0): the C code generator stringifies
 * these for the backward's unary_grad loops (dy * f'(x)), the same way as
 * the AXRT_UNARY_ rows; the reference interpreter keeps its own copy
 * (ir/ir_interp.c deriv_<name>).  One row per UNARY_OP row of ir/ops.def. */
#define AXRT_DERIV_relu(v, T, A) ((v) > (T)0 ? (T)1 : (T)0)
#define AXRT_DERIV_relu6(v, T, A) ((v) > (T)0 && (v) < (T)6 ? (T)1 : (T)0)
#define AXRT_DERIV_sigmoid(v, T, A) (AXRT_UNARY_sigmoid(v, T, A) * ((T)1 - AXRT_UNARY_sigmoid(v, T, A)))
#define AXRT_DERIV_tanh(v, T, A) ((T)1 - MATH_TANH(v) * MATH_TANH(v))
#define AXRT_DERIV_swish(v, T, A) \
    (AXRT_UNARY_sigmoid(v, T, A) * ((T)1 + (v) * ((T)1 - AXRT_UNARY_sigmoid(v, T, A))))
#define AXRT_DERIV_gelu(v, T, A)                                                           \
    ((T)0.5 * ((T)1 + MATH_ERF((v) * (T)0.70710678118654752440)) +                        \
     (v) * MATH_EXP((T)-0.5 * (v) * (v)) * (T)0.39894228040143267794)
#define AXRT_DERIV_gelu_tanh(v, T, A)                                                      \
    ((T)0.5 * ((T)1 + MATH_TANH((T)0.79788456080286535588 * ((v) + (T)0.044715 * (v) * (v) * (v)))) + \
     (T)0.5 * (v) *                                                                        \
         ((T)1 - MATH_TANH((T)0.79788456080286535588 * ((v) + (T)0.044715 * (v) * (v) * (v))) *      \
                     MATH_TANH((T)0.79788456080286535588 * ((v) + (T)0.044715 * (v) * (v) * (v)))) * \
         (T)0.79788456080286535588 * ((T)1 + (T)0.134145 * (v) * (v)))
#define AXRT_DERIV_softplus(v, T, A) ((v) > (T)20 ? (T)1 : AXRT_UNARY_sigmoid(v, T, A))
#define AXRT_DERIV_elu(v, T, A) ((v) > (T)0 ? (T)1 : (A) * MATH_EXP(v))
#define AXRT_DERIV_leaky_relu(v, T, A) ((v) > (T)0 ? (T)1 : (A))
#define AXRT_DERIV_exp(v, T, A) MATH_EXP(v)
#define AXRT_DERIV_log(v, T, A) ((T)1 / (v))
#define AXRT_DERIV_sqrt(v, T, A) ((T)0.5 / MATH_SQRT(v))
#define AXRT_DERIV_abs(v, T, A) ((v) > (T)0 ? (T)1 : ((v) < (T)0 ? (T)-1 : (T)0))
#define AXRT_DERIV_neg(v, T, A) ((T)-1)
#define AXRT_DERIV_erf(v, T, A) ((T)1.12837916709551257390 * MATH_EXP(-(v) * (v)))
#define AXRT_DERIV_hardswish(v, T, A) \
    ((v) < (T)-3 ? (T)0 : ((v) <= (T)3 ? (v) / (T)3 + (T)0.5 : (T)1))
#define AXRT_DERIV_hardsigmoid(v, T, A) ((v) > (T)-3 && (v) < (T)3 ? (T)1 / (T)6 : (T)0)
#define AXRT_DERIV_mish(v, T, A)                                                           \
    (MATH_TANH(AXRT_UNARY_softplus(v, T, A)) +                                             \
     (v) * AXRT_UNARY_sigmoid(v, T, A) *                                                   \
         ((T)1 - MATH_TANH(AXRT_UNARY_softplus(v, T, A)) * MATH_TANH(AXRT_UNARY_softplus(v, T, A))))
#define AXRT_DERIV_selu(v, T, A) \
    ((T)1.0507009873554804934 * ((v) > (T)0 ? (T)1 : (T)1.6732632423543772848 * MATH_EXP(v)))
#define AXRT_DERIV_reciprocal(v, T, A) ((T)-1 / ((v) * (v)))
#define AXRT_DERIV_sin(v, T, A) MATH_FN(cos)(v)
#define AXRT_DERIV_cos(v, T, A) (-MATH_FN(sin)(v))
#define AXRT_DERIV_tan(v, T, A) ((T)1 / (MATH_FN(cos)(v) * MATH_FN(cos)(v)))
#define AXRT_DERIV_asin(v, T, A) ((T)1 / MATH_SQRT((T)1 - (v) * (v)))
#define AXRT_DERIV_acos(v, T, A) ((T)-1 / MATH_SQRT((T)1 - (v) * (v)))
#define AXRT_DERIV_atan(v, T, A) ((T)1 / ((T)1 + (v) * (v)))
#define AXRT_DERIV_sinh(v, T, A) MATH_FN(cosh)(v)
#define AXRT_DERIV_cosh(v, T, A) MATH_FN(sinh)(v)
#define AXRT_DERIV_asinh(v, T, A) ((T)1 / MATH_SQRT((v) * (v) + (T)1))
#define AXRT_DERIV_acosh(v, T, A) ((T)1 / MATH_SQRT((v) * (v) - (T)1))
#define AXRT_DERIV_atanh(v, T, A) ((T)1 / ((T)1 - (v) * (v)))
/* Step functions: zero almost everywhere, as autograd takes them. */
#define AXRT_DERIV_floor(v, T, A) ((T)0)
#define AXRT_DERIV_ceil(v, T, A) ((T)0)
#define AXRT_DERIV_round(v, T, A) ((T)0)
#define AXRT_DERIV_sign(v, T, A) ((T)0)

/* The binary ops' formulas (BINARY_OP rows): a, b are ACC values. */
#define AXRT_BINARY_add(a, b) ((a) + (b))
#define AXRT_BINARY_sub(a, b) ((a) - (b))
#define AXRT_BINARY_mul(a, b) ((a) * (b))
#define AXRT_BINARY_div(a, b) ((a) / (b))
#define AXRT_BINARY_pow(a, b) MATH_FN(pow)(a, b)
/* torch.fmod, ONNX Mod with fmod=1: the remainder takes the dividend's sign. */
#define AXRT_BINARY_fmod(a, b) MATH_FN(fmod)(a, b)
/* torch.clamp_min/clamp_max and torch.maximum/minimum: the larger / smaller,
 * NaN when either is NaN (a NaN a is kept; a NaN b fails the comparison and
 * is taken).  C's fmax/fmin would drop a NaN for the other operand. */
#define AXRT_BINARY_clamp_min(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define AXRT_BINARY_clamp_max(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))
#define AXRT_BINARY_max(a, b) AXRT_BINARY_clamp_min(a, b)
#define AXRT_BINARY_min(a, b) AXRT_BINARY_clamp_max(a, b)

#endif
