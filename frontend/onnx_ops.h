/* onnx_ops.h — what the ONNX op handler files share: onnx_ops.c (the table
 * of handlers), onnx_ops_util.c (the helpers below) and one file per op
 * family (onnx_ops_shape.c, _elementwise.c, _layers.c, _norm.c, _rnn.c,
 * _resize.c).  A handler reads the current node (s->node) and defines its
 * outputs; false after a located error.  Only those files include this. */
#ifndef AX_ONNX_OPS_H
#define AX_ONNX_OPS_H

#include "onnx_internal.h"

/* Input i of the current node (NULL when absent; clears ok on a bad name)
 * and the count of inputs, in a handler whose state is s and flag ok. */
#define IN(i) ox_input(s, (i), &ok)
#define NIN ((int)s->node->n_input)

/* ---- onnx_ops_util.c: outputs, constant inputs, axes ---- */

/* Output i of the current node, defined now. */
ox_val *ox_def_out(ox_state *s, int i);
/* Output i is node (NHWC when nhwc); false when node is IR_NONE. */
bool ox_set_node(ox_state *s, int i, int node, bool nhwc);
/* Output i is constant c; false when c is NULL. */
bool ox_set_const(ox_state *s, int i, ox_const *c);
/* Every present input is a constant. */
bool ox_all_const(ox_state *s);
/* A new constant to fold into: NULL after a located error when it would
 * exceed OX_MAX_FOLD elements or a dimension is negative. */
ox_const *ox_fold_new(ox_state *s, bool is_int, int rank, const int64_t *shape);
/* Integer list from a constant input (at most max). */
int ox_const_ints(ox_state *s, ox_val *v, int64_t *out, int max);
/* A negative axis counted from the end, in place; out of range: an error. */
bool ox_norm_axis(ox_state *s, int64_t *axis, int rank);
/* n axes normalised in place for rank; one out of range or named twice is
 * an error (the axes of Pad, Resize, CenterCropPad). */
bool ox_norm_axes(ox_state *s, int64_t *axes, int n, int rank);
/* An int64 attribute value v narrowed to the IR's int when lo <= v <= hi
 * (checked before the narrowing: 2^32 + 1 must not become 1). */
bool ox_narrow_int(int64_t v, int lo, int hi, int *out);
/* The first element of constant v as an int64 (a located error when it has
 * none or is not an integer). */
bool ox_const_int0(ox_state *s, ox_val *v, int64_t *out);
/* The product of the rank dimensions of shape. */
int64_t ox_numel(const int64_t *shape, int rank);

/* ---- onnx_ops_util.c: IR building (IR_NONE in, IR_NONE out) ---- */

/* x reshaped to shape (rank 0 as [1]: the same bytes). */
int ox_reshape_to(ox_state *s, int x, const int64_t *shape, int rank);
/* ox_transpose of x by perm. */
int ox_transpose_perm(ox_state *s, int x, const int *perm, int rank);
/* x with axis moved last (perm into fwd), and the inverse into back. */
int ox_axis_last(ox_state *s, int x, int rank, int axis, int *back);
/* x[begin:end:step] along axis: one IR slice. */
int ox_slice_axis(ox_state *s, int x, int axis, int64_t begin, int64_t end, int64_t step);
/* y = x[..., idx, ...] along axis (idx: m indices in range): exact, an IR
 * slice when idx is a progression with a positive step, else a dense with a
 * one-hot weight [m, D]. */
int ox_select_axis(ox_state *s, int x, int axis, const int64_t *idx, int64_t m);
/* The unary IR op of x; the binary IR op of a and b. */
int ox_un(ox_state *s, ir_op op, int x);
int ox_bin(ox_state *s, ir_op op, int a, int b);
/* A scalar param of value v. */
int ox_scalar_param(ox_state *s, double v);
/* The elementwise max(a, b) or min(a, b): exact, infinities included. */
int ox_max_min(ox_state *s, bool max, int a, int b);
/* y = W x along axis (W [m, d], row-major): the dense of ox_select_axis with
 * any weights (Resize's interpolation). */
int ox_weigh_axis(ox_state *s, int x, int axis, const double *w, int64_t m);
/* Output 0 is a op b, two values of which one at least is a node (an NHWC
 * operand keeps its layout). */
bool ox_binary_tensor(ox_state *s, ir_op op, ox_val *a, ox_val *b);
/* x with lo and hi elements of value before and after it along axis ax: a
 * concatenation with constant blocks. */
int ox_pad_axis(ox_state *s, int x, int ax, int64_t lo, int64_t hi, double value);

/* ---- onnx_ops_util.c: folding ---- */

/* An elementwise binary function folded on doubles; the ones below are
 * also recognised by ox_fold_binary to fold integers exactly in int64. */
typedef double (*ox_binary_fn)(double, double);
double ox_fold_add(double a, double b);
double ox_fold_sub(double a, double b);
double ox_fold_mul(double a, double b);
double ox_fold_div(double a, double b);
double ox_fold_pow(double a, double b);
double ox_fold_eq(double a, double b);
double ox_fold_lt(double a, double b);
double ox_fold_gt(double a, double b);
double ox_fold_le(double a, double b);
double ox_fold_ge(double a, double b);
double ox_fold_min(double a, double b);
double ox_fold_max(double a, double b);
double ox_fold_and(double a, double b);
double ox_fold_or(double a, double b);
/* C's fmod (0 for a zero divisor). */
double ox_fold_fmod(double a, double b);
/* Mod with fmod=0 (integers): Python's %, the result has the divisor's sign. */
double ox_fold_mod(double a, double b);
/* The broadcast shape of the n constants c into out and rank; an error when
 * they do not broadcast. */
bool ox_broadcast_shape(ox_state *s, const ox_const *const *c, int n, int64_t *out, int *rank);
/* Flat index into c of the broadcast result's flat index. */
int64_t ox_bcast_index(const ox_const *c, const int64_t *shape, int rank, int64_t flat);
/* f(a, b) broadcast, folded (logical: a 0/1 integer result); integers
 * exact; NULL after a located error. */
ox_const *ox_fold_binary(ox_state *s, const ox_const *a, const ox_const *b, ox_binary_fn f,
                         bool logical);


/* ---- the handlers (onnx_ops.c's table) ---- */

/* onnx_ops_shape.c */
bool op_constant(ox_state *s);
bool op_shape(ox_state *s);
bool op_size(ox_state *s);
bool op_identity(ox_state *s);
bool op_constant_of_shape(ox_state *s);
bool op_range(ox_state *s);
bool op_reshape(ox_state *s);
bool op_transpose(ox_state *s);
bool op_concat(ox_state *s);
bool op_gather(ox_state *s);
bool op_slice(ox_state *s);
bool op_split(ox_state *s);
bool op_expand(ox_state *s);
bool op_where(ox_state *s);
bool op_pad(ox_state *s);
bool op_center_crop_pad(ox_state *s);
bool op_depth_space(ox_state *s);
/* onnx_ops_elementwise.c */
bool op_unary(ox_state *s);
bool op_clip(ox_state *s);
bool op_binary(ox_state *s);
bool op_variadic(ox_state *s);
bool op_cast(ox_state *s);
bool op_composite(ox_state *s);
bool op_piecewise(ox_state *s);
/* onnx_ops_layers.c */
bool op_matmul(ox_state *s);
bool op_gemm(ox_state *s);
bool op_conv(ox_state *s);
bool op_pool(ox_state *s);
bool op_global_pool(ox_state *s);
bool op_conv_transpose(ox_state *s);
/* onnx_ops_norm.c */
bool op_det(ox_state *s);
bool op_batchnorm(ox_state *s);
bool op_softmax(ox_state *s);
bool op_layernorm(ox_state *s);
bool op_reduce(ox_state *s);
bool op_instancenorm(ox_state *s);
bool op_groupnorm(ox_state *s);
bool op_hardmax(ox_state *s);
bool op_argmax(ox_state *s);
bool op_cumsum(ox_state *s);
bool op_trilu(ox_state *s);
bool op_lpnorm(ox_state *s);
bool op_mvn(ox_state *s);
bool op_lrn(ox_state *s);
/* onnx_ops_rnn.c */
bool op_rnn(ox_state *s);
bool op_gru(ox_state *s);
bool op_lstm(ox_state *s);
/* onnx_ops_resize.c */
bool op_tile(ox_state *s);
bool op_resize(ox_state *s);

#endif
