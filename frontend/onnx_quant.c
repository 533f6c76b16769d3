/* onnx_quant.c — quantised ONNX (docs/onnx.md#quantised-models): QDQ graphs
 * (QuantizeLinear/DequantizeLinear around float ops) and ONNX Runtime's
 * QOperator ops (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd,
 * QLinearGlobalAveragePool, QLinearConcat).
 *
 * The importer keeps one float value per quantised tensor: a QuantizeLinear
 * or a QLinear op's output is the float IR node of what it quantises, with
 * the file's scale and zero point on that node (ir_node file_scale/file_zp,
 * a uint8 zero point less 128: axc's int8 is uint8 - 128, the same integers
 * shifted), and a DequantizeLinear of it is that node again.  A
 * DequantizeLinear of an integer initializer (weights, bias) is folded to
 * float, (q - zp) * scale, and its scales kept for the param
 * (ox_const qscale -> ir_node file_wscale), so that pass_quant gets the
 * file's integers back exactly.  A QLinear op becomes its float op
 * (the handler of Conv, MatMul, Add, ...) on these values, its output's
 * parameters on the result.  axc_quantize_file (compiler/quantize.c) then
 * compiles every value the file quantises to int8 with those parameters,
 * on the kernels of --quantize=int8.
 *
 * Refused (located): DynamicQuantizeLinear (parameters computed at run
 * time), MatMulInteger/ConvInteger (int32 accumulators as values), per-axis
 * or blocked activation quantisation, weight zero points other than 0 (128
 * for uint8), 16-bit and float8 types. */
#ifdef AXC_ONNX
#include <math.h>
#include <string.h>

#include "onnx_internal.h"

#define IN(i) ox_input(s, (i), &ok)

/* ONNX TensorProto element types read here. */
enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6 };

/* The element type of initializer or Constant `name`; uint8 when the file
 * does not say (QuantizeLinear's default). */
static int tensor_type(ox_state *s, const char *name)
{
    const Onnx__GraphProto *g = s->graph;
    for (size_t k = 0; k < g->n_initializer; k++)
        if (g->initializer[k]->name && !strcmp(g->initializer[k]->name, name)) return g->initializer[k]->data_type;
    for (size_t k = 0; k < g->n_node; k++)   /* a Constant node */
        if (g->node[k]->n_output >= 1 && !strcmp(g->node[k]->output[0], name) && g->node[k]->n_attribute >= 1 &&
            g->node[k]->attribute[0]->t)
            return g->node[k]->attribute[0]->t->data_type;
    return T_UINT8;
}

/* The element type of the integers at input i: its zero point's (input
 * zi); when absent, a QuantizeLinear's output_dtype, else uint8. */
static int zp_type(ox_state *s, int zi)
{
    if ((int)s->node->n_input <= zi || !s->node->input[zi][0])   /* opset 21: output_dtype */
        return (int)ox_attr_int(s, "output_dtype", T_UINT8) == 0 ? T_UINT8 : (int)ox_attr_int(s, "output_dtype", T_UINT8);
    return tensor_type(s, s->node->input[zi]);
}

/* A scale input (constant, positive, finite): its values and count. */
static bool scale_input(ox_state *s, int i, const double **v, int64_t *count)
{
    bool ok = true;
    ox_val *x = IN(i);
    if (!ok || !x) return false;
    if (!x->c || x->c->is_int || x->c->count < 1) {
        ox_unsupported(s, "a quantisation scale that is not a float constant");
        return false;
    }
    for (int64_t k = 0; k < x->c->count; k++)
        if (!(x->c->v[k] > 0) || !isfinite(x->c->v[k]) || (double)(float)x->c->v[k] != x->c->v[k]) {
            ox_fail(s, "quantisation scale %g (input %d, element %lld) is not a positive finite float", x->c->v[k],
                    i, (long long)k);
            return false;
        }
    *v = x->c->v;
    *count = x->c->count;
    return true;
}

/* A zero point input (absent: 0) as axc's int8 zero points (uint8 less
 * 128), count of them; type its element type. */
static bool zp_input(ox_state *s, int i, int64_t want, int32_t **zps, int *type)
{
    bool ok = true;
    *type = zp_type(s, i);
    if (*type != T_UINT8 && *type != T_INT8) {
        ox_unsupported(s, "a quantised type other than int8 and uint8 (int16, int4, float8)");
        return false;
    }
    ox_val *z = (int)s->node->n_input > i && s->node->input[i][0] ? IN(i) : NULL;
    if (!ok) return false;
    if (z && (!z->c || !z->c->is_int || (z->c->count != 1 && z->c->count != want))) {
        ox_unsupported(s, "a zero point that is not an integer constant of one or per-channel values");
        return false;
    }
    *zps = ax_alloc(s->ctx->arena, sizeof **zps * (size_t)want);
    for (int64_t k = 0; k < want; k++) {
        int64_t v = z ? z->c->iv[z->c->count == 1 ? 0 : k] : (*type == T_UINT8 ? 128 : 0);
        (*zps)[k] = (int32_t)(*type == T_UINT8 ? v - 128 : v);
    }
    return true;
}

/* The file's parameters of IR node id: its own, or those of the value a
 * chain of data movement (reshape, transpose, max-pool, ...) took them from. */
static bool node_params(const ox_state *s, int id, float *scale, int32_t *zp)
{
    while (id != IR_NONE) {
        const ir_node *n = ir_at(s->g, id);
        if (n->file_scale > 0) {
            *scale = n->file_scale;
            *zp = n->file_zp;
            return true;
        }
        if (n->op != IR_OP_reshape && n->op != IR_OP_transpose && n->op != IR_OP_maxpool && n->op != IR_OP_slice &&
            n->op != IR_OP_relu && n->op != IR_OP_relu6)
            return false;
        id = n->src[0];
    }
    return false;
}

/* Puts (scale, zp) on the node of value v (and its cached NCHW copy); a
 * graph output of integers is refused (axc's outputs are float: the
 * model should end with a DequantizeLinear). */
static bool mark(ox_state *s, ox_val *v, double scale, int32_t zp)
{
    for (size_t i = 0; i < s->graph->n_output; i++)
        if (s->graph->output[i]->name && !strcmp(s->graph->output[i]->name, v->name)) {
            ox_unsupported(s, "a graph output of quantised integers (end the model with a DequantizeLinear)");
            return false;
        }
    int ids[2] = {v->node, v->nhwc ? v->nchw : IR_NONE};
    for (int k = 0; k < 2; k++) {
        if (ids[k] == IR_NONE) continue;
        ir_node *n = ir_at(s->g, ids[k]);
        if (n->file_scale > 0 && (n->file_scale != (float)scale || n->file_zp != zp)) {
            ox_unsupported(s, "a value quantised twice with different scales or zero points");
            return false;
        }
        n->file_scale = (float)scale;
        n->file_zp = zp;
    }
    return true;
}

/* Value i of the current node, an int8 tensor of the file, checked to carry
 * the parameters the node's inputs si, zi give it. */
static ox_val *quantised_input(ox_state *s, int i, int si, int zi)
{
    bool ok = true;
    ox_val *x = IN(i);
    const double *sc;
    int64_t n;
    int32_t *zp;
    int type;
    if (!ok || !x || !scale_input(s, si, &sc, &n) || !zp_input(s, zi, 1, &zp, &type)) return NULL;
    if (n != 1) {
        ox_unsupported(s, "per-axis quantisation of an activation");
        return NULL;
    }
    float fs;
    int32_t fz;
    if (x->c || !node_params(s, x->node, &fs, &fz)) {
        ox_unsupported(s, "an integer operand that no QuantizeLinear or QLinear op of the file computed "
                          "(an integer graph input or constant)");
        return NULL;
    }
    if (fs != (float)sc[0] || fz != zp[0]) {
        ox_unsupported(s, "an operand read with other scale or zero point than it was quantised with");
        return NULL;
    }
    return x;
}

/* The scale of a quantised_input. */
static double operand_scale(const ox_state *s, const ox_val *x)
{
    float scale = 0;
    int32_t zp;
    node_params(s, x->node, &scale, &zp);
    return scale;
}

/* ---- QuantizeLinear / DequantizeLinear ------------------------------------ */

static bool no_blocks(ox_state *s)
{
    if (ox_attr_int(s, "block_size", 0) != 0) {
        ox_unsupported(s, "blocked quantisation (block_size)");
        return false;
    }
    return true;
}

static bool op_quantize_linear(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    const double *sc;
    int64_t n;
    int32_t *zp;
    int type;
    if (!ok || !x || !no_blocks(s) || !scale_input(s, 1, &sc, &n) || !zp_input(s, 2, 1, &zp, &type)) return false;
    if (n != 1) {
        ox_unsupported(s, "per-axis quantisation of an activation");
        return false;
    }
    if (x->c) {
        ox_unsupported(s, "a QuantizeLinear of a constant (the file should hold the integers)");
        return false;
    }
    ox_val copy = *x;
    ox_val *y = ox_define(s, s->node->output[0]);
    const char *name = y->name;
    *y = copy;
    y->name = name;
    return mark(s, y, sc[0], zp[0]);
}

/* (q - zp) * scale of integer constant c, scales and zero points per index
 * along axis (one: per tensor). */
static ox_const *dequantise_const(ox_state *s, const ox_const *c, const double *sc, int64_t ns, const int32_t *zp,
                                  int type, int axis)
{
    ox_const *f = ox_const_new(s, false, c->rank, c->shape);
    int64_t inner = 1;
    for (int d = axis + 1; d < c->rank; d++) inner *= c->shape[d];
    float *scales = ax_alloc(s->ctx->arena, sizeof *scales * (size_t)ns);
    for (int64_t k = 0; k < ns; k++) scales[k] = (float)sc[k];
    for (int64_t i = 0; i < c->count; i++) {
        const int64_t k = ns == 1 ? 0 : (i / inner) % ns;
        const int64_t q = (type == T_UINT8 ? c->iv[i] - 128 : c->iv[i]) - zp[k];
        f->v[i] = (double)(float)((double)q * scales[k]);
    }
    f->qscale = scales;
    f->nqscale = ns;
    f->qzero = true;
    for (int64_t k = 0; k < ns; k++) f->qzero &= zp[k] == 0;
    return f;
}

static bool op_dequantize_linear(ox_state *s)
{
    bool ok = true;
    ox_val *x = IN(0);
    if (!ok || !x || !no_blocks(s)) return false;
    if (!x->c) {
        x = quantised_input(s, 0, 1, 2);
        if (!x) return false;
        ox_val copy = *x;
        ox_val *y = ox_define(s, s->node->output[0]);
        const char *name = y->name;
        *y = copy;
        y->name = name;
        return true;
    }
    const double *sc;
    int64_t ns;
    int32_t *zp;
    int type;
    if (!scale_input(s, 1, &sc, &ns)) return false;
    int64_t axis = ox_attr_int(s, "axis", 1);
    if (axis < 0) axis += x->c->rank;
    if (ns != 1 && (axis < 0 || axis >= x->c->rank || x->c->shape[axis] != ns)) {
        ox_fail(s, "%lld scales for axis %lld of a tensor of rank %d", (long long)ns, (long long)axis, x->c->rank);
        return false;
    }
    type = tensor_type(s, s->node->input[0]);
    if (type != T_INT32 && !zp_input(s, 2, ns, &zp, &type)) return false;
    if (type == T_INT32) zp = memset(ax_alloc(s->ctx->arena, sizeof *zp * (size_t)ns), 0, sizeof *zp * (size_t)ns);
    ox_const *f = dequantise_const(s, x->c, sc, ns, zp, type, (int)axis);
    ox_define(s, s->node->output[0])->c = f;
    return true;
}

/* ---- QOperator ops: the float op on the float values ------------------------ */

/* A weight or bias of a QLinear op as a float constant, defined under a
 * name of its own; NULL after an error.  Weights (bias false): int8 (or
 * uint8, zero point 128) constants with scales wsi, zero points wzi,
 * per output channel (axis 0 for a conv, the last for a matmul); bias:
 * int32 at x scale * w scale, zero point 0. */
static const char *weight_value(ox_state *s, int wi, int wsi, int wzi, int axis, const char *suffix)
{
    bool ok = true;
    ox_val *w = IN(wi);
    const double *sc;
    int64_t ns;
    int32_t *zp;
    int type;
    if (!ok || !w || !scale_input(s, wsi, &sc, &ns)) return NULL;
    if (!w->c || !w->c->is_int) {
        ox_unsupported(s, "weights that are not an integer constant");
        return NULL;
    }
    if (axis < 0) axis += w->c->rank;
    if (ns != 1 && (axis < 0 || axis >= w->c->rank || w->c->shape[axis] != ns)) {
        ox_fail(s, "%lld weight scales for a weight of shape rank %d", (long long)ns, w->c->rank);
        return NULL;
    }
    if (!zp_input(s, wzi, ns, &zp, &type)) return NULL;
    ox_const *f = dequantise_const(s, w->c, sc, ns, zp, type, axis);
    if (!f->qzero) {
        ox_unsupported(s, "a weight zero point other than 0 (128 for uint8): axc's int8 weights are symmetric");
        return NULL;
    }
    const char *name = ax_sprintf(s->ctx->arena, "%s%s", s->node->input[wi], suffix);
    ox_define(s, name)->c = f;
    return name;
}

/* int32 bias b of a conv/matmul read with x scale xs and weight scales ws. */
static const char *bias_value(ox_state *s, int bi, double xs, const double *ws, int64_t nws)
{
    bool ok = true;
    ox_val *b = IN(bi);
    if (!ok || !b) return NULL;
    if (!b->c || !b->c->is_int || b->c->rank != 1 || (nws != 1 && b->c->count != nws)) {
        ox_unsupported(s, "a bias that is not an int32 constant, one per output channel");
        return NULL;
    }
    ox_const *f = ox_const_new(s, false, 1, b->c->shape);
    for (int64_t k = 0; k < b->c->count; k++)   /* the scale ONNX Runtime computes: float x * float */
        f->v[k] = (double)b->c->iv[k] * (double)((float)xs * (float)ws[nws == 1 ? 0 : k]);
    const char *name = ax_sprintf(s->ctx->arena, "%s:float", s->node->input[bi]);
    ox_define(s, name)->c = f;
    return name;
}

/* Runs the handler of op_type on inputs names (n of them) with the current
 * node's attributes and first output, then marks that output with the
 * output scale and zero point at inputs ysi, yzi. */
static bool as_float_op(ox_state *s, const char *op_type, const char **names, int n, int ysi, int yzi)
{
    const double *ys;
    int64_t ny;
    int32_t *yz;
    int type;
    if (!scale_input(s, ysi, &ys, &ny) || !zp_input(s, yzi, 1, &yz, &type)) return false;
    if (ny != 1) {
        ox_unsupported(s, "per-axis quantisation of an activation");
        return false;
    }
    const Onnx__NodeProto *real = s->node;
    Onnx__NodeProto tmp = *real;
    tmp.op_type = (char *)op_type;
    tmp.domain = (char *)"";
    tmp.input = (char **)names;
    tmp.n_input = (size_t)n;
    tmp.n_output = 1;
    s->node = &tmp;
    const bool ok = ox_find_op(op_type)(s);
    s->node = real;
    ox_val *y = ok ? ox_lookup(s, real->output[0]) : NULL;
    if (!y || y->c) {
        if (ok) ox_unsupported(s, "a QLinear op of constants");
        return false;
    }
    return mark(s, y, ys[0], yz[0]);
}

static bool op_qlinear_conv(ox_state *s)
{
    const double *ws;
    int64_t nws;
    ox_val *x = quantised_input(s, 0, 1, 2);
    if (!x || !scale_input(s, 4, &ws, &nws)) return false;
    const double xs = operand_scale(s, x);
    const char *xname = s->node->input[0];
    const char *w = weight_value(s, 3, 4, 5, 0, ":float");
    const char *b = (int)s->node->n_input > 8 && s->node->input[8][0] ? bias_value(s, 8, xs, ws, nws) : "";
    if (!w || !b) return false;
    const char *names[3] = {xname, w, b};
    return as_float_op(s, "Conv", names, *b ? 3 : 2, 6, 7);
}

static bool op_qlinear_matmul(ox_state *s)
{
    ox_val *a = quantised_input(s, 0, 1, 2);
    if (!a) return false;
    const char *aname = s->node->input[0];
    const char *b = weight_value(s, 3, 4, 5, -1, ":float");
    if (!b) return false;
    const char *names[2] = {aname, b};
    return as_float_op(s, "MatMul", names, 2, 6, 7);
}

/* com.microsoft QGemm: A, As, Az, B, Bs, Bz, C (int32 at As * Bs), Ys, Yz
 * (absent: a float result, not handled). */
static bool op_qgemm(ox_state *s)
{
    const double *ws;
    int64_t nws;
    const int n = (int)s->node->n_input;
    if (n < 9 || !s->node->input[7][0] || ox_attr_float(s, "alpha", 1) != 1) {
        ox_unsupported(s, "a QGemm with a float result or alpha other than 1");
        return false;
    }
    ox_val *a = quantised_input(s, 0, 1, 2);
    if (!a || !scale_input(s, 4, &ws, &nws)) return false;
    const double as = operand_scale(s, a);
    const char *aname = s->node->input[0];
    const char *b = weight_value(s, 3, 4, 5, ox_attr_int(s, "transB", 0) ? 0 : 1, ":float");
    const char *c = s->node->input[6][0] ? bias_value(s, 6, as, ws, nws) : "";
    if (!b || !c) return false;
    const char *names[3] = {aname, b, c};
    return as_float_op(s, "Gemm", names, *c ? 3 : 2, 7, 8);
}

/* com.microsoft QLinearAdd / QLinearMul: A, As, Az, B, Bs, Bz, Cs, Cz. */
static bool op_qlinear_binary(ox_state *s)
{
    if (!quantised_input(s, 0, 1, 2) || !quantised_input(s, 3, 4, 5)) return false;
    const char *names[2] = {s->node->input[0], s->node->input[3]};
    return as_float_op(s, !strcmp(s->node->op_type, "QLinearAdd") ? "Add" : "Mul", names, 2, 6, 7);
}

/* com.microsoft QLinearGlobalAveragePool / QLinearAveragePool: X, Xs, Xz, Ys, Yz. */
static bool op_qlinear_pool(ox_state *s)
{
    if (ox_attr_int(s, "channels_last", 0)) {
        ox_unsupported(s, "channels_last=1");
        return false;
    }
    if (!quantised_input(s, 0, 1, 2)) return false;
    const char *names[1] = {s->node->input[0]};
    return as_float_op(s, s->node->op_type + strlen("QLinear"), names, 1, 3, 4);
}

/* com.microsoft QLinearConcat: Ys, Yz, then (X, Xs, Xz) per operand. */
static bool op_qlinear_concat(ox_state *s)
{
    const int n = ((int)s->node->n_input - 2) / 3;
    if (n < 1 || (int)s->node->n_input != 2 + 3 * n) {
        ox_fail(s, "QLinearConcat takes Y_scale, Y_zero_point and triples (X, X_scale, X_zero_point)");
        return false;
    }
    const char **names = ax_alloc(s->ctx->arena, sizeof *names * (size_t)n);
    for (int k = 0; k < n; k++) {
        if (!quantised_input(s, 2 + 3 * k, 3 + 3 * k, 4 + 3 * k)) return false;
        names[k] = s->node->input[2 + 3 * k];
    }
    return as_float_op(s, "Concat", names, n, 0, 1);
}

static bool op_refused(ox_state *s)
{
    if (!strcmp(s->node->op_type, "DynamicQuantizeLinear"))
        ox_unsupported(s, "dynamic quantisation (scale and zero point computed at run time); quantise the "
                          "model statically (onnxruntime.quantization.quantize_static)");
    else
        ox_unsupported(s, "integer matmul/conv with int32 results as values (dynamic quantisation's "
                          "MatMulInteger/ConvInteger); quantise the model statically (QDQ or QLinearConv/QLinearMatMul)");
    return false;
}

static const struct {
    const char *name;
    ox_handler fn;
    bool microsoft;   /* in the com.microsoft domain (ONNX Runtime's contrib ops) */
} quant_rows[] = {
    {"QuantizeLinear", op_quantize_linear, false}, {"DequantizeLinear", op_dequantize_linear, false},
    {"QLinearConv", op_qlinear_conv, false}, {"QLinearMatMul", op_qlinear_matmul, false},
    {"QLinearAdd", op_qlinear_binary, true}, {"QLinearMul", op_qlinear_binary, true},
    {"QLinearGlobalAveragePool", op_qlinear_pool, true}, {"QLinearAveragePool", op_qlinear_pool, true},
    {"QLinearConcat", op_qlinear_concat, true}, {"QGemm", op_qgemm, true},
    {"DynamicQuantizeLinear", op_refused, false}, {"MatMulInteger", op_refused, false},
    {"ConvInteger", op_refused, false},
};

ox_handler ox_find_quant_op(const char *domain, const char *op_type)
{
    const bool microsoft = domain && !strcmp(domain, "com.microsoft");
    for (size_t i = 0; i < sizeof quant_rows / sizeof *quant_rows; i++)
        if (!strcmp(quant_rows[i].name, op_type) && (quant_rows[i].microsoft ? microsoft || !domain || !*domain : !microsoft))
            return quant_rows[i].fn;
    return NULL;
}

#endif
