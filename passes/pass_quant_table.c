/* pass_quant_table.c — TensorFlow Lite's int8 LOGISTIC, TANH and SOFTMAX as
 * LiteRT computes them (docs/tflite.md, measured against LiteRT 2.3's
 * reference kernels on every input integer): tables made here, at compile
 * time, in float32 operations in LiteRT's order (expf, tanhf, roundf: what
 * its std::exp, std::tanh and std::round on float call), so that the host
 * and a Cortex-M read the same constants (runtime/axrt.h axrt_lookup_q8,
 * axrt_softmax_q8).  C11 float arithmetic without contraction (-std=c11):
 * each operation rounds to float as LiteRT's does. */
#include <math.h>

#include "passes.h"

/* LiteRT's LUTPopulate: for each input integer v, f(s_in (v - zp_in))
 * times 1 / s_out, rounded half away, plus zp_out, clamped to int8. */
void pass_quant_lookup_table(ir_op op, float s_in, int32_t zp_in, float s_out, int32_t zp_out, int32_t *table)
{
    const float inverse = 1.0f / s_out;
    for (int32_t v = -128; v <= 127; v++) {
        const float x = s_in * (float)(v - zp_in);
        const float f = op == IR_OP_tanh ? tanhf(x) : 1.0f / (1.0f + expf(-x));
        const float q = roundf(f * inverse) + (float)zp_out;
        table[v + 128] = q < -128.0f ? -128 : q > 127.0f ? 127 : (int32_t)q;
    }
}

/* LiteRT's PopulateSoftmaxLookupTable: table[255 - v] = expf(-s_in beta v),
 * the scale -s_in beta rounded to float first. */
void pass_quant_exp_table(float s_in, float beta, float *table)
{
    const float scale = -s_in * beta;
    for (int v = 0; v <= 255; v++)
        table[255 - v] = expf(scale * (float)v);
}

/* Whether node id's only live reader is node `reader`. */
static bool read_only_by(const ir_graph *g, int id, int reader)
{
    if (ir_is_output(g, id)) return false;
    for (int k = id + 1; k < g->nnodes; k++)
        for (int i = 0; !g->nodes[k].dead && i < g->nodes[k].nsrc; i++)
            if (g->nodes[k].src[i] == id && k != reader) return false;
    return true;
}

double pass_quant_fold_beta(ir_graph *g, ir_node *n, const double *lo)
{
    if (!g->tflite_arith || n->op != IR_OP_softmax || n->dead || n->attrs.axis != n->rank - 1) return 1;
    const int id = (int)(n - g->nodes), m = n->src[0];
    ir_node *mul = &g->nodes[m];
    if (mul->op != IR_OP_mul || mul->dead || mul->nsrc != 2 || mul->file_scale > 0 || !read_only_by(g, m, id))
        return 1;
    ir_node *beta = &g->nodes[mul->src[1]], *x = &g->nodes[mul->src[0]];
    if (beta->op != IR_OP_scalar || isnan(lo[id]) || isnan(lo[mul->src[0]]) || !ir_same_shape(x, n)) return 1;
    n->src[0] = mul->src[0];
    mul->dead = true;
    if (read_only_by(g, mul->src[1], m)) beta->dead = true;
    return beta->attrs.scalar;
}
