/* pass_dtype.c — settles element types (docs/language.md#dtype-rules).
 *
 * Parameters and compute use the model dtype.  An input of another float
 * type gets a cast to the model dtype right after it, so no layer ever mixes
 * types; an input wider than the model is the spurious-promotion trap and
 * is handled per --eltype-mismatch (warn and convert, convert, refuse, or
 * promote the whole model).  Integer inputs are accepted only as Embedding
 * indices.  Runs after pass_shape, so casts get their shapes here.
 *
 * Float16/BFloat16 models (docs/precision.md) store parameters and the
 * activations between layers in the half type while the kernels accumulate
 * in Float32; their inputs and outputs keep the declared type: a Float32
 * input is the expected case (no promotion warning), and each output gets a
 * cast back to the type of the first float input (Float32 without one). */
#include "passes.h"
#include "ir_use.h"
#include "ir_interp.h"

#include <string.h>

/* Rank of float widths: F16 and BF16 < F32 < F64. */
static int float_width(axrt_dtype t)
{
    return t == AXRT_F64 ? 2 : t == AXRT_F32 ? 1 : 0;
}

static bool is_half(axrt_dtype t) { return t == AXRT_F16 || t == AXRT_BF16; }

/* The width an input is compared with: a half model's boundary is Float32. */
static int boundary_width(const ir_graph *g)
{
    const int w = float_width(g->dtype);
    return is_half(g->dtype) && w < 1 ? 1 : w;
}

/* The first node that consumes the input's values as a layer (not through
 * elementwise or shape-only ops), or the first consumer at all; -1 if the
 * input is unused. */
static int first_layer_consumer(const ir_graph *g, int input)
{
    bool *reaches = ax_alloc(g->ctx->arena, (size_t)g->nnodes * sizeof *reaches);
    reaches[input] = true;
    int first_consumer = -1;
    for (int id = input + 1; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        bool consumes = false;
        for (int i = 0; !n->dead && i < n->nsrc; i++)
            consumes |= n->src[i] != IR_NONE && reaches[n->src[i]];
        if (!consumes)
            continue;
        if (first_consumer < 0)
            first_consumer = id;
        ir_kind kind = ir_ops[n->op].kind;
        if (kind != IR_UNARY && kind != IR_BINARY && kind != IR_SHAPE)
            return id;
        reaches[id] = true;
    }
    return first_consumer;
}

/* "Dense '0'", "Dense", "matmul"; "its consumer" when there is none. */
static const char *consumer_text(const ir_graph *g, int id)
{
    if (id < 0)
        return "its consumer";
    const ir_node *n = &g->nodes[id];
    if (n->name && ir_ops[n->op].kind == IR_LAYER)
        return ax_sprintf(g->ctx->arena, "%s '%s'", ir_describe_ctor(g, n->op), n->name);
    return ir_describe_ctor(g, n->op);
}

/* "input 'x' is Float64 but model 'mlp' computes in Float32; Dense '0'
 * would promote every layer to Float64" */
static const char *promotion_text(const ir_graph *g, int input)
{
    const ir_node *in = &g->nodes[input];
    return ax_sprintf(g->ctx->arena,
                      "input '%s' is %s but model '%s' computes in %s; %s would promote every "
                      "layer to %s",
                      in->name, ir_dtype_name(in->dtype), g->name, ir_dtype_name(g->dtype),
                      consumer_text(g, first_layer_consumer(g, input)), ir_dtype_name(in->dtype));
}

/* Puts a cast to the model dtype right after the input and points every
 * consumer at it.  Graph outputs keep the input itself. */
static void insert_cast(ir_graph *g, int input)
{
    int cast = ir_insert(g, input + 1, IR_OP_cast, &input, 1, g->nodes[input].loc);
    ir_node *c = &g->nodes[cast];
    const ir_node *in = &g->nodes[input];
    c->dtype = g->dtype;
    c->rank = in->rank;
    memcpy(c->shape, in->shape, sizeof c->shape);
    for (int id = cast + 1; id < g->nnodes; id++) {
        ir_node *n = &g->nodes[id];
        for (int i = 0; i < n->nsrc; i++)
            if (n->src[i] == input)
                n->src[i] = cast;
    }
}

/* Every live reader of the integer input is an Embedding (or, in a
 * training graph, its gradient) reading it as its indices (operand 0) only. */
static bool integer_input_ok(const ir_graph *g, int input)
{
    ir_use u = {0};
    ir_use_compute(g, &u);
    bool ok = true;
    for (int k = 0; k < ir_use_nusers(&u, input) && ok; k++) {
        const ir_node *n = &g->nodes[ir_use_user(&u, input, k)];
        ok = (n->op == IR_OP_embedding || n->op == IR_OP_embedding_grad) && n->src[1] != input;
    }
    ir_use_free(&u);
    return ok;
}

/* Handles one input; returns the number of errors reported. */
static int settle_input(ir_graph *g, int input, eltype_mode mode)
{
    const ir_node *in = &g->nodes[input];
    if (in->dtype == g->dtype)
        return 0;
    if (!ir_dtype_is_float(in->dtype)) {
        if (integer_input_ok(g, input))
            return 0;
        ax_error(g->ctx, in->loc, "input '%s' is %s; integer inputs are only accepted as Embedding "
                 "indices", in->name, ir_dtype_name(in->dtype));
        return 1;
    }
    if (float_width(in->dtype) > boundary_width(g)) {
        if (mode == ELTYPE_ERROR) {
            ax_error(g->ctx, in->loc, "%s (--eltype-mismatch=error)", promotion_text(g, input));
            return 1;
        }
        if (mode == ELTYPE_WARN)
            ax_warning(g->ctx, in->loc, "%s \xe2\x80\x94 converting '%s' to %s at the boundary "
                       "(--eltype-mismatch=convert|error|promote)", promotion_text(g, input),
                       in->name, ir_dtype_name(g->dtype));
    }
    insert_cast(g, input);
    return 0;
}

/* PROMOTE: the model computes in the widest float type among its inputs. */
static void promote_model(ir_graph *g)
{
    for (int i = 0; i < g->ninputs; i++) {
        axrt_dtype t = g->nodes[g->inputs[i]].dtype;
        if (ir_dtype_is_float(t) && float_width(t) > boundary_width(g))
            g->dtype = t;
    }
}

/* A param that came with data (ONNX initializers) in another float type:
 * its values converted to the model dtype (rounded to nearest even). */
static void convert_param_data(ir_graph *g, ir_node *n)
{
    const size_t count = (size_t)ir_numel(n);
    void *data = ax_alloc(g->ctx->arena, count * axrt_dtype_size(g->dtype) + 1);
    for (size_t i = 0; i < count; i++)
        ir_element_set(data, g->dtype, (int64_t)i, ir_element_get(n->data, n->dtype, (int64_t)i));
    n->data = data;
    n->dtype = g->dtype;
}

/* Everything but inputs and casts takes the model dtype; params already
 * holding data keep theirs unless it is another float type. */
static void apply_model_dtype(ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++) {
        ir_node *n = &g->nodes[id];
        if (n->op == IR_OP_param && n->data) {
            if (ir_dtype_is_float(n->dtype) && n->dtype != g->dtype)
                convert_param_data(g, n);
            continue;
        }
        if (n->op == IR_OP_input || n->op == IR_OP_cast)
            continue;
        n->dtype = ir_integer_result(g, n) != AXRT_DTYPE_COUNT ? ir_integer_result(g, n) : g->dtype;
    }
}

/* Whether node n reads its operand i as integers: as Embedding indices, or
 * as a reshape that keeps them (ir_integer_result). */
static bool reads_integers(const ir_node *n, int i)
{
    return (n->op == IR_OP_embedding && i == 0) || n->op == IR_OP_reshape;
}

/* Computed integers (argmax's indices) that a float op reads are converted
 * to the model dtype first, as torch promotes an integer tensor that meets
 * a float one: one cast right after each such node, for the readers that
 * need it (graph outputs and integer readers keep the integers). */
static void convert_integer_operands(ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *v = &g->nodes[id];
        if (v->dead || ir_dtype_is_float(v->dtype) || ir_ops[v->op].kind == IR_SOURCE || v->op == IR_OP_cast)
            continue;
        int cast = IR_NONE;
        for (int user = id + 1; user < g->nnodes; user++) {
            for (int i = 0; i < g->nodes[user].nsrc; i++) {
                if (g->nodes[user].src[i] != id || g->nodes[user].dead || reads_integers(&g->nodes[user], i))
                    continue;
                if (cast == IR_NONE) {
                    cast = ir_insert(g, id + 1, IR_OP_cast, &id, 1, g->nodes[id].loc);
                    ir_node *c = &g->nodes[cast];
                    c->dtype = g->dtype;
                    c->rank = g->nodes[id].rank;
                    memcpy(c->shape, g->nodes[id].shape, sizeof c->shape);
                    user++;   /* it moved up by one */
                }
                g->nodes[user].src[i] = cast;
            }
        }
    }
}

/* The declared type a half model's outputs keep: the first float input's. */
static axrt_dtype boundary_dtype(const ir_graph *g)
{
    for (int i = 0; i < g->ninputs; i++)
        if (ir_dtype_is_float(g->nodes[g->inputs[i]].dtype))
            return g->nodes[g->inputs[i]].dtype;
    return AXRT_F32;
}

/* A cast to the boundary dtype after every output of a half model. */
static void cast_outputs(ir_graph *g)
{
    const axrt_dtype want = boundary_dtype(g);
    if (!is_half(g->dtype) || want == g->dtype)
        return;
    for (int i = 0; i < g->noutputs; i++) {
        int src = g->outputs[i];
        if (g->nodes[src].dtype == want || !ir_dtype_is_float(g->nodes[src].dtype))
            continue;
        int cast = ir_insert(g, g->nnodes, IR_OP_cast, &src, 1, g->nodes[src].loc);
        ir_node *c = &g->nodes[cast];
        c->dtype = want;
        c->rank = g->nodes[src].rank;
        memcpy(c->shape, g->nodes[src].shape, sizeof c->shape);
        g->outputs[i] = cast;
    }
}

int pass_dtype(ir_graph *g, eltype_mode mode)
{
    if (mode == ELTYPE_PROMOTE)
        promote_model(g);
    int errors = 0;
    /* Each cast shifts later ids by one; g->inputs is remapped by ir_insert. */
    for (int i = 0; i < g->ninputs; i++)
        errors += settle_input(g, g->inputs[i], mode);
    if (errors == 0) {
        apply_model_dtype(g);
        convert_integer_operands(g);
        cast_outputs(g);
    }
    return errors;
}
