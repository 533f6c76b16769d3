/* pipeline_table.c — every step from a lowered graph to its selected
 * kernels, in one table, in order: shapes and dtypes (per model, before the
 * parameters load), RNN unrolling, the optimising passes of the -O level and
 * the memory plan, int8 (a quantised file's scales, or calibration), the
 * --ram rematerialisation and tiling, and kernel selection.  Each row says
 * when it runs: its stage, the -O levels, and the conditions of mode,
 * target and options it needs or excludes.  No row undoes another's work: a
 * rewrite that a later row could not keep (the row-by-row expansion under
 * --quantize and --ram, the residual adds int8 runs apart) is excluded there
 * instead.  --print-after-all
 * dumps the IR after every row that ran, under the row's name; the IR
 * verifier runs after each row that rewrites the graph, so a rewrite that
 * breaks the IR is reported where it happened. */
#include <stdio.h>
#include <string.h>

#include "cg_target.h"
#include "driver.h"
#include "pipeline_table.h"

/* The conditions a row needs (all) or excludes (any). */
enum {
    WHEN_EMIT_AX = 1 << 0,      /* --emit=ax: the imported graph, unfused */
    WHEN_FILE_QUANT = 1 << 1,   /* the model's file gives scales and zero points */
    WHEN_QUANTIZE = 1 << 2,     /* --quantize */
    WHEN_RAM = 1 << 3,          /* --ram */
    WHEN_BLAS = 1 << 4,         /* --blas=openblas */
    WHEN_RNN_KERNELS = 1 << 5,  /* the target runs GRU/LSTM whole (ir_target.rnn_kernels) */
    WHEN_INT8 = 1 << 6,         /* --quantize or a quantised file: int8 follows */
};

typedef struct pipeline_row {
    const char *name;           /* as --print-after-all names it */
    axc_stage stage;
    int min_level, max_level;   /* runs when min_level <= -O <= max_level */
    unsigned needs, excludes;   /* WHEN_* */
    bool verify;                /* the IR verifier runs after it */
    /* AXC_OK or an exit status (the errors reported). */
    int (*run)(const axc_step_env *e, ir_graph *g);
} pipeline_row;

/* ---- the rows' steps ------------------------------------------------------ */

#define PASS_STEP(fn) \
    static int step_##fn(const axc_step_env *e, ir_graph *g) { (void)e; return fn(g) ? AXC_EINPUT : AXC_OK; }
PASS_STEP(pass_shape)
PASS_STEP(pass_fuse_matmul_transposed)
PASS_STEP(pass_fold_batchnorm)
PASS_STEP(pass_fold_scale_shift)
PASS_STEP(pass_fuse_residual)
PASS_STEP(pass_fuse_residual_int8)
PASS_STEP(pass_fuse_gelu)
PASS_STEP(pass_fuse_activation)
PASS_STEP(pass_fuse_spatial_mean)
PASS_STEP(pass_fuse_elementwise)
PASS_STEP(pass_schedule)
PASS_STEP(pass_fuse_expand_depthwise)
PASS_STEP(pass_fuse_input_scale)
#undef PASS_STEP

/* How many it unrolled is no error (the verifier checks the result). */
static int step_unroll_rnn(const axc_step_env *e, ir_graph *g)
{
    (void)e;
    pass_unroll_rnn(g);
    return AXC_OK;
}

static int step_dtype(const axc_step_env *e, ir_graph *g)
{
    return pass_dtype(g, e->opts->eltype) ? AXC_EINPUT : AXC_OK;
}

static int step_plan_plain(const axc_step_env *e, ir_graph *g)
{
    (void)e;
    return pass_memplan_with(g, false) ? AXC_EINPUT : AXC_OK;
}

static int step_plan_shared(const axc_step_env *e, ir_graph *g)
{
    (void)e;
    return pass_memplan_with(g, true) ? AXC_EINPUT : AXC_OK;
}

static int step_quantize_file(const axc_step_env *e, ir_graph *g)
{
    return axc_quantize_file(e->ctx, e->opts, g);
}

static int step_quantize(const axc_step_env *e, ir_graph *g)
{
    return axc_quantize(e->ctx, e->opts, g);
}

static int step_fit_ram(const axc_step_env *e, ir_graph *g)
{
    return axc_fit_budget(e->opts, g) ? AXC_EINPUT : AXC_OK;
}

static int step_select(const axc_step_env *e, ir_graph *g)
{
    (void)e;
    cg_target_get(g->target->id)->select(g);
    return AXC_OK;
}

/* --blas=openblas: dense weights as cblas_sgemm reads them, Float32 only. */
static int step_select_blas(const axc_step_env *e, ir_graph *g)
{
    if (g->dtype != AXRT_F32)
        ax_warning(e->ctx, g->loc, "--blas=openblas applies to Float32 models; model '%s' computes "
                   "in %s and keeps axc's kernels", g->name, ir_dtype_name(g->dtype));
    else
        cg_select_blas(g);
    return AXC_OK;
}

/* ---- the table ------------------------------------------------------------ */

#define FRONT AXC_STAGE_FRONT
#define GRAPH AXC_STAGE_GRAPH
#define KERNEL AXC_STAGE_KERNELS
/* --emit=ax (the graph before kernels) runs no row of the kernel stage. */
static const pipeline_row rows[] = {
    {"shape", FRONT, 0, 3, 0, 0, false, step_pass_shape},
    {"dtype", FRONT, 0, 3, 0, 0, false, step_dtype},
    {"unroll_rnn", GRAPH, 0, 3, 0, WHEN_EMIT_AX | WHEN_RNN_KERNELS, true, step_unroll_rnn},
    {"fuse_matmul_transposed", GRAPH, 1, 3, 0, 0, true, step_pass_fuse_matmul_transposed},
    {"fold_batchnorm", GRAPH, 1, 3, 0, 0, true, step_pass_fold_batchnorm},
    /* int8's integers do not depend on -O: at -O0 too, folded and fused */
    {"fold_batchnorm", GRAPH, 0, 0, WHEN_INT8, WHEN_EMIT_AX, true, step_pass_fold_batchnorm},
    {"fold_scale_shift", GRAPH, 2, 3, 0, 0, true, step_pass_fold_scale_shift},
    {"fuse_residual", GRAPH, 2, 3, 0, WHEN_QUANTIZE, true, step_pass_fuse_residual},
    /* the adds int8 runs apart are not fused (instead of fused and split again) */
    {"fuse_residual", GRAPH, 2, 3, WHEN_QUANTIZE, 0, true, step_pass_fuse_residual_int8},
    {"fuse_gelu", GRAPH, 1, 3, 0, 0, true, step_pass_fuse_gelu},
    {"fuse_activation", GRAPH, 1, 3, 0, 0, true, step_pass_fuse_activation},
    {"fuse_activation", GRAPH, 0, 0, WHEN_INT8, WHEN_EMIT_AX, true, step_pass_fuse_activation},
    {"fuse_spatial_mean", GRAPH, 2, 3, 0, 0, true, step_pass_fuse_spatial_mean},
    {"fuse_elementwise", GRAPH, 2, 3, 0, 0, true, step_pass_fuse_elementwise},
    {"schedule", GRAPH, 2, 3, 0, 0, true, step_pass_schedule},
    /* int8 and the --ram passes rewrite and plan whole values */
    {"fuse_expand_depthwise", GRAPH, 2, 3, 0, WHEN_QUANTIZE | WHEN_RAM | WHEN_FILE_QUANT, true,
     step_pass_fuse_expand_depthwise},
    {"fuse_input_scale", GRAPH, 2, 3, 0, WHEN_QUANTIZE | WHEN_RAM | WHEN_FILE_QUANT, true,
     step_pass_fuse_input_scale},
    {"memplan", GRAPH, 0, 0, 0, 0, true, step_plan_plain},
    {"memplan", GRAPH, 1, 3, 0, 0, true, step_plan_shared},
    {"quantize_file", KERNEL, 0, 3, WHEN_FILE_QUANT, WHEN_EMIT_AX, false, step_quantize_file},
    {"quantize", KERNEL, 0, 3, WHEN_QUANTIZE, WHEN_EMIT_AX | WHEN_FILE_QUANT, false, step_quantize},
    {"fit_ram", KERNEL, 0, 3, WHEN_RAM, WHEN_EMIT_AX, false, step_fit_ram},
    {"select", KERNEL, 0, 3, 0, WHEN_EMIT_AX, false, step_select},
    {"select_blas", KERNEL, 0, 3, WHEN_BLAS, WHEN_EMIT_AX, false, step_select_blas},
};

/* ---- the runner ----------------------------------------------------------- */

static unsigned conditions_of(const axc_step_env *e, const ir_graph *g)
{
    const axc_opts *o = e->opts;
    unsigned when = 0;
    if (o->emit && !strcmp(o->emit, "ax")) when |= WHEN_EMIT_AX;
    if (e->file_quant) when |= WHEN_FILE_QUANT;
    if (o->quantize) when |= WHEN_QUANTIZE;
    if (o->quantize || e->file_quant) when |= WHEN_INT8;
    if (o->ram_budget) when |= WHEN_RAM;
    if (o->blas) when |= WHEN_BLAS;
    if (g->target && g->target->rnn_kernels) when |= WHEN_RNN_KERNELS;
    return when;
}

/* --print-after-all: the IR after each row, to stderr. */
void axc_print_after(const axc_opts *o, const ir_graph *g, const char *step)
{
    if (!o->print_after_all) return;
    ax_buf b = {0};
    ir_dump(g, &b);
    fprintf(stderr, "*** IR after %s ***\n%.*s", step, (int)b.len, b.data ? b.data : "");
    ax_buf_free(&b);
}

int axc_run_stage(const axc_step_env *e, ir_graph *g, axc_stage stage)
{
    const unsigned when = conditions_of(e, g);
    /* --emit=ax and a quantised file (whose parameters belong to its values:
       no fusion may merge two of them) run at -O0 */
    const int level = when & (WHEN_EMIT_AX | WHEN_FILE_QUANT) ? 0 : e->opts->opt_level;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const pipeline_row *r = &rows[i];
        if (r->stage != stage || level < r->min_level || level > r->max_level ||
            (when & r->needs) != r->needs || (when & r->excludes))
            continue;
        int rc = r->run(e, g);
        axc_print_after(e->opts, g, r->name);
        if (r->verify && ir_verify(g) && !rc) rc = AXC_EINPUT;
        if (rc) return rc;
    }
    return AXC_OK;
}

int axc_optimise(ax_ctx *ctx, ir_graph *g, int opt_level)
{
    axc_opts o = {.opt_level = opt_level};
    const axc_step_env e = {.ctx = ctx, .opts = &o};
    return axc_run_stage(&e, g, AXC_STAGE_GRAPH);
}
