/* ir.h — the graph IR: a flat array of nodes in topological order, referring
 * to each other by integer id.  Every node carries a static shape, a dtype and
 * the source location it came from.  Op properties come from ops.def. */
#ifndef AX_IR_H
#define AX_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axrt.h"
#include "ax.h"

#define IR_MAX_RANK AXRT_MAX_RANK
#define IR_MAX_SRC 16
#define IR_NONE (-1)
/* The rank of a node whose value could not be built (marked by lowering, or
 * by pass_shape after reporting its error): pass_shape skips it and every
 * node depending on it without a further message. */
#define IR_FAILED_RANK (-1)

typedef enum ir_op {
#define OP(name, min, max, kind, inplace, shape, optional) IR_OP_##name,
#include "ops.def"
#undef OP
    IR_OP_COUNT
} ir_op;

typedef enum ir_kind { IR_SOURCE, IR_UNARY, IR_BINARY, IR_REDUCE, IR_SHAPE, IR_LAYER } ir_kind;

typedef struct ir_opinfo {
    const char *name;
    int min_src, max_src;
    ir_kind kind;
    bool can_inplace;
    unsigned optional;   /* bit i: operand i may be IR_NONE */
} ir_opinfo;

extern const ir_opinfo ir_ops[IR_OP_COUNT];

/* Initial value of a parameter when no --weights are given (interface.md §1). */
typedef enum ir_param_role {
    IR_PARAM_GLOROT = 0, /* weight matrices and kernels: Glorot-uniform */
    IR_PARAM_ZEROS,      /* biases, norm shifts, running means */
    IR_PARAM_ONES        /* norm scales, running variances */
} ir_param_role;

/* One step of a fused_elementwise program, evaluated per result element;
 * steps may only refer to earlier steps, and the last one is the result. */
typedef struct ir_fused_step {
    int op;          /* a UNARY ir_op but cast, a BINARY one, or IR_OP_scalar: the constant value */
    int arg[2];      /* >= 0: an earlier step; IR_FUSED_OPERAND(k): src[k] broadcast to the result */
    double value;    /* IR_OP_scalar: the constant; elu, leaky_relu: alpha */
} ir_fused_step;
#define IR_FUSED_OPERAND(k) (-1 - (k))
#define IR_FUSED_OPERAND_INDEX(arg) (-1 - (arg))

/* Operator attributes; which fields mean something depends on the op. */
typedef struct ir_attrs {
    int axis;                 /* softmax, log_softmax, sum/mean/maximum, concat: normalised to 0..rank-1 by pass_shape */
    int perm[IR_MAX_RANK];    /* transpose */
    int nperm;
    int64_t newshape[IR_MAX_RANK]; /* reshape as written (one -1 allowed); pass_shape resolves */
    int nnewshape;            /* 0 with flatten=true means Flatten(): [N, prod(rest)] */
    bool flatten;
    int kernel[2];            /* conv, pools: kh, kw */
    int stride[2];
    int dilation[2];
    int pad[4];               /* top, left, bottom, right */
    bool pad_same;            /* pass_shape computes pad[] */
    int groups;               /* conv */
    int heads;                /* mha */
    bool causal;              /* mha */
    double eps;               /* layernorm, batchnorm */
    double alpha;             /* leaky_relu, elu */
    double scalar;            /* scalar: the value */
    int act;                  /* IR_NONE, or a UNARY ir_op applied as an epilogue (set by fusion passes);
                                 leaky_relu/elu take attrs.alpha */
    int residual;             /* IR_NONE, or the index in src[] of a tensor of the result's shape
                                 added before the epilogue: y = act(op(...) + src[residual]).
                                 The residual operand is appended after the op's own operands
                                 (nsrc = max + 1); set by fusion passes */
    const ir_fused_step *steps; /* fused_elementwise: the program (context arena) */
    int nsteps;
    int parts;                /* chunk: parts asked for (torch.chunk's chunks) */
    int nresults;             /* multi-result producer: its number of results */
    int index;                /* result: which result of src[0] it is, 0-based */
    const int64_t (*strides)[IR_MAX_RANK]; /* fused_elementwise: row k (context arena) gives
                                 operand src[k] read at result index (i0, i1, ...) as its
                                 element sum(i_d * strides[k][d]) (0 = broadcast dim);
                                 set by pass_fuse_elementwise, which composes broadcasts,
                                 transposes and reshapes into them */
} ir_attrs;

/* Several results.  A node has one value; an op that computes several (a
 * chunk; later LayerNorm's mean and inverse deviation, an optimiser step) is
 * a producer followed by one `result` node per value: result k reads the
 * producer as its only operand and has attrs.index = k, and carries that
 * value's shape, dtype, buffer and name like any node.  The producer itself
 * has no value: nothing but result nodes may read it, it is never a graph
 * output and never in the arena (its shape is that of its operand, for
 * messages).  So passes that walk operands, uses and live ranges see only
 * ordinary single-valued nodes; only the kernel of the producer (interpreter,
 * back end) and the memory plan know that it writes its results' buffers,
 * which are therefore live from the producer on.  The verifier checks that
 * every result index of a live producer exists at most once. */
static inline bool ir_has_results(ir_op op) { return op == IR_OP_chunk; }

typedef struct ir_node {
    ir_op op;
    axrt_dtype dtype;
    int rank;
    int64_t shape[IR_MAX_RANK];
    int nsrc;
    int src[IR_MAX_SRC];
    ir_attrs attrs;
    ax_loc loc;
    const char *name;    /* param: state_dict name; input: argument name; else layer name or NULL */
    ir_param_role role;  /* param only */
    void *data;          /* param only: rank/shape elements of dtype, filled by weights.c */
    bool dead;           /* removed by a pass; skipped everywhere */
    bool derived;        /* param only: computed by a pass from the user's parameters (e.g. a
                            BatchNorm folded into a conv); not part of the state_dict, so
                            --save-weights writes the originals (kept, dead) instead */
    int64_t offset;      /* byte offset in the arena (pass_memplan), -1 = not in the arena */
    int64_t scratch_offset; /* arena offset of this node's scratch (ir_scratch_bytes > 0), else -1 */
} ir_node;

typedef struct ir_graph {
    const char *name;          /* model name = C symbol prefix */
    axrt_dtype dtype;          /* model dtype (parameters and compute) */
    const char *backend;       /* "c", "cuda", "hip" as the model's option says */
    ax_loc loc;
    ir_node *nodes;
    int nnodes, cap;
    /* The signature and the return list, of any length: arrays in the context
     * arena grown by ir_add_input/ir_add_output (the only writers of their
     * lengths); passes may rewrite the ids in place. */
    int *inputs;               /* node ids of IR_OP_input, signature order */
    int ninputs, inputs_cap;
    int *outputs;              /* node ids, return order */
    const char **output_names; /* outputs[i]'s name, or NULL */
    int noutputs, outputs_cap;
    size_t arena_bytes;        /* planned peak (pass_memplan), multiple of 64 */
    bool share_buffers;        /* the plan lets reshapes alias and in-place ops reuse their
                                  operand's buffer (pass_memplan_with) */
    ax_ctx *ctx;               /* owner: arena and diagnostics */
} ir_graph;

ir_graph *ir_graph_new(ax_ctx *ctx, const char *name, ax_loc loc);
/* Appends a node; returns its id.  Operands must already exist (ids < new id). */
int ir_add(ir_graph *g, ir_op op, const int *src, int nsrc, ax_loc loc);
/* Inserts a node at index pos (operands must be < pos), shifting later nodes
 * up by one and renumbering every operand, g->inputs and g->outputs that
 * referred to them.  Returns pos.  Used to put a cast right after an input. */
int ir_insert(ir_graph *g, int pos, ir_op op, const int *src, int nsrc, ax_loc loc);
/* Appends input node id to the signature. */
void ir_add_input(ir_graph *g, int id);
/* Appends node id, called name (may be NULL), to the return list. */
void ir_add_output(ir_graph *g, int id, const char *name);
/* Frees the nodes array (heap); the context arena owns everything else. */
void ir_graph_free_nodes(ir_graph *g);
static inline ir_node *ir_at(ir_graph *g, int id) { return &g->nodes[id]; }

/* Where result node r's value lies in its producer's operand along the
 * producer's axis: elements [*start, *start + *size) of that dimension. */
void ir_result_extent(const ir_graph *g, const ir_node *r, int64_t *start, int64_t *size);
/* The live result node k of multi-result producer id, or IR_NONE. */
int ir_result_node(const ir_graph *g, int id, int k);

int64_t ir_numel(const ir_node *n);
bool ir_same_shape(const ir_node *a, const ir_node *b);  /* same rank and dims */
int ir_output_index(const ir_graph *g, int id);           /* position among outputs, or -1 */
static inline bool ir_is_output(const ir_graph *g, int id) { return ir_output_index(g, id) >= 0; }
size_t ir_nbytes(const ir_node *n);
/* "[1, 784]" into buf (always NUL-terminated); returns buf. */
const char *ir_shape_str(const int64_t *shape, int rank, char *buf, size_t size);
const char *ir_dtype_name(axrt_dtype dtype);     /* "Float32" ... */
/* The .ax constructor of a layer op ("Dense", "Conv", ...), for messages;
 * the op name for ops that are not layers. */
const char *ir_layer_ctor(ir_op op);
/* Accepts long and short spellings; returns false for an unknown name. */
bool ir_dtype_parse(const char *name, axrt_dtype *out);

/* Scratch bytes the C backend's kernel for n needs while computing n (e.g.
 * attention's projections and scores); 0 for most ops.  pass_memplan gives
 * such a node a separate scratch buffer, live only while n is computed.
 * Implemented beside the backend (codegen/cg_scratch.c). */
size_t ir_scratch_bytes(const ir_node *n, const ir_graph *g);
/* Whether the C backend can compute n (a depthwise conv) over its own input
 * buffer (runtime axrt_dwconv_inplace_*): pass_memplan then lets it, when
 * that input dies at n, and ir_scratch_bytes gives it its ring of rows. */
bool ir_depthwise_inplace(const ir_node *n, const ir_graph *g);

/* Whether fused_elementwise n reads operand k at the result's own flat index
 * (its strides are the result's row-major strides, ignoring size-1 dims, and
 * it has the result's element count), so that a loop writing element o after
 * reading element o may overwrite it (pass_memplan's in-place rule). */
bool ir_fused_in_order(const ir_graph *g, const ir_node *n, int k);

/* Checks the structural invariants (operand counts and order, ranks, dtypes
 * of params, outputs exist).  Returns the number of problems, printed as
 * internal errors through ctx diagnostics. */
int ir_verify(const ir_graph *g);
/* Text dump as printed by --emit=ir. */
void ir_dump(const ir_graph *g, ax_buf *out);
/* Graphviz digraph as printed by --emit=dot (ir_dot.c). */
void ir_dump_dot(const ir_graph *g, ax_buf *out);

#endif
