/* passes.h — the passes over ir_graph, run in this order by the driver:
 *
 *   pass_shape    resolves every shape (and attrs that depend on shapes:
 *                 negative axes, reshape -1, Flatten, pad=same); reports
 *                 located errors naming the layer and both shapes
 *   pass_dtype    settles dtypes (language.md §5): inserts casts at inputs
 *                 wider than the model dtype, warns/errors/promotes per mode,
 *                 rejects integer inputs anywhere but Embedding indices
 *   the optimising passes (pass_manager.c's table, chosen by -O level):
 *   fuse_matmul_transposed (pass_fuse_matmul.c), fold_batchnorm,
 *                 fold_scale_shift, fuse_residual, fuse_activation
 *                 (pass_fuse.c), fuse_elementwise (pass_fuse_elementwise.c),
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
 * recomputes values idle across the peak instead of keeping them; the
 * plan is redone after each.  The caller checks the budget afterwards. */
typedef struct pass_remat_stats {
    size_t peak_before, peak_after;  /* arena bytes */
    int recomputed;                  /* values copied */
    double flops, extra_flops;       /* the graph's FLOPs after, and what the copies add */
} pass_remat_stats;
int pass_remat(ir_graph *g, size_t budget, pass_remat_stats *stats);

/* Fusion (pass_fuse.c): each rewrites g in place and returns 0. */
int pass_fold_batchnorm(ir_graph *g);
int pass_fold_scale_shift(ir_graph *g);
int pass_fuse_residual(ir_graph *g);
int pass_fuse_activation(ir_graph *g);
/* Trees of elementwise nodes -> one fused_elementwise node
 * (pass_fuse_elementwise.c); returns 0. */
int pass_fuse_elementwise(ir_graph *g);
/* matmul(x, transpose(W, (1, 0))) -> dense(x, W) (pass_fuse_matmul.c);
 * returns 0. */
int pass_fuse_matmul_transposed(ir_graph *g);
/* Reorders independent nodes to lower peak memory (pass_schedule.c). */
int pass_schedule(ir_graph *g);

/* The pass manager (pass_manager.c): runs every table pass whose minimum
 * -O level is <= opt_level, in table order, ending with the memory plan;
 * after each, calls after(g, pass name, user) (may be NULL) and the IR
 * verifier.  Returns the number of errors (0 = success). */
typedef void pass_hook(const ir_graph *g, const char *pass, void *user);
/* --quantize=int8 (pass_quant.c): every dense/conv pass_quant_applies to gets
 * its ir_quant from the ranges [lo[id], hi[id]] calibration observed per node;
 * then the memory plan is made again.  Returns how many layers are int8. */
int pass_quant(ir_graph *g, const double *lo, const double *hi);
bool pass_quant_applies(const ir_graph *g, const ir_node *n);
/* Per-tensor asymmetric int8 parameters of [lo, hi] (widened to hold 0). */
void pass_quant_params(double lo, double hi, float *scale, int32_t *zp);
int pass_run_optimisations(ir_graph *g, int opt_level, pass_hook *after, void *user);

#endif
