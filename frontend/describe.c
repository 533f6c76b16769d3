/* describe.c — how messages of the middle end name a node in .ax terms
 * ("Dense(784 => 256)", "Conv 'stem' ((3, 3), 3 => 16)", ".*"): the .ax
 * front end's ir_wording, hung on every graph it lowers.  Another front end
 * (ONNX) brings its own, so a malformed Gemm is not reported as a Dense. */
#include <stdio.h>

#include "lower.h"

static int64_t dim(const ir_node *n, int i)
{
    return n && i >= 0 && i < n->rank ? n->shape[i] : 0;
}

static const char *ax_ctor(ir_op op)
{
    switch (op) {
    case IR_OP_dense: return "Dense";
    case IR_OP_conv: return "Conv";
    case IR_OP_layernorm: return "LayerNorm";
    case IR_OP_batchnorm: return "BatchNorm";
    case IR_OP_maxpool: return "MaxPool";
    case IR_OP_meanpool: return "MeanPool";
    case IR_OP_globalmeanpool: return "GlobalMeanPool";
    case IR_OP_mha: return "MultiHeadAttention";
    case IR_OP_embedding: return "Embedding";
    case IR_OP_gru: return "GRU";
    case IR_OP_lstm: return "LSTM";
    default: return (unsigned)op < IR_OP_COUNT ? ir_ops[op].name : "?";
    }
}

/* The constructor arguments of a layer as written in .ax, from its params. */
static void ax_layer_args(const ir_graph *g, const ir_node *n, char *buf, size_t size)
{
    const int wk = n->op == IR_OP_mha ? 3 : 1;
    const ir_node *w = n->nsrc > wk && n->src[wk] != IR_NONE ? &g->nodes[n->src[wk]] : NULL;
    const int *k = n->attrs.kernel;
    switch (n->op) {
    case IR_OP_dense: /* weight [out, in] */
        snprintf(buf, size, "(%lld => %lld)", (long long)dim(w, 1), (long long)dim(w, 0));
        break;
    case IR_OP_embedding: /* weight [vocab, dim] */
        snprintf(buf, size, "(%lld => %lld)", (long long)dim(w, 0), (long long)dim(w, 1));
        break;
    case IR_OP_conv:
        snprintf(buf, size, "((%lld, %lld), %lld => %lld)", (long long)dim(w, 2),
                 (long long)dim(w, 3), (long long)(dim(w, 1) * n->attrs.groups),
                 (long long)dim(w, 0));
        break;
    case IR_OP_layernorm: case IR_OP_batchnorm:
        snprintf(buf, size, "(%lld)", (long long)dim(w, 0));
        break;
    case IR_OP_maxpool: case IR_OP_meanpool:
        snprintf(buf, size, "((%d, %d))", k[0], k[1]);
        break;
    case IR_OP_mha:
        snprintf(buf, size, "(%lld => %d)", (long long)dim(w, 1), n->attrs.heads);
        break;
    case IR_OP_gru: case IR_OP_lstm: /* weight_ih [G*hidden, in]: this layer's own in */
        snprintf(buf, size, "(%lld => %lld)", (long long)dim(w, 1),
                 (long long)(dim(w, 0) / (n->op == IR_OP_lstm ? 4 : 3)));
        break;
    default:
        snprintf(buf, size, "()");
        break;
    }
}

/* Positional names ("0", "1.2") are not worth showing; labels are. */
static bool is_label(const char *name)
{
    if (!name || !*name)
        return false;
    for (const char *c = name; *c; c++)
        if ((*c < '0' || *c > '9') && *c != '.')
            return true;
    return false;
}

/* "Dense(784 => 256)", or "Dense 'fc1' (784 => 256)" for a labelled layer. */
static void ax_layer(const ir_graph *g, const ir_node *n, char *buf, size_t size)
{
    char args[96];
    ax_layer_args(g, n, args, sizeof args);
    if (is_label(n->name))
        snprintf(buf, size, "%s '%s' %s", ax_ctor(n->op), n->name, args);
    else
        snprintf(buf, size, "%s%s", ax_ctor(n->op), args);
}

/* .ax spells elementwise products and quotients with dots; the other
 * binary ops are functions (clamp the pair clamp_min, clamp_max). */
static const char *ax_binary_symbol(ir_op op)
{
    switch (op) {
    case IR_OP_add: return "+";
    case IR_OP_sub: return "-";
    case IR_OP_mul: return ".*";
    case IR_OP_div: return "./";
    case IR_OP_pow: return ".^";
    case IR_OP_clamp_min: case IR_OP_clamp_max: return "clamp";
    default: return (unsigned)op < IR_OP_COUNT ? ir_ops[op].name : "?";
    }
}

const ir_wording lower_ax_wording = {ax_layer, ax_ctor, ax_binary_symbol};
