/* tflite_ops.c — TFLite's builtin operators as IR nodes, in TFLite's own
 * NHWC layout: CONV_2D and DEPTHWISE_CONV_2D (weights [O, kh, kw, I] and
 * [1, kh, kw, C*M] reordered to the IR's [O, I/groups, kh, kw]),
 * FULLY_CONNECTED (a dense), AVERAGE/MAX_POOL_2D, ADD, MUL, RESHAPE,
 * SOFTMAX, LOGISTIC, TANH, RELU, RELU6, CONCATENATION, MEAN, PAD (a concat
 * with zero blocks), QUANTIZE and DEQUANTIZE, with fused activations.
 *
 * int8: every int8/uint8 tensor's node carries the file's scale and zero
 * point (tfl_set); int8 weights are dequantised with their scales and keep
 * them (ir_node file_wscale), an int32 bias with its own scales; a fused
 * activation's node shares its operator's output parameters (TFLite
 * clamps the requantised result to the activation's range: a clamp of the
 * same integers).  QUANTIZE of a float value marks that value; DEQUANTIZE
 * is the value itself (the IR keeps one float value per quantised tensor,
 * as for quantised ONNX: axc_quantize_file compiles them to int8), rounded
 * to its integers first where no operator has (tfl_on_grid). */
#ifdef AXC_TFLITE
#include <string.h>

#include "tflite_internal.h"

/* The activation node after y, sharing tensor t's parameters; y when none. */
static int fused_act(tfl_state *s, int y, int t)
{
    const int act = s->op->opt.act;
    if (y == IR_NONE || act == 0) return y;
    if (act != 1 && act != 3 && act != 4) {
        tfl_fail(s, "unsupported: fused activation %d (NONE, RELU, RELU6 and TANH are read)", act);
        return IR_NONE;
    }
    if (!tfl_mark(s, t, y)) return IR_NONE;
    return tfl_add(s, act == 1 ? IR_OP_relu : act == 3 ? IR_OP_relu6 : IR_OP_tanh, &y, 1, NULL);
}

/* Output 0 of the current operator set to y after its fused activation. */
static bool set_output(tfl_state *s, int y)
{
    const int t = s->op->noutputs >= 1 ? s->op->outputs[0] : -1;
    if (t < 0 || t >= s->m->ntensors) {
        tfl_fail(s, "the operator's output names tensor %d; the subgraph has %d", t, s->m->ntensors);
        return false;
    }
    return tfl_set(s, t, fused_act(s, y, t));
}

/* Input i's IR node (IR_NONE after an error). */
static int input_node(tfl_state *s, int i)
{
    int t;
    return tfl_input(s, i, false, &t) ? tfl_node(s, t) : IR_NONE;
}

/* Input i's tensor when it is a constant of rank `rank` (any when -1). */
static const tfl_tensor *const_input(tfl_state *s, int i, int rank, int *t, const char *what)
{
    if (!tfl_input(s, i, false, t) || !tfl_check_buffer(s, *t)) return NULL;
    const tfl_tensor *x = tfl_tensor_at(s, *t);
    if (!tfl_is_const(s, *t) || (rank >= 0 && x->rank != rank)) {
        tfl_fail(s, "unsupported: %s (input %d) is not a constant tensor%s", what, i,
                 rank >= 0 ? ax_sprintf(s->ctx->arena, " of rank %d", rank) : "");
        return NULL;
    }
    return x;
}

/* The scales to keep with int8 weights w (file_wscale): NULL for float
 * weights; refused: weight zero points other than 0 (axc's int8 weights
 * are symmetric) and scales along another dim than the output channels'. */
static bool weight_scales(tfl_state *s, int t, int out_dim, const float **ws, int64_t *n)
{
    const tfl_tensor *w = tfl_tensor_at(s, t);
    *ws = NULL;
    *n = 0;
    if (w->type != TFL_INT8 && w->type != TFL_UINT8) return true;
    if (w->nscale < 1) {
        tfl_fail(s, "unsupported: int8 weights (tensor %d, '%s') without quantisation parameters", t, w->name);
        return false;
    }
    for (int k = 0; k < w->nzp; k++)
        if (w->zero_point[k] != (w->type == TFL_UINT8 ? 128 : 0)) {
            tfl_fail(s, "unsupported: weight zero point %lld (tensor %d, '%s'): axc's int8 weights are symmetric",
                     (long long)w->zero_point[k], t, w->name);
            return false;
        }
    if (w->nscale > 1 && w->qdim != out_dim) {
        tfl_fail(s, "unsupported: weights (tensor %d, '%s') quantised along dimension %d, not the output channels' %d",
                 t, w->name, w->qdim, out_dim);
        return false;
    }
    float *copy = ax_alloc(s->ctx->arena, sizeof *copy * (size_t)w->nscale);   /* the reader's arrays die with it */
    memcpy(copy, w->scale, sizeof *copy * (size_t)w->nscale);
    *ws = copy;
    *n = w->nscale;
    return true;
}

/* A bias input (optional input 2) as a float param of count values. */
static int bias_node(tfl_state *s, int count)
{
    int t;
    if (!tfl_input(s, 2, true, &t)) return IR_NONE;
    if (t < 0) return IR_NONE;
    const tfl_tensor *b = tfl_tensor_at(s, t);
    int64_t n, shape[1] = {count};
    double *v = tfl_is_const(s, t) ? tfl_const_values(s, t, &n) : NULL;
    if (!v || n != count) {
        if (v || !s->ctx->errors)
            tfl_fail(s, "unsupported: a bias (tensor %d, '%s') that is not a constant of %d values", t, b->name, count);
        return IR_NONE;
    }
    return tfl_param(s, v, 1, shape, NULL, 0);
}

/* Whether the optional bias input is given (its absence is no error). */
static bool has_bias(const tfl_state *s)
{
    return s->op->ninputs > 2 && s->op->inputs[2] >= 0;
}

/* Strides, dilations and padding (SAME: TensorFlow's, the odd row at the
 * bottom/right) of a window op over input x [N, H, W, C] with kernel kh, kw. */
static bool window_attrs(tfl_state *s, int x, int kh, int kw, ir_attrs *a)
{
    const tfl_options *o = &s->op->opt;
    const int k[2] = {kh, kw}, stride[2] = {o->stride_h, o->stride_w}, dil[2] = {o->dilation_h, o->dilation_w};
    const ir_node *xn = ir_at(s->g, x);
    if (xn->rank != 4) {
        tfl_fail(s, "the input has rank %d; the operator takes [N, H, W, C]", xn->rank);
        return false;
    }
    for (int d = 0; d < 2; d++) {
        if (stride[d] < 1 || stride[d] > 1 << 16 || dil[d] < 1 || dil[d] > 1 << 16 || k[d] < 1 || k[d] > 1 << 16) {
            tfl_fail(s, "window out of range (filter %dx%d, strides %d, %d, dilations %d, %d)", kh, kw,
                     o->stride_h, o->stride_w, o->dilation_h, o->dilation_w);
            return false;
        }
        a->kernel[d] = k[d];
        a->stride[d] = stride[d];
        a->dilation[d] = dil[d];
        const int64_t in = xn->shape[1 + d], span = (int64_t)dil[d] * (k[d] - 1) + 1;
        int64_t total = o->padding == 0 ? ((in + stride[d] - 1) / stride[d] - 1) * stride[d] + span - in : 0;
        if (total < 0) total = 0;
        a->pad[d] = (int)(total / 2);
        a->pad[d + 2] = (int)(total - total / 2);
    }
    return true;
}

/* ---- layers ------------------------------------------------------------------ */

/* CONV_2D (groups 1) and DEPTHWISE_CONV_2D (groups = input channels). */
static bool op_conv(tfl_state *s)
{
    const bool depthwise = s->m->opcodes[s->op->opcode_index].builtin == TFL_OP_DEPTHWISE_CONV_2D;
    int wt, x = input_node(s, 0);
    const tfl_tensor *w = x == IR_NONE ? NULL : const_input(s, 1, 4, &wt, "the filter");
    const float *ws;
    int64_t nws, count;
    if (!w || !weight_scales(s, wt, depthwise ? 3 : 0, &ws, &nws)) return false;
    double *v = tfl_const_values(s, wt, &count);
    if (!v) return false;
    const int64_t kh = w->shape[1], kw = w->shape[2], cin = ir_at(s->g, x)->rank == 4 ? ir_at(s->g, x)->shape[3] : 0;
    const int64_t out = depthwise ? w->shape[3] : w->shape[0], per = depthwise ? 1 : w->shape[3];
    if (depthwise && (w->shape[0] != 1 || cin < 1 || out % cin != 0)) {
        tfl_fail(s, "a depthwise filter of shape [%d, %d, %d, %d] for %lld input channels", w->shape[0], w->shape[1],
                 w->shape[2], w->shape[3], (long long)cin);
        return false;
    }
    double *oihw = ax_alloc(s->ctx->arena, sizeof *oihw * (size_t)(count ? count : 1));
    for (int64_t o = 0; o < out; o++)   /* [O, kh, kw, I] or [1, kh, kw, O] -> [O, I, kh, kw] */
        for (int64_t i = 0; i < per; i++)
            for (int64_t r = 0; r < kh * kw; r++)
                oihw[(o * per + i) * kh * kw + r] = depthwise ? v[r * out + o] : v[(o * kh * kw + r) * per + i];
    ir_attrs a = ir_attrs_unset();
    a.groups = depthwise ? (int)cin : 1;
    if (!window_attrs(s, x, (int)kh, (int)kw, &a)) return false;
    const int64_t shape[4] = {out, per, kh, kw};
    int src[3] = {x, tfl_param(s, oihw, 4, shape, ws, nws), has_bias(s) ? bias_node(s, (int)out) : IR_NONE};
    if (has_bias(s) && src[2] == IR_NONE) return false;
    return set_output(s, tfl_add(s, IR_OP_conv, src, 3, &a));
}

static bool op_fully_connected(tfl_state *s)
{
    int wt, x = input_node(s, 0);
    const tfl_tensor *w = x == IR_NONE ? NULL : const_input(s, 1, 2, &wt, "the weights");
    const float *ws;
    int64_t nws, count;
    if (!w || !weight_scales(s, wt, 0, &ws, &nws)) return false;
    if (s->op->opt.weights_format != 0) {
        tfl_fail(s, "unsupported: shuffled weights (weights_format %d)", s->op->opt.weights_format);
        return false;
    }
    double *v = tfl_const_values(s, wt, &count);
    if (!v) return false;
    const ir_node *xn = ir_at(s->g, x);
    const int64_t k = w->shape[1], total = ir_numel(xn);
    if (k < 1 || total % k != 0) {
        tfl_fail(s, "%lld input elements do not make rows of %lld", (long long)total, (long long)k);
        return false;
    }
    if (!s->op->opt.keep_dims) {   /* TFLite flattens the input to [total / K, K] */
        const int64_t rows[2] = {total / k, k};
        x = tfl_reshape(s, x, rows, 2);
    }
    const int64_t shape[2] = {w->shape[0], k};
    int src[3] = {x, tfl_param(s, v, 2, shape, ws, nws), has_bias(s) ? bias_node(s, w->shape[0]) : IR_NONE};
    if (x == IR_NONE || (has_bias(s) && src[2] == IR_NONE)) return false;
    return set_output(s, tfl_add(s, IR_OP_dense, src, 3, NULL));
}

/* AVERAGE_POOL_2D (a mean over the window's real pixels, as TFLite) and MAX_POOL_2D. */
static bool op_pool(tfl_state *s)
{
    const bool max = s->m->opcodes[s->op->opcode_index].builtin == TFL_OP_MAX_POOL_2D;
    int x = input_node(s, 0);
    ir_attrs a = ir_attrs_unset();
    if (x == IR_NONE || !window_attrs(s, x, s->op->opt.filter_h, s->op->opt.filter_w, &a)) return false;
    a.dilation[0] = a.dilation[1] = 1;
    a.exclude_pad = !max && (a.pad[0] || a.pad[1] || a.pad[2] || a.pad[3]);   /* TFLite's mean: real pixels */
    return set_output(s, tfl_add(s, max ? IR_OP_maxpool : IR_OP_meanpool, &x, 1, &a));
}

/* ---- elementwise ---------------------------------------------------------------- */

static bool op_binary(tfl_state *s)
{
    const bool add = s->m->opcodes[s->op->opcode_index].builtin == TFL_OP_ADD;
    int src[2] = {input_node(s, 0), IR_NONE};
    if (src[0] != IR_NONE) src[1] = input_node(s, 1);
    if (src[1] == IR_NONE) return false;
    return set_output(s, tfl_add(s, add ? IR_OP_add : IR_OP_mul, src, 2, NULL));
}

static bool op_unary(tfl_state *s)
{
    const int32_t code = s->m->opcodes[s->op->opcode_index].builtin;
    int x = input_node(s, 0);
    if (x == IR_NONE) return false;
    const ir_op op = code == TFL_OP_RELU ? IR_OP_relu : code == TFL_OP_RELU6 ? IR_OP_relu6 :
                     code == TFL_OP_TANH ? IR_OP_tanh : IR_OP_sigmoid;
    return set_output(s, tfl_add(s, op, &x, 1, NULL));
}

/* SOFTMAX over the last axis of beta * x. */
static bool op_softmax(tfl_state *s)
{
    int x = input_node(s, 0);
    if (x == IR_NONE) return false;
    if (s->op->opt.beta != 1.0f) {
        int src[2] = {x, tfl_scalar(s, s->op->opt.beta)};
        x = tfl_add(s, IR_OP_mul, src, 2, NULL);
        if (x == IR_NONE) return false;
    }
    ir_attrs a = ir_attrs_unset();
    a.axis = ir_at(s->g, x)->rank - 1;
    return set_output(s, tfl_add(s, IR_OP_softmax, &x, 1, &a));
}

/* ---- shapes --------------------------------------------------------------------- */

/* The output tensor's static shape into shape: its rank, -1 after an error. */
static int output_shape(tfl_state *s, int64_t *shape)
{
    const int t = s->op->noutputs >= 1 ? s->op->outputs[0] : -1;
    if (t < 0 || t >= s->m->ntensors) {
        tfl_fail(s, "the operator's output names tensor %d; the subgraph has %d", t, s->m->ntensors);
        return -1;
    }
    const tfl_tensor *y = tfl_tensor_at(s, t);
    if (y->rank < 0 || y->rank > IR_MAX_RANK || y->dynamic) {
        tfl_fail(s, "unsupported: output tensor %d ('%s') has no static shape of rank at most %d", t, y->name,
                 IR_MAX_RANK);
        return -1;
    }
    for (int d = 0; d < y->rank; d++) shape[d] = y->shape[d];
    return y->rank;
}

/* RESHAPE to the output tensor's static shape (which the new-shape input
 * or option must agree with: shape inference checks the element count). */
static bool op_reshape(tfl_state *s)
{
    int64_t shape[IR_MAX_RANK];
    int x = input_node(s, 0), rank = x == IR_NONE ? -1 : output_shape(s, shape);
    if (rank < 0) return false;
    ir_attrs a = ir_attrs_unset();
    a.nnewshape = rank;
    memcpy(a.newshape, shape, sizeof *shape * (size_t)rank);
    return set_output(s, tfl_add(s, IR_OP_reshape, &x, 1, &a));
}

static bool op_concat(tfl_state *s)
{
    const int n = s->op->ninputs;
    if (n < 1) {
        tfl_fail(s, "a concatenation of no inputs");
        return false;
    }
    int *src = ax_alloc(s->ctx->arena, sizeof *src * (size_t)n);
    for (int i = 0; i < n; i++)
        if ((src[i] = input_node(s, i)) == IR_NONE) return false;
    const int rank = ir_at(s->g, src[0])->rank;
    ir_attrs a = ir_attrs_unset();
    a.axis = s->op->opt.axis < 0 ? s->op->opt.axis + rank : s->op->opt.axis;
    if (a.axis < 0 || a.axis >= rank) {
        tfl_fail(s, "axis %d of inputs of rank %d", s->op->opt.axis, rank);
        return false;
    }
    return set_output(s, tfl_add(s, IR_OP_concat, src, n, &a));
}

/* The constant integer input i (an axes or paddings tensor): its values. */
static const int64_t *int_input(tfl_state *s, int i, int64_t *count, const char *what)
{
    int t;
    const tfl_tensor *x = const_input(s, i, -1, &t, what);
    if (!x) return NULL;
    if (x->type != TFL_INT32 && x->type != TFL_INT64) {
        tfl_fail(s, "%s (input %d) is not an int32 or int64 tensor", what, i);
        return NULL;
    }
    double *v = tfl_const_values(s, t, count);
    if (!v) return NULL;
    int64_t *iv = ax_alloc(s->ctx->arena, sizeof *iv * (size_t)(*count ? *count : 1));
    for (int64_t k = 0; k < *count; k++) iv[k] = (int64_t)v[k];
    return iv;
}

/* MEAN over the constant axes, one mean per axis (keeping dims), then the
 * output's shape (keep_dims false drops them). */
static bool op_mean(tfl_state *s)
{
    int64_t n, shape[IR_MAX_RANK];
    int y = input_node(s, 0);
    const int64_t *axes = y == IR_NONE ? NULL : int_input(s, 1, &n, "the axes");
    if (!axes) return false;
    const int rank = ir_at(s->g, y)->rank;
    bool seen[IR_MAX_RANK] = {false};
    for (int64_t k = 0; k < n; k++) {
        const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (axis < 0 || axis >= rank) {
            tfl_fail(s, "axis %lld of an input of rank %d", (long long)axes[k], rank);
            return false;
        }
        seen[axis] = true;
    }
    for (int axis = 0; axis < rank && y != IR_NONE; axis++) {
        if (!seen[axis]) continue;
        ir_attrs a = ir_attrs_unset();
        a.axis = axis;
        y = tfl_add(s, IR_OP_mean, &y, 1, &a);
    }
    const int out_rank = y == IR_NONE ? -1 : output_shape(s, shape);
    return out_rank >= 0 && set_output(s, tfl_reshape(s, y, shape, out_rank));
}

/* The most elements of one block of zeros a PAD adds (its values are
 * parameters: the limit keeps a few bytes of file from asking gigabytes). */
#define TFL_MAX_PAD_BLOCK (1 << 22)

/* x with lo and hi zeros before and after it along axis: a concat with
 * constant blocks (zero is the zero point of an int8 value: exact). */
static int pad_axis(tfl_state *s, int x, int axis, int64_t lo, int64_t hi)
{
    int src[3], n = 0;
    for (int side = 0; side < 3 && x != IR_NONE; side++) {
        const int64_t p = side == 0 ? lo : hi;
        if (side == 1) { src[n++] = x; continue; }
        if (side == 2 && !hi) continue;
        if (side == 0 && !lo) continue;
        const ir_node *xn = ir_at(s->g, x);
        int64_t shape[IR_MAX_RANK], count = 1;
        memcpy(shape, xn->shape, sizeof shape);
        shape[axis] = p;
        for (int d = 0; d < xn->rank; d++)
            if (__builtin_mul_overflow(count, shape[d], &count) || count > TFL_MAX_PAD_BLOCK) {
                tfl_fail(s, "unsupported: padding dimension %d by %lld makes a block of more than %d elements", axis,
                         (long long)p, TFL_MAX_PAD_BLOCK);
                return IR_NONE;
            }
        double *zeros = ax_alloc(s->ctx->arena, sizeof *zeros * (size_t)count);
        memset(zeros, 0, sizeof *zeros * (size_t)count);
        src[n++] = tfl_param(s, zeros, xn->rank, shape, NULL, 0);
    }
    if (x == IR_NONE || n == 1) return x;
    ir_attrs a = ir_attrs_unset();
    a.axis = axis;
    return tfl_add(s, IR_OP_concat, src, n, &a);
}

static bool op_pad(tfl_state *s)
{
    int64_t n;
    int x = input_node(s, 0);
    const int64_t *pads = x == IR_NONE ? NULL : int_input(s, 1, &n, "the paddings");
    if (!pads) return false;
    const ir_node *xn = ir_at(s->g, x);
    const int rank = xn->rank;
    if (n != 2 * rank) {
        tfl_fail(s, "%lld paddings for an input of rank %d (2 per dimension)", (long long)n, rank);
        return false;
    }
    for (int d = 0; d < rank; d++)
        if (pads[2 * d] < 0 || pads[2 * d + 1] < 0 || pads[2 * d] > 1 << 16 || pads[2 * d + 1] > 1 << 16) {
            tfl_fail(s, "padding (%lld, %lld) of dimension %d is negative or too large", (long long)pads[2 * d],
                     (long long)pads[2 * d + 1], d);
            return false;
        }
    for (int d = 0; d < rank && x != IR_NONE; d++) x = pad_axis(s, x, d, pads[2 * d], pads[2 * d + 1]);
    return set_output(s, x);
}

/* ---- quantisation ----------------------------------------------------------------- */

/* QUANTIZE (float -> int8: the value, marked with the output's parameters)
 * and DEQUANTIZE (int8 -> float: the value itself; a constant, dequantised). */
static bool op_quantize(tfl_state *s)
{
    int t;
    if (!tfl_input(s, 0, false, &t)) return false;
    if (s->op->noutputs < 1 || s->op->outputs[0] < 0 || s->op->outputs[0] >= s->m->ntensors) {
        tfl_fail(s, "the operator has no output or names no tensor as its output");
        return false;
    }
    const int out = s->op->outputs[0];
    if (tfl_is_const(s, t) && s->m->opcodes[s->op->opcode_index].builtin == TFL_OP_DEQUANTIZE) {
        s->alias[out] = t;   /* float16 or int8 weights: read where they are used, dequantised */
        return true;
    }
    int x = tfl_node(s, t);
    if (x == IR_NONE) return false;
    if (s->node[out] != IR_NONE) {
        tfl_fail(s, "tensor %d is computed twice", out);
        return false;
    }
    if (s->m->opcodes[s->op->opcode_index].builtin == TFL_OP_DEQUANTIZE && s->off_grid[t])
        x = tfl_on_grid(s, x, t);   /* the float value is (q - zp) * scale: rounded first */
    if (x == IR_NONE) return false;
    s->node[out] = x;   /* the same value: tfl_mark checks a requantisation */
    return tfl_mark(s, out, x);
}

static const struct {
    int32_t code;
    tfl_handler fn;
} rows[] = {
    {TFL_OP_ADD, op_binary}, {TFL_OP_MUL, op_binary}, {TFL_OP_AVERAGE_POOL_2D, op_pool},
    {TFL_OP_MAX_POOL_2D, op_pool}, {TFL_OP_CONCATENATION, op_concat}, {TFL_OP_CONV_2D, op_conv},
    {TFL_OP_DEPTHWISE_CONV_2D, op_conv}, {TFL_OP_FULLY_CONNECTED, op_fully_connected},
    {TFL_OP_LOGISTIC, op_unary}, {TFL_OP_TANH, op_unary}, {TFL_OP_RELU, op_unary}, {TFL_OP_RELU6, op_unary},
    {TFL_OP_RESHAPE, op_reshape}, {TFL_OP_SOFTMAX, op_softmax}, {TFL_OP_PAD, op_pad}, {TFL_OP_MEAN, op_mean},
    {TFL_OP_QUANTIZE, op_quantize}, {TFL_OP_DEQUANTIZE, op_quantize},
};

tfl_handler tfl_find_op(int32_t code)
{
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (rows[i].code == code) return rows[i].fn;
    return NULL;
}

#else
/* Built without flatbuffers: tflite_import.c reports it. */
typedef int tflite_ops_left_out;
#endif
