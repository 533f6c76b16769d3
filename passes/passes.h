/* passes.h — the passes over ir_graph, run in this order by the driver:
 *
 *   pass_shape    resolves every shape (and attrs that depend on shapes:
 *                 negative axes, reshape -1, Flatten, pad=same); reports
 *                 located errors naming the layer and both shapes
 *   pass_dtype    settles dtypes (docs/language.md#dtype-rules): inserts casts at inputs
 *                 wider than the model dtype, warns/errors/promotes per mode,
 *                 rejects integer inputs anywhere but Embedding indices
 *   the optimising passes (compiler/pipeline_table.c's table, by -O level):
 *   fuse_matmul_transposed (pass_fuse_matmul.c), fold_batchnorm,
 *                 fold_scale_shift, fuse_residual (pass_fuse.c), fuse_gelu
 *                 (pass_fuse_gelu.c), fuse_activation (pass_fuse.c), fuse_elementwise (pass_fuse_elementwise.c),
 *                 schedule (pass_schedule.c)
 *   pass_memplan  gives every arena-resident node an offset; sets
 *                 g->arena_bytes
 *
 * Each returns the number of errors it reported (0 = success).  A pass
 * after a failed one is not run. */
#ifndef AX_PASSES_H
#define AX_PASSES_H

#include "ir.h"

typedef enum eltype_mode {
    ELTYPE_WARN = 0,  /* default: warn, then convert at the boundary */
    ELTYPE_CONVERT,   /* convert silently */
    ELTYPE_ERROR,     /* refuse */
    ELTYPE_PROMOTE    /* compute the whole model in the wider type */
} eltype_mode;

int pass_shape(ir_graph *g);
/* pass_shape of nodes first.. only (those before already inferred): what
 * the ONNX importer runs after each node it adds. */
int pass_shape_from(ir_graph *g, int first);
int pass_dtype(ir_graph *g, eltype_mode mode);
/* Memory plan: which nodes live in the arena and where.  Sources (inputs,
 * params, scalars) never do; nodes that are graph outputs are written
 * straight into the caller's output buffers and do not either. */
int pass_memplan(ir_graph *g);
/* The same with share = true: reshapes alias their operand's buffer and
 * in-place-capable ops reuse operand 0's buffer when it dies there. */
int pass_memplan_with(ir_graph *g, bool share);
/* Prints the plan (--emit=mem / --mem-report). */
void pass_memplan_report(const ir_graph *g, ax_buf *out);
/* The plan as an SVG picture (--emit=timeline): each buffer a bar of its
 * bytes over the nodes where it is live, the peak marked. */
void pass_memplan_svg(const ir_graph *g, ax_buf *out);
/* The node where the most bytes are live, and how many (*live). */
int pass_memplan_peak(const ir_graph *g, size_t *live);
/* The most bytes live at once in g's current plan (no placement beats it). */
size_t pass_memplan_lower_bound(const ir_graph *g);
/* 0 if g->arena_bytes <= budget; else reports an error naming the node of
 * peak pressure and a note per tensor live there, and returns 1. */
int pass_memplan_check_budget(const ir_graph *g, size_t budget);

/* Rematerialisation (pass_remat.c): while the plan exceeds budget,
 * recomputes values idle across the peak instead of keeping them (a
 * greedy choice of recompute set); the plan is redone.  The caller checks
 * the budget afterwards. */
typedef struct pass_remat_stats {
    size_t peak_before, peak_after;  /* arena bytes */
    int recomputed;                  /* values copied */
    double flops, extra_flops;       /* the graph's FLOPs after, and what the copies add */
} pass_remat_stats;
/* The candidates of a graph (values whose readers leave a gap) and a choice
 * among them: chosen[k] says whether ids[k] is recomputed before split[k]
 * (pass_remat.c's contract says where exactly). */
typedef struct pass_remat_set {
    int n;
    int *ids, *split;
    bool *chosen;
    double *flops;                   /* ir_node_flops of ids[k]: the cost of its copy */
} pass_remat_set;
#define PASS_REMAT_EXACT_MAX 20      /* most candidates pass_remat_exact searches */
pass_remat_set pass_remat_candidates(const ir_graph *g);   /* none chosen */
void pass_remat_set_free(pass_remat_set *s);
/* The values s's application copies (chosen and implied: pass_remat.c's
 * contract) and what they add in FLOPs (*extra_flops, may be NULL). */
int pass_remat_copies(const ir_graph *g, const pass_remat_set *s, double *extra_flops);
double pass_remat_extra_flops(const ir_graph *g, const pass_remat_set *s);
/* The arena g's plan (same sharing) needs with s applied, and the most
 * bytes live at once (*lower_bound, may be NULL); g is not changed. */
size_t pass_remat_eval(const ir_graph *g, const pass_remat_set *s, size_t *lower_bound);
/* Rewrites g with s's copies and redoes the plan. */
void pass_remat_apply(ir_graph *g, const pass_remat_set *s);
/* The same, writing each original node's new id to new_id[old id] (room for
 * g->nnodes before the call; a recomputed value's original keeps its id's
 * entry, the copy has none). */
void pass_remat_apply_mapped(ir_graph *g, const pass_remat_set *s, int *new_id);
/* Choices: the pass's greedy one (from s's current choice on), Chen et
 * al.'s sqrt(n) checkpoints (every ceil(sqrt n)-th candidate kept, the rest
 * recomputed; no budget), and the optimum by branch and bound (fewest extra
 * FLOPs that fit; false when none fits or s has over PASS_REMAT_EXACT_MAX
 * candidates).  pass_remat_min_arena: the smallest arena any subset
 * reaches (every subset tried; SIZE_MAX over the limit), none chosen after. */
void pass_remat_greedy(const ir_graph *g, pass_remat_set *s, size_t budget);
/* pass_remat's choice: greedy, or checkpoints every k-th candidate (the k
 * with the fewest extra FLOPs that fits, pruned) where that fits and greedy
 * does not or costs more. */
void pass_remat_choose(const ir_graph *g, pass_remat_set *s, size_t budget);
void pass_remat_sqrt_n(pass_remat_set *s);
bool pass_remat_exact(const ir_graph *g, pass_remat_set *s, size_t budget);
size_t pass_remat_min_arena(const ir_graph *g, pass_remat_set *s);
int pass_remat(ir_graph *g, size_t budget, pass_remat_stats *stats);
/* --mem-report after pass_remat (pass_remat_report.c): "rematerialised
 * NAME: arena ... " and the recomputed values; nothing when none.  And the
 * note after a budget rematerialisation could not reach. */
void pass_remat_print(const ir_graph *g, size_t before, size_t after, int recomputed, double flops, double extra);
void pass_remat_note_floor(ir_graph *g, int recomputed, size_t before, size_t after);

/* calloc that never returns NULL (out of memory ends the process). */
void *pass_calloc(size_t count, size_t size);

/* Tiled inference (pass_tile.c): when the plan exceeds budget, runs the
 * stage from the input to a narrower tensor tile by tile (rows of a batch,
 * or H of an NHWC image with its halo) and concatenates; keeps the tiling
 * with the smallest arena (the fewest extra FLOPs among those that fit);
 * tiles == 0 when none helps. */
typedef struct pass_tile_stats {
    size_t peak_before, peak_after;
    int end, input, axis, tiles;     /* the stage's last node (before tiling), input, axis, tiles */
    const char *end_name;
    double extra_flops;              /* the halo rows computed twice */
} pass_tile_stats;
int pass_tile(ir_graph *g, size_t budget, pass_tile_stats *stats);

/* Reverse-mode differentiation (pass_grad.c): appends to g the nodes
 * computing d loss / d wrt[i] into grads[i] (IR_NONE: wrt[i] does not
 * affect the loss, a zero gradient), loss a one-element node.  Run on the
 * unfused graph (after pass_dtype, before the optimising passes).  Returns
 * the number of errors (an op without a gradient rule, located). */
int pass_grad(ir_graph *g, int loss, const int *wrt, int nwrt, int *grads);
/* Whether op has a gradient rule (the unit test lists those without). */
bool pass_grad_has_rule(ir_op op);

/* Every GRU and LSTM node written out step by step in primitive ops
 * (dense, slice, sigmoid, tanh, mul, add, concat), as training does, for a
 * target without recurrent kernels (ir_target.rnn_kernels); after
 * pass_shape.  Returns how many. */
int pass_unroll_rnn(ir_graph *g);

/* Training mode (pass_grad.c), before pass_loss and pass_grad: every
 * BatchNorm normalises with its batch's statistics, and the new running
 * mean and variance of each become outputs appended to g->outputs, named
 * after their parameters (PyTorch train()).  Returns how many BatchNorms,
 * or -1 after an error. */
int pass_train_mode(ir_graph *g);
/* pass_train_mode also unrolls GRU/LSTM (pass_unroll_rnn), writes each
 * MultiheadAttention out in the ops its gradient comes from, and points
 * every Dropout at one Int64 [2] parameter
 * (seed, step), not part of the state_dict, named pass_dropout_counter_name;
 * the trainer sets its seed and counts its steps. */
extern const char *const pass_dropout_counter_name;

/* The losses of docs/training.md, as PyTorch's with reduction='mean'. */
typedef enum pass_loss_kind {
    PASS_LOSS_mse, PASS_LOSS_cross_entropy, PASS_LOSS_bce_with_logits, PASS_LOSS_COUNT
} pass_loss_kind;
extern const char *const pass_loss_names[PASS_LOSS_COUNT];
/* The name of the [1] parameter pass_grad seeds the backward with (1; a
 * Float16 model's generated step reads it from the state: the loss scale). */
extern const char *const pass_loss_seed_name;
/* Appends loss(y, target) to g and returns its [1] node; target is an
 * input node of y's shape (cross_entropy: integer classes [batch]). */
int pass_loss(ir_graph *g, pass_loss_kind kind, int y, int target);

/* Fusion (pass_fuse.c): each rewrites g in place and returns 0. */
int pass_fold_batchnorm(ir_graph *g);
int pass_fold_scale_shift(ir_graph *g);
int pass_fuse_residual(ir_graph *g);
/* pass_fuse_residual under --quantize: the residual add of a layer int8 runs
 * (pass_quant_applies) stays apart, read layer first, where the epilogue
 * would be a ReLU/ReLU6 or none, which int8 runs as nodes of their own
 * (ir_node.int8_apart); an epilogue with any other activation is fused. */
int pass_fuse_residual_int8(ir_graph *g);
/* GELU written out with erf (x · ½ (1 + erf(x / √2)), PyTorch's ONNX
 * export) -> gelu(x) (pass_fuse_gelu.c); returns 0. */
int pass_fuse_gelu(ir_graph *g);
int pass_fuse_activation(ir_graph *g);
int pass_fuse_spatial_mean(ir_graph *g);
/* Marks each 1x1 conv the target computes row by row inside the depthwise
 * conv reading it, and each such depthwise conv the target computes band by
 * band inside the 1x1 projection reading it (ir_node.rows_fused,
 * ir_target.fuse_rows).  Not run under
 * int8 or --ram, whose rewrites work on whole values (pipeline_table.c). */
int pass_fuse_expand_depthwise(ir_graph *g);
/* Marks each mul x .* s (s one value per channel of x) that only a conv
 * reads, as its input, scale_folded where the target runs that conv on x
 * with its weight scaled by s (ir_target.fold_input_scale,
 * pass_fuse_scale.c).  Not in training graphs, nor under int8 or --ram. */
int pass_fuse_input_scale(ir_graph *g);
/* Trees of elementwise nodes -> one fused_elementwise node
 * (pass_fuse_elementwise.c); returns 0. */
int pass_fuse_elementwise(ir_graph *g);
/* matmul(x, transpose(W, (1, 0))) -> dense(x, W) (pass_fuse_matmul.c);
 * returns 0. */
int pass_fuse_matmul_transposed(ir_graph *g);
/* Reorders independent nodes to lower peak memory (pass_schedule.c). */
int pass_schedule(ir_graph *g);

/* --quantize=int8 (pass_quant.c): every dense/conv pass_quant_applies to gets
 * its ir_quant from the ranges [lo[id], hi[id]] calibration observed per node;
 * then the memory plan is made again.  Returns how many layers are int8. */
int pass_quant(ir_graph *g, const double *lo, const double *hi);
bool pass_quant_applies(const ir_graph *g, const ir_node *n);
/* Per-tensor asymmetric int8 parameters of [lo, hi] (widened to hold 0). */
void pass_quant_params(double lo, double hi, float *scale, int32_t *zp);
/* TensorFlow Lite's int8 LOGISTIC (op sigmoid) or TANH (op tanh) as its 256
 * results by input integer v (table[v + 128]), input (s_in, zp_in), output
 * (s_out, zp_out); a SOFTMAX's float table, table[255 - v] =
 * expf(-s_in beta v) (pass_quant_table.c, docs/tflite.md). */
void pass_quant_lookup_table(ir_op op, float s_in, int32_t zp_in, float s_out, int32_t zp_out, int32_t *table);
void pass_quant_exp_table(float s_in, float beta, float *table);
/* A softmax of a model imported from .tflite whose operand is the
 * importer's mul by beta (a scalar), both with ranges lo (NaN: none), reads
 * the mul's operand instead (the mul, and the scalar where nothing else
 * reads it, marked dead): returns beta; 1 (nothing changed) otherwise. */
double pass_quant_fold_beta(ir_graph *g, ir_node *n, const double *lo);

#endif
