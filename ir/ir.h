/* ir.h — the graph IR: a flat array of nodes in topological order, referring
 * to each other by integer id.  Every node carries a static shape, a dtype and
 * the source location it came from.  Op properties come from ops.def. */
#ifndef AX_IR_H
#define AX_IR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "axrt.h"
#include "ax.h"
#include "ir_plan.h"

#define IR_MAX_RANK AXRT_MAX_RANK
/* A node takes any number of operands: its src array lies in the context
 * arena with room for at least IR_SRC_ROOM ids (so a pass may append an
 * operand in place up to that: an epilogue's residual), exactly nsrc when more. */
#define IR_SRC_ROOM 16
/* ops.def's max column for an op with no upper bound on its operands (concat). */
#define IR_SRC_UNBOUNDED INT_MAX
/* The most operands pass_fuse_elementwise gives one fused_elementwise node
 * (its budget, not a limit on the user's graph); the back ends size their
 * per-operand tables by it. */
#define IR_MAX_FUSED_SRC 16
#define IR_NONE (-1)
/* The rank of a node whose value could not be built (marked by lowering, or
 * by pass_shape after reporting its error): pass_shape skips it and every
 * node depending on it without a further message. */
#define IR_FAILED_RANK (-1)

typedef enum ir_op {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) IR_OP_##name,
#include "ops.def"
#undef OP
    IR_OP_COUNT
} ir_op;

typedef enum ir_kind { IR_SOURCE, IR_UNARY, IR_BINARY, IR_REDUCE, IR_SHAPE, IR_LAYER } ir_kind;

/* ops.def's inplace column (see there). */
typedef enum ir_inplace { IR_INPLACE_NO, IR_INPLACE_ALIAS, IR_INPLACE_SAME, IR_INPLACE_TARGET } ir_inplace;

/* ops.def's flags column. */
enum { IR_VARIADIC = 1u << 0, IR_EPILOGUE = 1u << 1, IR_ACT = 1u << 2 };

typedef struct ir_opinfo {
    const char *name;
    int min_src, max_src;
    ir_kind kind;
    ir_inplace inplace;
    unsigned optional;   /* bit i: operand i may be IR_NONE */
    unsigned flags;      /* IR_VARIADIC | IR_EPILOGUE | IR_ACT */
} ir_opinfo;

extern const ir_opinfo ir_ops[IR_OP_COUNT];

/* Whether op (any int, e.g. attrs.act) is an ir_op with flag in ops.def. */
static inline bool ir_op_has(int op, unsigned flag)
{
    return op >= 0 && op < IR_OP_COUNT && (ir_ops[op].flags & flag) != 0;
}

/* The code generators (targets.def). */
typedef enum ir_target_id {
#define TARGET(name) IR_TARGET_##name,
#include "targets.def"
#undef TARGET
    IR_TARGET_COUNT
} ir_target_id;

typedef struct ir_target_info {
    const char *name;   /* the rest of the row: codegen's cg_target */
} ir_target_info;
extern const ir_target_info ir_targets[IR_TARGET_COUNT];
/* The target named name, or IR_TARGET_COUNT. */
ir_target_id ir_target_parse(const char *name);
/* Every target's name in table order: ir_target_list(a, ", ", " or ") gives
 * "c, cuda, hip or llvm" for messages, (a, "|", "|") "c|cuda|hip|llvm". */
const char *ir_target_list(ax_arena *a, const char *sep, const char *last);

typedef struct ir_node ir_node;
typedef struct ir_graph ir_graph;

/* What the middle end asks of the back end it compiles for: the facts of
 * its kernels that the memory plan needs.  Each target implements them
 * (codegen/cg_target.h); the driver hangs the chosen target's on the graph
 * (ir_graph.target) before the passes run. */
typedef struct ir_target {
    ir_target_id id;
    /* Workspace bytes n's kernel needs while computing n (attention's
     * projections, a depthwise ring of rows); 0 for most ops.  The plan
     * gives it a scratch buffer live only at n. */
    size_t (*scratch_bytes)(const ir_node *n, const ir_graph *g);
    /* For ops whose ops.def inplace column is TARGET: whether n's kernel may
     * write its result over operand k (same bytes, dying at n). */
    bool (*can_inplace)(const ir_node *n, const ir_graph *g, int k);
    /* Whether it has GRU/LSTM kernels; without, the driver unrolls them
     * into primitive ops (pass_unroll_rnn). */
    bool rnn_kernels;
    /* Whether its kernels can compute conv `producer` a few rows at a time
     * inside conv `consumer`, its only reader (a 1x1 expansion inside its
     * depthwise conv, or that depthwise conv inside its 1x1 projection), so
     * that the producer's value never exists whole
     * (pass_fuse_expand_depthwise); NULL: never. */
    bool (*fuse_rows)(const ir_node *producer, const ir_node *consumer, const ir_graph *g);
    /* Whether its kernels can run conv `consumer` on mul `scale`'s operand 0
     * with its weight scaled per input channel by the mul's operand 1, and
     * that pays (pass_fuse_input_scale); NULL: never. */
    bool (*fold_input_scale)(const ir_node *scale, const ir_node *consumer, const ir_graph *g);
} ir_target;

/* How a parameter is stored by the back end (ir_node.layout, chosen by
 * codegen's cg_select): as written, or pre-packed at compile time in the
 * runtime's panel order (axrt.h AXRT_PANEL) for its packed kernels. */
typedef enum ir_layout {
    IR_LAYOUT_PLAIN, IR_LAYOUT_DENSE, IR_LAYOUT_CONV, IR_LAYOUT_DEPTHWISE, IR_LAYOUT_MHA_IN,
    IR_LAYOUT_MHA_OUT,
    IR_LAYOUT_GROUPED, /* a grouped conv's weight, group by group (ir_node.layout_groups) */
    IR_LAYOUT_WINOGRAD,  /* a 3x3 conv's weight transformed for Winograd F(4x4, 3x3) */
    IR_LAYOUT_WINOGRAD2, /* ... for F(2x2, 3x3) */
    IR_LAYOUT_COUNT
} ir_layout;
extern const char *const ir_layout_names[IR_LAYOUT_COUNT];

/* --conv-algo: AUTO (the default) lets a cost model pick Winograd F(4x4,3x3)
 * for the 3x3 stride-1 convs where it wins; DIRECT never, WINOGRAD F(4x4,3x3)
 * and WINOGRAD2 F(2x2,3x3) (the smaller error) wherever they apply. */
typedef enum ir_conv_algo {
    IR_CONV_AUTO, IR_CONV_DIRECT, IR_CONV_WINOGRAD, IR_CONV_WINOGRAD2, IR_CONV_ALGO_COUNT
} ir_conv_algo;
extern const char *const ir_conv_algo_names[IR_CONV_ALGO_COUNT]; /* as --conv-algo spells them */

/* How messages of the middle end name a node the way the user wrote it.
 * The front end that built the graph hangs its own on it (the .ax one:
 * frontend/describe.c); without one, messages use IR op names. */
typedef struct ir_wording {
    /* "Dense(784 => 256)", "Dense 'fc1' (784 => 256)" into buf */
    void (*layer)(const ir_graph *g, const ir_node *n, char *buf, size_t size);
    const char *(*ctor)(ir_op op);          /* "Dense" */
    const char *(*binary_symbol)(ir_op op); /* ".*" */
} ir_wording;

/* Initial value of a parameter when no --weights are given (docs/cli.md#parameters). */
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

/* upsample's attrs.mode: torch.nn.Upsample(mode=..., align_corners=...);
 * the same numbers as the runtime kernel's mode argument. */
typedef enum ir_upsample_mode {
    IR_UPSAMPLE_NEAREST = 0,
    IR_UPSAMPLE_BILINEAR = 1,        /* align_corners=False, PyTorch's default */
    IR_UPSAMPLE_BILINEAR_CORNERS = 2 /* align_corners=True */
} ir_upsample_mode;

/* Operator attributes; which fields mean something depends on the op. */
typedef struct ir_attrs {
    int axis;                 /* softmax, log_softmax, sum/mean/maximum, concat: normalised to 0..rank-1 by pass_shape */
    int perm[IR_MAX_RANK];    /* transpose */
    int nperm;
    int64_t newshape[IR_MAX_RANK]; /* reshape as written (one -1 allowed; 0 see zero_copies);
                                 pass_shape resolves */
    int nnewshape;
    bool zero_copies;         /* reshape: a newshape 0 is the input's dim at that index (set
                                 only by lowered layers; otherwise 0 is an error) */            /* 0 with flatten=true means Flatten(): [N, prod(rest)] */
    bool flatten;
    int64_t begin[IR_MAX_RANK]; /* slice: per dim, as written (negative from the end;
                                 INT64_MIN: from the start); pass_shape clamps to 0..size */
    int64_t end[IR_MAX_RANK]; /* slice: exclusive (INT64_MAX: to the end); clamped likewise */
    int64_t step[IR_MAX_RANK]; /* slice: > 0 */
    int nslice;               /* slice: dims given (the others are whole); pass_shape: rank */
    int64_t split_total;      /* slice from split(x, sizes; dims=axis): the sizes' sum, which
                                 must equal the axis (checked by pass_shape, then cleared) */
    int squeeze[IR_MAX_RANK]; /* reshape (keepdims=false): size-1 axes of the input to drop,
                                 negative from the end; pass_shape turns them into newshape */
    int nsqueeze;
    int kernel[2];            /* conv, pools: kh, kw */
    int stride[2];
    int dilation[2];
    int pad[4];               /* top, left, bottom, right */
    bool pad_same;            /* pass_shape computes pad[] */
    bool ceil;                /* maxpool: ceil mode (PyTorch ceil_mode=True); pass_shape widens
                                 pad[2], pad[3] by the extra rows and columns it needs */
    int ceil_extra[2];        /* pools in ceil mode: how much of pad[2], pad[3] ceil mode added
                                 (not counted in a mean's divisor, as PyTorch) */
    bool exclude_pad;         /* meanpool: count_include_pad=false (divide by real pixels) */
    bool adaptive;            /* meanpool: kernel[] holds the output size (h, w) until pass_shape
                                 turns it into kernel = stride = input / output */
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
    int scale[2];             /* upsample: integer factors (h, w) */
    int out_pad[2];           /* conv_transpose: output_padding (h, w) */
    bool reverse;             /* gru, lstm: the sequence runs from its last step to its first */
    bool linear_before_reset; /* gru: r multiplies (W_hn h + b_hn), as PyTorch (true) */
    bool cell;                /* lstm: the result holds each step's cell state c, not h */
    int mode;                 /* upsample: an ir_upsample_mode */
    int nresults;             /* multi-result producer: its number of results */
    int index;                /* result: which result of src[0] it is, 0-based */
    int of_op;                /* unary_grad: the UNARY ir_op whose derivative it applies */
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

struct ir_node {
    ir_op op;
    axrt_dtype dtype;
    int rank;
    int64_t shape[IR_MAX_RANK];
    int nsrc;
    int *src;            /* nsrc operand ids (IR_SRC_ROOM above).  A node copied by value
                            shares its copy's array: call ir_own_operands on the copy
                            before changing either's operands */
    ir_attrs attrs;
    ax_loc loc;
    const char *name;    /* param: state_dict name; input: argument name; else layer name or NULL */
    ir_param_role role;  /* param only */
    void *data;          /* param only: rank/shape elements of dtype, filled by weights.c */
    bool dead;           /* removed by a pass; skipped everywhere */
    bool recomputed;     /* a copy pass_remat made of an earlier node, to free memory */
    int live_until;      /* > 0: the back end reads the value up to after this node index
                            though no IR node does (a gradient the training step's optimizer
                            update consumes); pass_memplan keeps it live that long */
    bool derived;        /* param only: computed by a pass from the user's parameters (e.g. a
                            BatchNorm folded into a conv); not part of the state_dict, so
                            --save-weights writes the originals (kept, dead) instead */
    int64_t offset;      /* byte offset in the arena (pass_memplan), -1 = not in the arena */
    int64_t scratch_offset; /* arena offset of this node's scratch (target scratch_bytes > 0), else -1 */
    bool rows_fused;     /* computed row by row inside its only reader, a depthwise conv,
                            or (a depthwise conv itself) band by band inside its 1x1
                            projection (pass_fuse_expand_depthwise): no buffer, no code
                            of its own */
    bool scale_folded;   /* a mul x .* s (s one value per channel of x, per image) whose only
                            reader, a groups=1 conv, scales its packed weight by s and reads x
                            instead (pass_fuse_input_scale): no buffer, no code of its own */
    bool int8_apart;     /* a residual add (and its ReLU/ReLU6) that pass_fuse_residual left
                            apart from an int8 layer under --quantize: int8 runs it as a node
                            of its own, so no fused elementwise loop takes it */
    int inplace_of;      /* operand index whose buffer the result overwrites (pass_memplan's
                            in-place decision; every back end reads it), else IR_NONE */
    ir_layout layout;    /* param only: how the back end stores it (cg_select) */
    int layout_groups;   /* param in IR_LAYOUT_GROUPED: its convs' groups */
    const ax_context *context; /* the block instance it was written in (docs/language.md#composition), or NULL */
    const struct ir_quant *quant; /* --quantize=int8: how this dense or conv runs in int8 */
    float file_scale;    /* > 0: a quantised model file (ONNX QuantizeLinear, QLinear*) gives this
                            value's int8 scale and zero point (uint8 zero points less 128);
                            pass_quant uses them instead of calibrated ranges */
    int32_t file_zp;
    const float *file_wscale; /* param only: the file's weight scales, one (per tensor) or one
                                 per output channel (nfile_wscale); NULL: axc's own */
    int64_t nfile_wscale;
    const ir_plan *plan; /* the runtime calls it becomes (codegen/cg_plan.c, after cg_select),
                            or NULL where its back end lowers it itself */
};

/* A dense or conv computed in int8 (passes/pass_quant.c; runtime/axrt.h "int8"):
 * operand 0 quantised with (in_scale, in_zp), weights per output channel,
 * requantised to (out_scale, out_zp) clamped to [lo, hi] (a fused ReLU/ReLU6),
 * or, with float_out (a fused residual follows), scaled to float by fscale.
 * in_q8: operand 0 arrives already quantised (its producer's out_q8, the same
 * scale and zero point); out_q8: the result is stored as q + 128 in uint8, one
 * byte per element (ir_value_bytes), because every reader is an in_q8 layer. */
typedef struct ir_quant {
    float in_scale, out_scale;
    int32_t in_zp, out_zp, lo, hi;
    bool float_out, in_q8, out_q8;
    bool tflite_rounding; /* requantise as TFLite's reference kernels (AXRT_Q8_TFLITE): a model
                             imported from .tflite */
    int64_t nw, nout;
    int8_t *w;        /* [out, in] or [oc, kh, kw, c / groups] */
    int32_t *bias, *mult;
    int8_t *shift;
    float *fscale;
    /* add, concat, ReLU/ReLU6 in int8 (no weights): nin operands, operand k
       quantised with (in_scales[k], in_zps[k]) and arriving int8 when bit k
       of in_q8_mask is set (bit 0 is in_q8); ew[k] (concat: one per operand,
       else ew[0]) the runtime's fixed-point parameters, out_q8 in them */
    int nin;
    float *in_scales;
    int32_t *in_zps;
    uint32_t in_q8_mask;
    axrt_ew_q8 *ew;
    /* a windowed mean-pool: axrt_meanpool_q8's window table, nwindow int32 */
    int32_t *window;
    int nwindow;
    /* a model imported from .tflite (pass_quant_table.c): a sigmoid's or
       tanh's 256 results (axrt_lookup_q8's table, by input byte), a
       softmax's 256 float exponentials (axrt_softmax_q8's table); NULL else */
    int32_t *lookup;
    float *exp_table;
} ir_quant;

struct ir_graph {
    const char *name;          /* model name = C symbol prefix */
    axrt_dtype dtype;          /* model dtype (parameters and compute) */
    ir_target_id backend;      /* the model's backend= option (IR_TARGET_c by default) */
    const ir_wording *wording; /* the front end's names for messages (NULL: op names) */
    const ir_target *target;   /* the back end compiled for, set by the driver before the
                                  passes; NULL: no scratch and no TARGET in-place (tests) */
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
    bool tflite_arith;         /* imported from .tflite: its int8 nodes compute as TensorFlow
                                  Lite's reference kernels (ir_quant.tflite_rounding) */
    ir_conv_algo conv_algo;    /* --conv-algo: which 3x3 stride-1 convs run Winograd
                                  (codegen/cg_select.c cg_conv_winograd) */
    ax_ctx *ctx;               /* owner: arena and diagnostics */
};

ir_graph *ir_graph_new(ax_ctx *ctx, const char *name, ax_loc loc);
/* Appends a node; returns its id.  Operands must already exist (ids < new id). */
int ir_add(ir_graph *g, ir_op op, const int *src, int nsrc, ax_loc loc);
/* Appends a Float32 rank-0 constant (IR_OP_scalar) holding value; returns its id. */
int ir_add_scalar(ir_graph *g, double value, ax_loc loc);
/* An importer's node: appends op over src (attrs, or unset ones, and name)
 * as Float32, shape not yet inferred; returns IR_NONE, adding nothing,
 * where an operand the op requires is IR_NONE (a failed import before). */
int ir_add_imported(ir_graph *g, ir_op op, const int *src, int nsrc, const ir_attrs *attrs, const char *name);
/* Appends a Float32 parameter named name of shape[0..rank) holding values
 * (rounded to float, copied into the graph's arena; an importer's constant,
 * role IR_PARAM_ZEROS); returns its id. */
int ir_add_param_data(ir_graph *g, const char *name, const double *values, int rank, const int64_t *shape);
/* Inserts a node at index pos (operands must be < pos), shifting later nodes
 * up by one and renumbering every operand, g->inputs and g->outputs that
 * referred to them.  Returns pos.  Used to put a cast right after an input. */
int ir_insert(ir_graph *g, int pos, ir_op op, const int *src, int nsrc, ax_loc loc);
/* Gives node n operands src[0..nsrc) in a fresh array of its own (any nsrc). */
void ir_set_operands(const ir_graph *g, ir_node *n, const int *src, int nsrc);
/* Gives node n (a copy of another by value) its own copy of its operand array. */
void ir_own_operands(const ir_graph *g, ir_node *n);
/* Appends input node id to the signature. */
void ir_add_input(ir_graph *g, int id);
/* Appends node id, called name (may be NULL), to the return list. */
void ir_add_output(ir_graph *g, int id, const char *name);
/* Frees the nodes array (heap); the context arena owns everything else. */
void ir_graph_free_nodes(ir_graph *g);
static inline ir_node *ir_at(ir_graph *g, int id) { return &g->nodes[id]; }
/* Whether n runs inside its reader (rows_fused, scale_folded): no buffer,
 * no code, no profiled layer of its own; its operands are read at its reader. */
static inline bool ir_runs_in_reader(const ir_node *n) { return n->rows_fused || n->scale_folded; }

/* Where result node r's value lies in its producer's operand along the
 * producer's axis: elements [*start, *start + *size) of that dimension. */
void ir_result_extent(const ir_graph *g, const ir_node *r, int64_t *start, int64_t *size);
/* The live result node k of multi-result producer id, or IR_NONE. */
int ir_result_node(const ir_graph *g, int id, int k);

int64_t ir_numel(const ir_node *n);
/* A slice's (or its gradient's) view of the sliced tensor of shape x_shape
 * (rank dims, row-major): strides[d] = x's stride of d times attrs.step[d];
 * returns the element offset of attrs.begin. */
int64_t ir_slice_strides(const ir_attrs *attrs, const int64_t *x_shape, int rank, int64_t *strides);
/* torch.nn.Upsample's source of output index dst along an axis of size in
 * scaled by s, mode an ir_upsample_mode: *i0, *i1 and the weight *frac of
 * *i1 (the interpreter's kernel and the bilinear gradient's matrices). */
void ir_upsample_source(int64_t dst, int64_t in, int s, int mode, int64_t *i0, int64_t *i1, double *frac);
/* Attributes no op has set: no epilogue or residual, stride, dilation and
 * groups 1, axis -1 (none given); what front ends start a node's from. */
ir_attrs ir_attrs_unset(void);
bool ir_same_shape(const ir_node *a, const ir_node *b);  /* same rank and dims */
int ir_output_index(const ir_graph *g, int id);           /* position among outputs, or -1 */
static inline bool ir_is_output(const ir_graph *g, int id) { return ir_output_index(g, id) >= 0; }
size_t ir_nbytes(const ir_node *n);
/* The bytes n's value takes in the arena: ir_nbytes, or one per element for an
 * int8 layer whose result is stored as int8 (ir_quant out_q8). */
size_t ir_value_bytes(const ir_node *n);
/* The runtime's parameters of pool n (maxpool, meanpool) over its operand. */
axrt_pool2d_params ir_pool2d_params(const ir_graph *g, const ir_node *n);
/* "[1, 784]" into buf (always NUL-terminated); returns buf. */
const char *ir_shape_str(const int64_t *shape, int rank, char *buf, size_t size);
/* The dtype table (runtime/axrt.h AXRT_DTYPES) as the compiler reads it. */
typedef struct ir_dtype_info {
    const char *name, *short_name, *c_type, *enum_name; /* "Float32", "f32", "float", "AXRT_F32" */
    size_t size;
    const char *safetensors, *npy;                      /* file codes; npy NULL: none */
    bool is_float;
} ir_dtype_info;
extern const ir_dtype_info ir_dtypes[AXRT_DTYPE_COUNT];
static inline bool ir_dtype_is_float(axrt_dtype t)
{
    return (unsigned)t < AXRT_DTYPE_COUNT && ir_dtypes[t].is_float;
}
const char *ir_dtype_name(axrt_dtype dtype);     /* "Float32" ... */
/* The integer dtype computed node n yields whatever the model computes in
 * (argmax's Int64 indices; a reshape keeps a computed operand's integers),
 * or AXRT_DTYPE_COUNT when its dtype is a float one (pass_shape, pass_dtype). */
axrt_dtype ir_integer_result(const ir_graph *g, const ir_node *n);
/* A node, a layer constructor and a binary operator as the graph's front
 * end spells them (ir_wording), else by IR op names. */
const char *ir_describe_layer(const ir_graph *g, const ir_node *n, char *buf, size_t size);
const char *ir_describe_ctor(const ir_graph *g, ir_op op);
const char *ir_describe_binary(const ir_graph *g, ir_op op);
/* Accepts long and short spellings; returns false for an unknown name. */
bool ir_dtype_parse(const char *name, axrt_dtype *out);

/* The graph's target's scratch bytes for n (0 without a target). */
size_t ir_scratch_bytes(const ir_node *n, const ir_graph *g);

/* Whether fused_elementwise n reads operand k at the result's own flat index
 * (its strides are the result's row-major strides, ignoring size-1 dims, and
 * it has the result's element count), so that a loop writing element o after
 * reading element o may overwrite it (pass_memplan's in-place rule). */
bool ir_fused_in_order(const ir_graph *g, const ir_node *n, int k);

/* Work of one evaluation of n (ir_cost.c): floating-point operations and
 * bytes read and written, for profiles and reports. */
double ir_node_flops(const ir_graph *g, const ir_node *n);
double ir_node_bytes(const ir_graph *g, const ir_node *n);

/* Checks the structural invariants (operand counts and order, ranks, dtypes
 * of params, outputs exist).  Returns the number of problems, printed as
 * internal errors through ctx diagnostics. */
int ir_verify(const ir_graph *g);
/* Text dump as printed by --emit=ir. */
void ir_dump(const ir_graph *g, ax_buf *out);
/* ir_dump of a training step (axc --train --emit=ir) with its own plan sp
 * (codegen's cg_plan_train; NULL: ir_dump): after each node the statements
 * that run after it ("      step ...", the split step's "      split ..."),
 * a node its update computes marked so in place of its calls, and after the
 * return the split step's apply and state_init's statements ("      apply
 * ...", "      init ..."), each as ir_step_list_print writes it. */
void ir_dump_step(const ir_graph *g, const ir_step_plan *sp, ax_buf *out);
/* Graphviz digraph as printed by --emit=dot (ir_dot.c); peak is the node
 * where the memory plan has the most bytes live (peak_bytes), marked. */
void ir_dump_dot(const ir_graph *g, int peak, size_t peak_bytes, ax_buf *out);

#endif
