/* onnx_ops.c — the table of ONNX op handlers (op_rows below: one row per
 * op type, its handler in the onnx_ops_*.c file of its family, declared in
 * onnx_ops.h) and the wording of messages about ONNX nodes.  Each handler
 * reads the current node's inputs and attributes (onnx_internal.h) and
 * defines its outputs, as IR nodes or, when every input is known at import,
 * as folded constants (shape arithmetic).  An attribute or case the IR
 * cannot express is a located "unsupported" error, never an approximation. */
#ifdef AXC_ONNX
#include <stdio.h>
#include <string.h>

#include "onnx_ops.h"

/* ---- the table ------------------------------------------------------------- */

typedef struct op_row { const char *name; ox_handler fn; } op_row;
static const op_row op_rows[] = {
    {"Constant", op_constant}, {"Shape", op_shape}, {"Size", op_size}, {"Identity", op_identity},
    {"Dropout", op_identity}, {"ConstantOfShape", op_constant_of_shape}, {"Range", op_range},
    {"Relu", op_unary}, {"Sigmoid", op_unary}, {"Tanh", op_unary}, {"Exp", op_unary},
    {"Log", op_unary}, {"Sqrt", op_unary}, {"Abs", op_unary}, {"Neg", op_unary}, {"Erf", op_unary},
    {"Softplus", op_unary}, {"Elu", op_unary}, {"LeakyRelu", op_unary}, {"Floor", op_unary},
    {"Ceil", op_unary}, {"Not", op_unary}, {"Reciprocal", op_unary}, {"Clip", op_clip},
    {"Sin", op_unary}, {"Cos", op_unary}, {"Tan", op_unary}, {"Asin", op_unary},
    {"Acos", op_unary}, {"Atan", op_unary}, {"Sinh", op_unary}, {"Cosh", op_unary},
    {"Asinh", op_unary}, {"Acosh", op_unary}, {"Atanh", op_unary}, {"Round", op_unary},
    {"Sign", op_unary}, {"Mish", op_unary}, {"Gelu", op_unary},
    {"Add", op_binary}, {"Sub", op_binary}, {"Mul", op_binary}, {"Div", op_binary},
    {"Pow", op_binary}, {"Equal", op_binary}, {"Less", op_binary}, {"Greater", op_binary},
    {"LessOrEqual", op_binary}, {"GreaterOrEqual", op_binary},
    {"And", op_binary}, {"Or", op_binary}, {"Mod", op_binary},
    {"Sum", op_variadic}, {"Mean", op_variadic}, {"Min", op_variadic}, {"Max", op_variadic},
    {"Cast", op_cast}, {"Reshape", op_reshape}, {"Flatten", op_reshape}, {"Squeeze", op_reshape},
    {"Unsqueeze", op_reshape}, {"Transpose", op_transpose}, {"Concat", op_concat},
    {"Gather", op_gather}, {"Slice", op_slice}, {"Split", op_split}, {"Expand", op_expand},
    {"Where", op_where}, {"MatMul", op_matmul}, {"Gemm", op_gemm}, {"Conv", op_conv},
    {"MaxPool", op_pool}, {"AveragePool", op_pool}, {"GlobalAveragePool", op_global_pool},
    {"GlobalMaxPool", op_global_pool}, {"BatchNormalization", op_batchnorm},
    {"Softmax", op_softmax}, {"LogSoftmax", op_softmax}, {"LayerNormalization", op_layernorm},
    {"ReduceMean", op_reduce}, {"ReduceSum", op_reduce}, {"ReduceMax", op_reduce},
    {"ReduceMin", op_reduce}, {"ReduceL1", op_reduce}, {"ReduceL2", op_reduce},
    {"ReduceSumSquare", op_reduce}, {"ReduceLogSum", op_reduce}, {"ReduceLogSumExp", op_reduce},
    {"ReduceProd", op_reduce}, {"ArgMax", op_argmax}, {"ArgMin", op_argmax},
    {"CumSum", op_cumsum}, {"Trilu", op_trilu}, {"LpNormalization", op_lpnorm},
    {"ThresholdedRelu", op_piecewise}, {"Shrink", op_piecewise}, {"Hardmax", op_hardmax},
    {"MeanVarianceNormalization", op_mvn}, {"RNN", op_rnn}, {"GRU", op_gru}, {"LSTM", op_lstm}, {"LRN", op_lrn}, {"Det", op_det},
    {"Softsign", op_composite}, {"Selu", op_composite}, {"Celu", op_composite},
    {"HardSigmoid", op_composite}, {"HardSwish", op_composite}, {"PRelu", op_composite},
    {"InstanceNormalization", op_instancenorm}, {"GroupNormalization", op_groupnorm}, {"Pad", op_pad}, {"CenterCropPad", op_center_crop_pad}, {"DepthToSpace", op_depth_space},
    {"SpaceToDepth", op_depth_space}, {"Tile", op_tile}, {"Resize", op_resize},
    {"Upsample", op_resize}, {"ConvTranspose", op_conv_transpose},
};

ox_handler ox_find_op(const char *op_type)
{
    for (size_t i = 0; i < sizeof op_rows / sizeof *op_rows; i++)
        if (!strcmp(op_rows[i].name, op_type)) return op_rows[i].fn;
    return NULL;
}

/* ---- wording: messages name ONNX nodes and op types ---------------------- */

static const char *onnx_ctor(ir_op op)
{
    switch (op) {
    case IR_OP_dense: return "Gemm";
    case IR_OP_matmul: return "MatMul";
    case IR_OP_conv: return "Conv";
    case IR_OP_layernorm: return "LayerNormalization";
    case IR_OP_batchnorm: return "BatchNormalization";
    case IR_OP_maxpool: return "MaxPool";
    case IR_OP_meanpool: return "AveragePool";
    case IR_OP_embedding: return "Gather";
    case IR_OP_reshape: return "Reshape";
    case IR_OP_transpose: return "Transpose";
    case IR_OP_concat: return "Concat";
    default: return (unsigned)op < IR_OP_COUNT ? ir_ops[op].name : "?";
    }
}

static const char *onnx_binary(ir_op op)
{
    switch (op) {
    case IR_OP_add: return "Add";
    case IR_OP_sub: return "Sub";
    case IR_OP_mul: return "Mul";
    case IR_OP_div: return "Div";
    case IR_OP_max: return "Max";
    case IR_OP_min: return "Min";
    default: return "?";
    }
}

/* "ONNX node Conv 'conv1'" (the importer names every node so). */
static void onnx_layer(const ir_graph *g, const ir_node *n, char *buf, size_t size)
{
    (void)g;
    if (n->name) snprintf(buf, size, "ONNX node %s", n->name);
    else snprintf(buf, size, "%s", onnx_ctor(n->op));
}

const ir_wording onnx_wording = {onnx_layer, onnx_ctor, onnx_binary};

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_left_out;
#endif
