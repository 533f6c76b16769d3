/* tflite_internal.h — what the TFLite importer's files share: the graph
 * walk (tflite_import.c), the operator handlers (tflite_ops.c) and the leaf
 * both build with (tflite_build.c: messages, tensors, nodes).  The walk
 * calls the handlers, both call the leaf, never the other way
 * (docs/internals.md#layers). */
#ifndef AX_TFLITE_INTERNAL_H
#define AX_TFLITE_INTERNAL_H

#include "tflite.h"
#include "tflite_reader.h"

typedef struct tfl_state {
    ax_ctx *ctx;
    ir_graph *g;
    onnx_infer_fn infer;
    int inferred;                 /* nodes of g whose shapes are inferred */
    const char *path;             /* the model file, for messages */
    const tfl_model *m;
    int *node;                    /* per tensor: its IR node, IR_NONE until computed */
    int *alias;                   /* per tensor: the constant a DEQUANTIZE of it names, or -1 */
    bool *off_grid;               /* per tensor: an int8 tensor whose node holds a float value that no
                                     operator has rounded to its grid yet (tflite_import.c track_off_grid) */
    int op_index;                 /* the operator being imported, -1: none */
    const tfl_op *op;
    int counter;                  /* generated parameter names */
} tfl_state;

/* BuiltinOperator codes mapped (the schema's values). */
enum {
    TFL_OP_ADD = 0, TFL_OP_AVERAGE_POOL_2D = 1, TFL_OP_CONCATENATION = 2, TFL_OP_CONV_2D = 3,
    TFL_OP_DEPTHWISE_CONV_2D = 4, TFL_OP_DEQUANTIZE = 6, TFL_OP_FULLY_CONNECTED = 9, TFL_OP_LOGISTIC = 14,
    TFL_OP_MAX_POOL_2D = 17, TFL_OP_MUL = 18, TFL_OP_RELU = 19, TFL_OP_RELU6 = 21, TFL_OP_RESHAPE = 22,
    TFL_OP_SOFTMAX = 25, TFL_OP_TANH = 28, TFL_OP_PAD = 34, TFL_OP_MEAN = 40, TFL_OP_QUANTIZE = 114
};

/* ---- tflite_build.c ---- */
/* Error at the current operator: "FILE: operator N (NAME): ...". */
void tfl_fail(tfl_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The name of builtin operator code ("CONV_2D", or "builtin operator 123"). */
const char *tfl_op_name(tfl_state *s, int32_t code);
/* Whether tensor index t is valid; reports it otherwise (what: who names it). */
bool tfl_check_tensor(tfl_state *s, int t, const char *what);
/* The element count of tensor x's static shape; -1 when a dim is negative or too large. */
int64_t tfl_element_count(const tfl_tensor *x);
/* Tensor index input i of the current operator, checked (-1: absent, allowed
 * only when optional); false after an error. */
bool tfl_input(tfl_state *s, int i, bool optional, int *tensor);
/* The tensor at index t (valid: checked by tfl_input or the graph walk). */
const tfl_tensor *tfl_tensor_at(const tfl_state *s, int t);
/* Whether tensor t's buffer index is valid (0: none); reports it otherwise. */
bool tfl_check_buffer(tfl_state *s, int t);
/* Whether tensor t holds constant data (a buffer with bytes). */
bool tfl_is_const(const tfl_state *s, int t);
/* Constant tensor t as doubles (dequantised with its own scales when int8/
 * uint8/int32 with scales; int32 without scales as integers): *count values;
 * NULL after an error (size mismatch, unsupported type). */
double *tfl_const_values(tfl_state *s, int t, int64_t *count);
/* The IR node computing tensor t (a constant becomes a param); IR_NONE after an error. */
int tfl_node(tfl_state *s, int t);
/* Sets tensor t's node to id, with t's quantisation parameters (an int8 or
 * uint8 tensor's scale and zero point) on it; false after an error. */
bool tfl_set(tfl_state *s, int t, int id);
/* The file's scale and zero point of a quantised tensor t into node id
 * (file_scale, file_zp); no-op for a float tensor. */
bool tfl_mark(tfl_state *s, int t, int id);
/* Node x of int8 tensor t, whose value may lie off t's grid (off_grid), as
 * TFLite's integers: an ADD of a zero; IR_NONE after an error. */
int tfl_on_grid(tfl_state *s, int x, int t);
/* Adds a node after inferring shapes; IR_NONE after an error. */
int tfl_add(tfl_state *s, ir_op op, const int *src, int nsrc, const ir_attrs *attrs);
/* A float param of these values and shape, its weight scales wscale[nwscale] (or NULL). */
int tfl_param(tfl_state *s, const double *values, int rank, const int64_t *shape, const float *wscale,
              int64_t nwscale);
int tfl_scalar(tfl_state *s, double value);
/* x reshaped to shape[rank]. */
int tfl_reshape(tfl_state *s, int x, const int64_t *shape, int rank);

/* ---- tflite_ops.c ---- */
typedef bool (*tfl_handler)(tfl_state *s);
/* The handler of builtin code, or NULL: unsupported. */
tfl_handler tfl_find_op(int32_t code);

#endif
