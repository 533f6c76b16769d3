/* pipeline_table.h — the one table of steps from a lowered graph to its
 * selected kernels (pipeline_table.c), run by stage. */
#ifndef AXC_PIPELINE_TABLE_H
#define AXC_PIPELINE_TABLE_H

#include "driver.h"

typedef enum axc_stage {
    AXC_STAGE_FRONT,    /* each model as lowered: shapes, dtypes */
    AXC_STAGE_GRAPH,    /* parameters loaded: RNN unrolling, the -O passes, the memory plan */
    AXC_STAGE_KERNELS   /* int8, --ram, kernel selection */
} axc_stage;

/* What the rows' conditions and steps read besides the graph. */
typedef struct axc_step_env {
    ax_ctx *ctx;
    const axc_opts *opts;
    bool file_quant;    /* axc_file_quantised (known once parameters load) */
} axc_step_env;

/* Runs the rows of stage whose conditions hold for g, in table order,
 * stopping at the first that fails: AXC_OK or an exit status. */
int axc_run_stage(const axc_step_env *e, ir_graph *g, axc_stage stage);
/* The graph stage at -O opt_level with the default options (for tests). */
int axc_optimise(ax_ctx *ctx, ir_graph *g, int opt_level);
/* --print-after-all: g after step, to stderr. */
void axc_print_after(const axc_opts *o, const ir_graph *g, const char *step);
/* --ram (pipeline.c): rematerialise, then tile, until the plan fits; 0, or
 * 1 after reporting a plan that still does not fit. */
int axc_fit_budget(const axc_opts *o, ir_graph *g);

#endif
