/* pipeline.c — the front end and passes shared by `axc` and `axc run`:
 * parse, lower each selected model, then shapes, dtypes, parameters, the
 * optimising passes of the -O level and the memory plan (pass_manager.c),
 * checked against --ram.  Parameters are loaded before the optimising
 * passes because folding rewrites them.  Diagnostics are collected across models; any error stops
 * the pipeline before code generation. */
#include <stdio.h>
#include <string.h>

#include "cg_target.h"
#include "driver.h"
#include "onnx.h"
#include "weights.h"

/* --print-after-all: the IR after each pass, to stderr. */
static void print_after(const axc_opts *o, const ir_graph *g, const char *pass)
{
    if (!o->print_after_all) return;
    ax_buf b = {0};
    ir_dump(g, &b);
    fprintf(stderr, "*** IR after %s ***\n%.*s", pass, (int)b.len, b.data ? b.data : "");
    ax_buf_free(&b);
}

static void print_after_hook(const ir_graph *g, const char *pass, void *opts)
{
    print_after(opts, g, pass);
}

/* Picks the models to build: all, or the one --model names. */
static int select_models(ax_ctx *ctx, const axc_opts *o, const ast_file *f, int *idx, int *n)
{
    *n = 0;
    for (int i = 0; i < f->nmodels; i++)
        if (!o->model || !strcmp(o->model, f->models[i].name)) idx[(*n)++] = i;
    if (f->nmodels == 0) { ax_error(ctx, ax_noloc(), "no @axiom model in this file"); return AXC_EINPUT; }
    if (*n > 0) return AXC_OK;
    const char *names[AXC_MAX_MODELS];
    int k = f->nmodels < AXC_MAX_MODELS ? f->nmodels : AXC_MAX_MODELS;
    for (int i = 0; i < k; i++) names[i] = f->models[i].name;
    const char *s = ax_suggest(o->model, names, k);
    axc_fail("--model=%s: no such model in %s%s%s%s", o->model, o->input,
             s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
    return AXC_EUSAGE;
}

/* Shapes and dtypes of one lowered model; 0 on success.  After lowering
 * errors only pass_shape runs, for the shape errors independent of them. */
static int check_model(const axc_opts *o, ir_graph *g, bool lowering_failed)
{
    if (lowering_failed) {
        pass_shape(g);
        return -1;
    }
    print_after(o, g, "lower");
    if (pass_shape(g)) return -1;
    print_after(o, g, "shape");
    if (pass_dtype(g, o->eltype)) return -1;
    print_after(o, g, "dtype");
    return 0;
}

/* Parameters are embedded in the generated C and held in memory (twice
 * while initialised), so a model needing more than this is refused with a
 * located error instead of an out-of-memory abort. */
#define AXC_MAX_PARAM_BYTES ((size_t)4 << 30)

/* 0, or 1 after reporting at the largest parameter of an oversized model.
 * pass_shape bounds each tensor at 2^40 bytes, so the sum cannot overflow. */
static int check_param_bytes(ir_graph *g)
{
    size_t total = 0;
    const ir_node *largest = NULL;
    for (int i = 0; i < g->nnodes; i++) {
        const ir_node *p = &g->nodes[i];
        if (p->op != IR_OP_param || p->dead) continue;
        total += ir_nbytes(p);
        if (!largest || ir_nbytes(p) > ir_nbytes(largest)) largest = p;
    }
    if (total <= AXC_MAX_PARAM_BYTES) return 0;
    ax_error(g->ctx, largest->loc, "model '%s' has %zu bytes of parameters, over the limit of %zu "
             "(the largest is '%s', %zu bytes)", g->name, total, AXC_MAX_PARAM_BYTES,
             largest->name, ir_nbytes(largest));
    return 1;
}

/* have_data: the parameters came with the model (ONNX initializers), so
 * they are initialised only from --weights. */
static int load_params(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, bool have_data)
{
    int oversized = 0;
    for (int i = 0; i < n; i++) oversized += check_param_bytes(models[i]);
    if (oversized) return AXC_EINPUT;
    if (!o->weights && have_data) return 0;
    if (!o->weights) {
        for (int i = 0; i < n; i++) weights_init(models[i], o->seed);
        return 0;
    }
    if (n > 1) {
        axc_fail("--weights needs a single model; this file has %d (choose one with --model)", n);
        return AXC_EUSAGE;
    }
    return weights_load(models[0], o->weights) ? AXC_EINPUT : 0;
}

static const char *extension_of(const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : "";
}

/* The target named by --target, else the one whose extensions
 * (targets.def) include the output's, else IR_TARGET_COUNT: each model's
 * backend= option decides. */
static int requested_target(const axc_opts *o, ir_target_id *id)
{
    *id = IR_TARGET_COUNT;
    if (o->target) {
        *id = ir_target_parse(o->target);
        if (*id != IR_TARGET_COUNT) return AXC_OK;
        ax_arena *a = ax_arena_new();
        axc_fail("unknown target '%s' (expected %s)", o->target, ir_target_list(a, ", ", " or "));
        ax_arena_free(a);
        return AXC_EUSAGE;
    }
    const char *ext = o->output ? extension_of(o->output) : "";
    for (int t = 0; t < IR_TARGET_COUNT && *ext; t++) {
        const char *hit = strstr(ir_targets[t].extensions, ext);
        size_t len = strlen(ext);
        if (hit && (hit[len] == ' ' || hit[len] == '\0')) *id = (ir_target_id)t;
    }
    return AXC_OK;
}

void axc_free_models(ir_graph **models, int n)
{
    for (int i = 0; i < n; i++) ir_graph_free_nodes(models[i]);
}

/* An ONNX model: one graph, imported with pass_shape as its shape inference. */
static int import_onnx(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n)
{
    ir_target_id target;
    if (requested_target(o, &target)) return AXC_EUSAGE;
    ir_graph *g = onnx_import(ctx, o->input, ctx->src, ctx->src_len, pass_shape);
    if (!g) return AXC_EINPUT;
    g->target = &cg_target_get(target != IR_TARGET_COUNT ? target : g->backend)->facts;
    if (check_model(o, g, false) != 0) {
        ir_graph_free_nodes(g);
        return AXC_EINPUT;
    }
    models[(*n)++] = g;
    return AXC_OK;
}

/* Parses and lowers the selected models (or imports an ONNX model), then
 * runs the passes up to the memory plan on each. */
static int build_front_end(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n);

int axc_build_models(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n)
{
    *n = 0;
    bool onnx = onnx_is_model(o->input);
    int rc = onnx ? import_onnx(ctx, o, models, n) : build_front_end(ctx, o, models, n);
    if (rc) return rc;
    rc = load_params(ctx, o, models, *n, onnx);
    if (rc) return rc;
    for (int i = 0; i < *n; i++) {
        if (pass_run_optimisations(models[i], o->opt_level, print_after_hook, (void *)o))
            return AXC_EINPUT;
        if (o->ram_budget && pass_memplan_check_budget(models[i], o->ram_budget)) return AXC_EINPUT;
        cg_target_get(models[i]->target->id)->select(models[i]);
    }
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}

static int build_front_end(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n)
{
    ast_file *f = ast_parse(ctx);
    if (!f) return AXC_EINPUT;
    lower_check_defines(ctx, f, o->defines, o->ndefines);
    int idx[AXC_MAX_MODELS], nsel;
    ir_target_id target;
    if (requested_target(o, &target)) return AXC_EUSAGE;
    if (f->nmodels > AXC_MAX_MODELS) { axc_fail("more than %d models in one file", AXC_MAX_MODELS); return AXC_EUSAGE; }
    int rc = select_models(ctx, o, f, idx, &nsel);
    if (rc) return rc;
    for (int i = 0; i < nsel; i++) {
        int errors_before = ctx->errors;
        ir_graph *g = lower_model(ctx, f, idx[i], o->defines, o->ndefines);
        g->target = &cg_target_get(target != IR_TARGET_COUNT ? target : g->backend)->facts;
        if (check_model(o, g, ctx->errors > errors_before) == 0) models[(*n)++] = g;
        else ir_graph_free_nodes(g);
    }
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}
