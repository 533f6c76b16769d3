/* onnx_internal.h — what the ONNX importer's files share: the graph walk
 * (onnx_import.c), the op handlers (onnx_ops.c's table, onnx_ops_*.c through
 * onnx_ops.h, onnx_quant.c) and the leaves both build with (onnx_build.c:
 * values, messages, attributes, nodes; onnx_tensor.c: constants).  The walk
 * calls the handlers, both call the leaves, never the other way
 * (docs/internals.md#layers).  Only those files include it; it needs the
 * generated onnx.pb-c.h. */
#ifndef AX_ONNX_INTERNAL_H
#define AX_ONNX_INTERNAL_H

#include "onnx.h"
#include "onnx.pb-c.h"

/* The newest default-domain opset read: each mapped op follows its
 * semantics in every opset up to this one (or is refused where they changed
 * in a way not mapped). */
#define OX_MAX_OPSET 21

/* Constants folded at import have at most this many elements; larger
 * computed constants are an error (initializers may be larger). */
#define OX_MAX_FOLD ((int64_t)1 << 20)

/* A tensor known at import: an initializer, a Constant, or folded.  An
 * integer tensor's values are iv, exact in int64 (never through double:
 * INT64_MAX as a Slice end or a Trilu k stays INT64_MAX); v holds every
 * tensor's values as double for the float uses (params, scales). */
typedef struct ox_const {
    bool is_int;                  /* integer (or bool) element type */
    int rank;
    int64_t shape[IR_MAX_RANK];
    int64_t count;
    double *v;                    /* count values as double */
    int64_t *iv;                  /* count values when is_int, else NULL */
    int node;                     /* its param node once materialised, else IR_NONE */
    const float *qscale;          /* dequantised integers (onnx_quant.c): the file's scales, */
    int64_t nqscale;              /* one or one per output channel; qzero: zero points all 0 */
    bool qzero;
} ox_const;

/* An ONNX value: a constant, or an IR node.  nhwc: the node holds the
 * rank-4 NCHW tensor as NHWC (transposed); nchw caches its transposed
 * back node. */
typedef struct ox_val {
    const char *name;
    ox_const *c;
    int node;
    bool nhwc;
    int nchw;
} ox_val;

typedef struct ox_state {
    ax_ctx *ctx;
    ir_graph *g;
    onnx_infer_fn infer;
    const char *dir;              /* the model's directory, for external data */
    int64_t opset;
    ox_val *vals;                 /* open-addressing table by name */
    size_t cap, used;
    const Onnx__NodeProto *node;  /* the node being imported (messages) */
    const Onnx__GraphProto *graph; /* the graph being imported (declared shapes) */
    int counter;                  /* for generated parameter names */
    int inferred;                 /* nodes of g whose shapes are inferred (ox_add) */
    const char **read_names;      /* open-addressing set of the names nodes and outputs read */
    size_t read_cap;
    const onnx_input_shape *shapes; /* --shape, nshapes of them */
    int nshapes;
} ox_state;

/* ---- onnx_build.c ---- */
ox_val *ox_lookup(ox_state *s, const char *name);
/* Defines name (an output of the current node); returns its slot. */
ox_val *ox_define(ox_state *s, const char *name);
/* The value of input i of the current node; NULL when absent ("" or past
 * the end); an input that names no value is reported. */
ox_val *ox_input(ox_state *s, int i, bool *ok);
/* The set of names that gp's node inputs and graph outputs read, for
 * ox_value_used (once per graph, before its nodes). */
void ox_collect_used(ox_state *s, const Onnx__GraphProto *gp);
/* Whether a node input or a graph output names value name. */
bool ox_value_used(ox_state *s, const char *name);
/* Error at the current node: "node 'NAME' (OP): ...". */
void ox_fail(ox_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ox_unsupported(ox_state *s, const char *what);
/* Shape inference of the nodes of s->g added since the last call; nonzero
 * after an error. */
int ox_infer_new_nodes(ox_state *s);
/* Adds a node after inferring shapes; IR_NONE after an error. */
int ox_add(ox_state *s, ir_op op, const int *src, int nsrc, const ir_attrs *attrs);
/* transpose(x, perm), composed with x's own transpose; x when the identity. */
int ox_transpose(ox_state *s, int x, const int *perm, int rank);
/* The node of value v in logical (ONNX) layout; constants become params. */
int ox_node(ox_state *s, ox_val *v);
/* The node of rank-4 value v as NHWC. */
int ox_node_nhwc(ox_state *s, ox_val *v);
/* The static shape the model declares for value name (a graph output or a
 * value_info entry) into shape: its rank, or -1 when none is declared. */
int ox_declared_shape(ox_state *s, const char *name, int64_t *shape);
/* The logical shape of v. */
int ox_shape(ox_state *s, ox_val *v, int64_t *shape);
/* A scalar node (rank 0) of this value. */
int ox_scalar(ox_state *s, double value);
/* A float param holding values (count elements) of this shape; named what
 * (NULL: a generated name), with the file's weight scales when value what
 * holds dequantised integers. */
int ox_param(ox_state *s, const double *values, int rank, const int64_t *shape, const char *what);

/* Attributes of the current node. */
const Onnx__AttributeProto *ox_attr(ox_state *s, const char *name);
int64_t ox_attr_int(ox_state *s, const char *name, int64_t dflt);
double ox_attr_float(ox_state *s, const char *name, double dflt);
const char *ox_attr_str(ox_state *s, const char *name, const char *dflt);
/* ints attribute into out (at most max); returns the count or -1 if absent. */
int ox_attr_ints(ox_state *s, const char *name, int64_t *out, int max);

/* ---- onnx_tensor.c ---- */
ox_const *ox_const_new(ox_state *s, bool is_int, int rank, const int64_t *shape);
/* Element i of integer constant c set to x (iv exact, v its double). */
void ox_set_int(ox_const *c, int64_t i, int64_t x);
/* Element si of src copied to element di of dst (the same is_int). */
void ox_copy_elem(ox_const *dst, int64_t di, const ox_const *src, int64_t si);
/* Element i of c as an int64: exact for an integer tensor; a float one
 * truncated when finite and in range, else a located error and false. */
bool ox_int_at(ox_state *s, const ox_const *c, int64_t i, int64_t *out);
/* x truncated to int64 when it is finite and in range (no undefined
 * conversion), else false. */
bool ox_double_to_int(double x, int64_t *out);
/* A TensorProto into a constant (bounded; external data read from s->dir). */
ox_const *ox_tensor(ox_state *s, const Onnx__TensorProto *t);

/* ---- onnx_ops.c ---- */
typedef bool (*ox_handler)(ox_state *s);
/* The handler of float op op_type, or NULL (onnx_import.c then asks
 * onnx_quant.c's table). */
ox_handler ox_find_op(const char *op_type);
extern const ir_wording onnx_wording;

/* ---- onnx_quant.c ---- */
/* The handler of quantised op op_type of domain ("" or NULL: the default,
 * where ONNX Runtime's com.microsoft QLinear ops are also found), or NULL. */
ox_handler ox_find_quant_op(const char *domain, const char *op_type);

#endif
