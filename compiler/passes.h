/* passes.h — the passes over ir_graph, run in this order by the driver:
 *
 *   pass_shape    resolves every shape (and attrs that depend on shapes:
 *                 negative axes, reshape -1, Flatten, pad=same); reports
 *                 located errors naming the layer and both shapes
 *   pass_dtype    settles dtypes (language.md §5): inserts casts at inputs
 *                 wider than the model dtype, warns/errors/promotes per mode,
 *                 rejects integer inputs anywhere but Embedding indices
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
/* Prints the plan (--emit=mem / --mem-report). */
void pass_memplan_report(const ir_graph *g, ax_buf *out);

#endif
