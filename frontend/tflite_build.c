/* tflite_build.c — what the TFLite graph walk (tflite_import.c) and the
 * operator handlers (tflite_ops.c) build the IR with: located messages, the
 * tensors (constants from the model's buffers, dequantised with the file's
 * scales), and IR nodes added with shape inference and the file's
 * quantisation parameters.  A leaf of the importer: it calls neither the
 * walk nor a handler, so that the walk calls the handlers and both call
 * these helpers, never the other way (docs/internals.md#layers). */
#ifdef AXC_TFLITE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tflite_internal.h"

/* No subgraph holds more than a million tensors or operators: each is a
 * flatbuffer table, and the reader's Verifier refuses a file of more than
 * 1000000 tables (its default max_tables), so the arrays indexed by tensor
 * stay small.  A rank over TFL_MAX_SHAPE reads as -1 (tfl_element_count refuses
 * it), so every rank the importer sees fits the IR: */
_Static_assert(TFL_MAX_SHAPE <= IR_MAX_RANK, "a TFLite tensor's rank fits an IR node");

/* ---- messages ------------------------------------------------------------ */

/* Upstream's names of builtin codes 0..60 (schema.fbs BuiltinOperator). */
static const char *const op_names[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE", "DEQUANTIZE",
    "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU",
    "RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
    "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN",
    "SUB", "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN",
    "EXP", "TOPK_V2", "SPLIT", "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU",
    "MAXIMUM", "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2",
};

const char *tfl_op_name(tfl_state *s, int32_t code)
{
    if (code >= 0 && code < (int32_t)(sizeof op_names / sizeof *op_names)) return op_names[code];
    if (code == TFL_OP_QUANTIZE) return "QUANTIZE";
    return ax_sprintf(s->ctx->arena, "builtin operator %d", (int)code);
}

/* The current operator's name: its builtin's, or its custom code's. */
static const char *current_op_name(tfl_state *s)
{
    if (s->op->opcode_index >= (uint32_t)s->m->nopcodes) return "?";
    const tfl_opcode *c = &s->m->opcodes[s->op->opcode_index];
    if (c->custom) return ax_sprintf(s->ctx->arena, "custom '%s'", c->custom);
    return tfl_op_name(s, c->builtin);
}

void tfl_fail(tfl_state *s, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->op)
        ax_error(s->ctx, ax_noloc(), "TFLite operator %d (%s): %s", s->op_index, current_op_name(s), msg);
    else
        ax_error(s->ctx, ax_noloc(), "TFLite model: %s", msg);
}

/* ---- tensors ------------------------------------------------------------- */

const tfl_tensor *tfl_tensor_at(const tfl_state *s, int t) { return &s->m->tensors[t]; }

bool tfl_check_tensor(tfl_state *s, int t, const char *what)
{
    if (t >= 0 && t < s->m->ntensors) return true;
    tfl_fail(s, "%s names tensor %d; the subgraph has %d", what, t, s->m->ntensors);
    return false;
}

bool tfl_input(tfl_state *s, int i, bool optional, int *tensor)
{
    *tensor = i < s->op->ninputs ? s->op->inputs[i] : -1;
    if (*tensor == -1) {
        if (!optional) tfl_fail(s, "input %d is missing (the operator has %d inputs)", i, s->op->ninputs);
        return optional;
    }
    if (!tfl_check_tensor(s, *tensor, ax_sprintf(s->ctx->arena, "input %d", i))) return false;
    for (int hops = 0; s->alias[*tensor] >= 0 && hops < s->m->ntensors; hops++) *tensor = s->alias[*tensor];
    return true;
}

/* Tensor t's buffer, or NULL (none, empty); a bad index is reported (*bad). */
static const tfl_buffer *buffer_of(tfl_state *s, int t, bool *bad)
{
    const tfl_tensor *x = tfl_tensor_at(s, t);
    *bad = false;
    if (x->buffer == 0) return NULL;
    if (x->buffer >= (uint32_t)s->m->nbuffers) {
        tfl_fail(s, "tensor %d ('%s') names buffer %u; the model has %d", t, x->name, x->buffer, s->m->nbuffers);
        *bad = true;
        return NULL;
    }
    const tfl_buffer *b = &s->m->buffers[x->buffer];
    return b->data && b->size ? b : NULL;
}

bool tfl_check_buffer(tfl_state *s, int t)
{
    bool bad;
    buffer_of(s, t, &bad);
    return !bad;
}

bool tfl_is_const(const tfl_state *s, int t)
{
    const tfl_tensor *x = tfl_tensor_at(s, t);
    return x->buffer != 0 && x->buffer < (uint32_t)s->m->nbuffers && s->m->buffers[x->buffer].data &&
           s->m->buffers[x->buffer].size;
}

int64_t tfl_element_count(const tfl_tensor *x)
{
    int64_t n = 1;
    if (x->rank < 0) return -1;
    for (int d = 0; d < x->rank; d++)
        if (x->shape[d] < 0 || __builtin_mul_overflow(n, (int64_t)x->shape[d], &n) || n > ((int64_t)1 << 40))
            return -1;
    return n;
}

static int elem_bytes(int type)
{
    switch (type) {
    case TFL_FLOAT32: case TFL_INT32: return 4;
    case TFL_FLOAT16: return 2;
    case TFL_INT8: case TFL_UINT8: return 1;
    case TFL_INT64: return 8;
    default: return 0;
    }
}

/* IEEE half to float (normal, subnormal, inf, NaN). */
static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, f = h & 1023;
    double v = e == 0 ? f * 0x1p-24 : e == 31 ? (f ? NAN : INFINITY) : (1024 + f) * 0x1p-25 * (double)(1u << e);
    return h & 0x8000 ? -v : v;
}

/* Element i of raw little-endian data of this type, as an integer or float. */
static double raw_value(const uint8_t *p, int type, int64_t i, int64_t *iv)
{
    union { float f; int32_t i32; int64_t i64; uint16_t u16; } u;
    const size_t size = (size_t)elem_bytes(type);
    memcpy(&u, p + (size_t)i * size, size);
    switch (type) {
    case TFL_FLOAT32: return u.f;
    case TFL_FLOAT16: return half_to_double(u.u16);
    case TFL_INT32: return (double)(*iv = u.i32);
    case TFL_INT64: return (double)(*iv = u.i64);
    case TFL_INT8: return (double)(*iv = (int8_t)p[i]);
    default: return (double)(*iv = p[i]);   /* uint8 */
    }
}

/* Scale and zero point of element i of quantised tensor x (per tensor or
 * along qdim); false when x gives no usable parameters for i. */
static bool element_params(const tfl_tensor *x, int64_t i, double *scale, int64_t *zp)
{
    if (x->nscale < 1) return false;
    int64_t k = 0;
    if (x->nscale > 1) {
        int64_t inner = 1;
        for (int d = x->qdim + 1; d < x->rank; d++) inner *= x->shape[d];
        k = (i / inner) % x->shape[x->qdim];
        if (k >= x->nscale) return false;
    }
    *scale = x->scale[k];
    *zp = x->nzp == 0 ? 0 : x->zero_point[x->nzp == 1 ? 0 : (k < x->nzp ? k : 0)];
    return true;
}

/* Checks quantisation parameters of x: positive finite scales, one or one
 * per index of qdim, zero points as many or one. */
static bool check_params(tfl_state *s, int t)
{
    const tfl_tensor *x = tfl_tensor_at(s, t);
    if (x->custom_quant) { tfl_fail(s, "unsupported: tensor %d ('%s') has custom quantisation", t, x->name); return false; }
    if (x->nscale > 1 && (x->qdim < 0 || x->qdim >= x->rank || x->shape[x->qdim] != x->nscale)) {
        tfl_fail(s, "tensor %d ('%s'): %d scales along dimension %d of a tensor of rank %d", t, x->name, x->nscale,
                 x->qdim, x->rank);
        return false;
    }
    if (x->nzp > 1 && x->nzp != x->nscale) {
        tfl_fail(s, "tensor %d ('%s'): %d zero points for %d scales", t, x->name, x->nzp, x->nscale);
        return false;
    }
    for (int k = 0; k < x->nscale; k++)
        if (!(x->scale[k] > 0) || !isfinite(x->scale[k])) {
            tfl_fail(s, "tensor %d ('%s'): quantisation scale %g is not positive and finite", t, x->name,
                     (double)x->scale[k]);
            return false;
        }
    return true;
}

double *tfl_const_values(tfl_state *s, int t, int64_t *count)
{
    const tfl_tensor *x = tfl_tensor_at(s, t);
    bool bad;
    const tfl_buffer *b = buffer_of(s, t, &bad);
    const int size = elem_bytes(x->type);
    *count = tfl_element_count(x);
    if (bad) return NULL;
    if (!b || !size || *count < 0 || x->sparse) {
        tfl_fail(s, "unsupported: constant tensor %d ('%s') is %s", t, x->name,
                 !b ? "without data" : x->sparse ? "sparse" : !size ? "of an element type other than float32, "
                 "float16, int8, uint8, int32 and int64" : "of a shape with negative dims");
        return NULL;
    }
    if (b->size != (uint64_t)*count * (uint64_t)size) {
        tfl_fail(s, "tensor %d ('%s') of %lld elements has a buffer of %llu bytes", t, x->name, (long long)*count,
                 (unsigned long long)b->size);
        return NULL;
    }
    if (!check_params(s, t)) return NULL;
    const bool quantised = x->nscale > 0 && (x->type == TFL_INT8 || x->type == TFL_UINT8 || x->type == TFL_INT32);
    double *v = ax_alloc(s->ctx->arena, sizeof *v * (size_t)(*count ? *count : 1));
    for (int64_t i = 0; i < *count; i++) {
        int64_t q = 0, zp = 0;
        double scale = 1;
        v[i] = raw_value(b->data, x->type, i, &q);
        if (quantised && element_params(x, i, &scale, &zp))
            v[i] = (double)(float)(((double)q - (double)zp) * (float)scale);   /* zp may be any int64 */
        if (!isfinite(v[i])) {   /* no model's weights: a corrupt file (and NaN scales in int8) */
            tfl_fail(s, "constant tensor %d ('%s') holds %g at element %lld", t, x->name, v[i], (long long)i);
            return NULL;
        }
    }
    return v;
}

/* ---- nodes ----------------------------------------------------------------- */

int tfl_add(tfl_state *s, ir_op op, const int *src, int nsrc, const ir_attrs *attrs)
{
    const char *name = s->op ? ax_sprintf(s->ctx->arena, "%s %d", current_op_name(s), s->op_index) : NULL;
    int id = ir_add_imported(s->g, op, src, nsrc, attrs, name);
    if (id == IR_NONE) return IR_NONE;
    int errors = s->ctx->errors, first = s->inferred;
    s->inferred = s->g->nnodes;
    if (s->infer(s->g, first) || s->ctx->errors > errors) return IR_NONE;
    return id;
}

int tfl_param(tfl_state *s, const double *values, int rank, const int64_t *shape, const float *wscale,
              int64_t nwscale)
{
    const int id = ir_add_param_data(s->g, ax_sprintf(s->ctx->arena, "tflite_const_%d", s->counter++), values, rank,
                                     shape);
    ir_node *n = ir_at(s->g, id);
    n->file_wscale = wscale;
    n->nfile_wscale = wscale ? nwscale : 0;
    return id;
}

int tfl_scalar(tfl_state *s, double value) { return ir_add_scalar(s->g, value, ax_noloc()); }

int tfl_reshape(tfl_state *s, int x, const int64_t *shape, int rank)
{
    if (x == IR_NONE) return x;
    const ir_node *n = ir_at(s->g, x);
    if (n->rank == rank && !memcmp(n->shape, shape, sizeof *shape * (size_t)rank)) return x;
    ir_attrs a = ir_attrs_unset();
    a.nnewshape = rank;
    memcpy(a.newshape, shape, sizeof *shape * (size_t)rank);
    return tfl_add(s, IR_OP_reshape, &x, 1, &a);
}

bool tfl_mark(tfl_state *s, int t, int id)
{
    const tfl_tensor *x = tfl_tensor_at(s, t);
    if ((x->type != TFL_INT8 && x->type != TFL_UINT8) || x->nscale == 0) return true;
    if (!check_params(s, t)) return false;
    if (x->nscale != 1) {
        tfl_fail(s, "unsupported: per-channel quantisation of an activation (tensor %d, '%s')", t, x->name);
        return false;
    }
    const int64_t zp = x->nzp ? x->zero_point[0] : 0, lo = x->type == TFL_UINT8 ? 0 : -128;
    if (zp < lo || zp > lo + 255) {
        tfl_fail(s, "tensor %d ('%s'): zero point %lld is outside its type's range", t, x->name, (long long)zp);
        return false;
    }
    ir_node *n = ir_at(s->g, id);
    const int32_t axc_zp = (int32_t)(x->type == TFL_UINT8 ? zp - 128 : zp);   /* axc's int8: uint8 - 128 */
    if (n->file_scale > 0 && (n->file_scale != x->scale[0] || n->file_zp != axc_zp)) {
        tfl_fail(s, "unsupported: tensor %d ('%s') requantises a value to another scale or zero point", t, x->name);
        return false;
    }
    n->file_scale = x->scale[0];
    n->file_zp = axc_zp;
    return true;
}

/* TFLite's ADD of q + 0 at equal scales is q; in a model from .tflite an
 * ADD runs on the integers whatever its operands' producers (pass_quant
 * ew_applies), quantising the float x at its door with t's scale and zero
 * point as TFLite's QUANTIZE does (round half away, clamped), the zero
 * (marked: quantised data) to t's zero point.  So x + 0 with t's parameters
 * on all three is the dequantised integer (q - zp) * scale LiteRT gives. */
int tfl_on_grid(tfl_state *s, int x, int t)
{
    const double zero = 0;
    const int64_t one = 1;
    int src[2] = {x, tfl_param(s, &zero, 1, &one, NULL, 0)};
    if (!tfl_mark(s, t, src[1])) return IR_NONE;
    const int y = tfl_add(s, IR_OP_add, src, 2, NULL);
    return y != IR_NONE && tfl_mark(s, t, y) ? y : IR_NONE;
}

bool tfl_set(tfl_state *s, int t, int id)
{
    if (id == IR_NONE) return false;
    if (!tfl_check_tensor(s, t, "an output")) return false;
    const tfl_tensor *x = tfl_tensor_at(s, t);
    const ir_node *n = ir_at(s->g, id);
    if (x->rank >= 0 && tfl_element_count(x) >= 0 && tfl_element_count(x) != ir_numel(n)) {
        tfl_fail(s, "output tensor %d ('%s') declares %lld elements; the operator computes %lld", t, x->name,
                 (long long)tfl_element_count(x), (long long)ir_numel(n));
        return false;
    }
    if (s->node[t] != IR_NONE) {
        tfl_fail(s, "tensor %d ('%s') is computed twice", t, x->name);
        return false;
    }
    s->node[t] = id;
    return tfl_mark(s, t, id);
}

int tfl_node(tfl_state *s, int t)
{
    if (s->node[t] != IR_NONE) return s->node[t];
    const tfl_tensor *x = tfl_tensor_at(s, t);
    if (!tfl_is_const(s, t)) {
        bool bad;
        buffer_of(s, t, &bad);
        if (!bad) tfl_fail(s, "tensor %d ('%s') is read before any operator computes it", t, x->name);
        return IR_NONE;
    }
    int64_t count, shape[IR_MAX_RANK];
    double *v = tfl_const_values(s, t, &count);
    if (!v) return IR_NONE;
    for (int d = 0; d < x->rank; d++) shape[d] = x->shape[d];
    /* a quantised scalar is a parameter of one element: an int8 kernel reads
       its integer (pass_quant ew_operand); a float one, a scalar node */
    const bool quantised = x->nscale > 0 && (x->type == TFL_INT8 || x->type == TFL_UINT8);
    if (x->rank == 0) shape[0] = 1;
    int id = x->rank == 0 && !quantised ? tfl_scalar(s, v[0])
                                        : tfl_param(s, v, x->rank ? x->rank : 1, shape, NULL, 0);
    s->node[t] = id;
    return tfl_mark(s, t, id) ? id : IR_NONE;
}

#else
/* Built without flatbuffers: tflite_import.c reports it. */
typedef int tflite_build_left_out;
#endif
