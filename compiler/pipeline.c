/* pipeline.c — the front end and passes shared by `axc` and `axc run`:
 * parse, lower each selected model, then the steps of pipeline_table.c:
 * shapes and dtypes, then (parameters loaded) the optimising passes of the
 * -O level and the memory plan, int8, --ram and kernel selection.  Parameters are loaded before the optimising
 * passes because folding rewrites them.  Diagnostics are collected across models; any error stops
 * the pipeline before code generation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_target.h"
#include "driver.h"
#include "ir_names.h"
#include "weights.h"
#include "onnx.h"
#include "tflite.h"
#include "pipeline_table.h"

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
static int check_model(ax_ctx *ctx, const axc_opts *o, ir_graph *g, bool lowering_failed)
{
    if (lowering_failed) {
        pass_shape(g);
        return -1;
    }
    axc_print_after(o, g, "lower");
    if (o->dtype_given) g->dtype = o->dtype;
    const axc_step_env e = {.ctx = ctx, .opts = o};
    return axc_run_stage(&e, g, AXC_STAGE_FRONT) ? -1 : 0;
}

/* Parameters are embedded in the generated C and held in memory (twice
 * while initialised), so a model needing more than this is refused with a
 * located error instead of an out-of-memory abort. */
#define AXC_MAX_PARAM_BYTES ((size_t)4 << 30)

/* 0, or 1 after reporting at the largest parameter of a model holding more
 * than limit bytes (0: AXC_MAX_PARAM_BYTES).  pass_shape bounds each tensor
 * at 2^40 bytes, so the sum cannot overflow. */
static int check_param_bytes(ir_graph *g, size_t limit)
{
    if (!limit) limit = AXC_MAX_PARAM_BYTES;
    size_t total = 0;
    const ir_node *largest = NULL;
    for (int i = 0; i < g->nnodes; i++) {
        const ir_node *p = &g->nodes[i];
        if (p->op != IR_OP_param || p->dead) continue;
        total += ir_nbytes(p);
        if (!largest || ir_nbytes(p) > ir_nbytes(largest)) largest = p;
    }
    if (total <= limit) return 0;
    ax_error(g->ctx, largest->loc, "model '%s' has %zu bytes of parameters, over the limit of %zu "
             "(the largest is '%s', %zu bytes)", g->name, total, limit,
             largest->name, ir_nbytes(largest));
    return 1;
}

/* Without --weights the parameters are random: easy to miss, so say it
 * unless --seed shows the choice was made on purpose (or nothing that holds
 * parameters is produced: --emit views). */
static void note_random_params(ax_ctx *ctx, const axc_opts *o)
{
    bool uses_params = o->run || o->save_weights || (o->output && !o->emit);
    if (o->seed_given || !uses_params) return;
    ax_note(ctx, ax_noloc(), "no --weights given: the parameters are a deterministic random "
            "initialisation (--seed=%llu); pass --weights=FILE.safetensors, or --seed=N to choose "
            "this on purpose", (unsigned long long)o->seed);
}

/* have_data: the parameters came with the model (ONNX initializers), so
 * they are initialised only from --weights. */
static int load_params(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, bool have_data)
{
    int oversized = 0;
    for (int i = 0; i < n; i++) oversized += check_param_bytes(models[i], o->param_limit);
    if (oversized) return AXC_EINPUT;
    if (!o->weights && have_data) return 0;
    if (!o->weights) {
        const ir_graph *with_params = NULL;
        for (int i = 0; i < n && !with_params; i++)
            for (int k = 0; k < models[i]->nnodes && !with_params; k++)
                if (models[i]->nodes[k].op == IR_OP_param && !models[i]->nodes[k].dead) with_params = models[i];
        if (with_params && o->require_weights && !o->seed_given) {
            ax_error(ctx, with_params->loc, "model '%s' has parameters and no --weights gives them "
                     "(--require-weights): pass --weights=FILE.safetensors, or --seed=N for random "
                     "parameters (axc.mk: AXC_SEED=N)", with_params->name);
            return AXC_EINPUT;
        }
        for (int i = 0; i < n; i++) weights_init(models[i], o->seed);
        if (with_params) note_random_params(ctx, o);
        return 0;
    }
    if (n > 1) {
        axc_fail("--weights needs a single model; this file has %d (choose one with --model)", n);
        return AXC_EUSAGE;
    }
    int errors = weights_load(models[0], o->weights);
    if (errors < 0) {
        axc_fail("cannot read '%s': %s", o->weights, strerror(errno));
        return AXC_EUSAGE;
    }
    return errors ? AXC_EINPUT : 0;
}

static const char *extension_of(const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : "";
}

/* The target named by --target, else the one whose outputs (its row,
 * codegen/cg_targets.c) include the output's extension, else
 * IR_TARGET_COUNT: each model's backend= option decides. */
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
    if (o->emit && (!strcmp(o->emit, "ptx") || !strcmp(o->emit, "hsaco"))) {
        *id = o->emit[0] == 'p' ? IR_TARGET_cuda : IR_TARGET_hip;
        return AXC_OK;
    }
    *id = cg_target_for_output(o->output ? extension_of(o->output) : "");
    return AXC_OK;
}

void axc_free_models(ir_graph **models, int n)
{
    for (int i = 0; i < n; i++) ir_graph_free_nodes(models[i]);
}

/* --conv-algo for model g: direct under --ram (Winograd's scratch and 4x
 * larger weights work against a memory budget, and the budget's
 * rematerialisation and tiling passes know only direct convs), with a
 * warning where winograd was asked for. */
static ir_conv_algo conv_algo_of(ax_ctx *ctx, const axc_opts *o, const ir_graph *g)
{
    if (!o->ram_budget)
        return o->conv_algo;
    if (o->conv_algo == IR_CONV_WINOGRAD || o->conv_algo == IR_CONV_WINOGRAD2)
        ax_warning(ctx, g->loc, "--conv-algo=%s is not applied under --ram: model '%s' runs its "
                   "convolutions direct", ir_conv_algo_names[o->conv_algo], g->name);
    return IR_CONV_DIRECT;
}

/* An ONNX model: one graph, imported with pass_shape_from as its shape inference. */
bool axc_is_tflite(const ax_ctx *ctx, const char *path)
{
    return tflite_is_model(path) ||
           (!onnx_is_model(path) && ctx->src && ctx->src_len >= 8 && !memcmp((const char *)ctx->src + 4, "TFL3", 4));
}

static int import_onnx(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n)
{
    ir_target_id target;
    if (requested_target(o, &target)) return AXC_EUSAGE;
    ir_graph *g = onnx_import(ctx, o->input, ctx->src, ctx->src_len, pass_shape_from, o->shapes, o->nshapes);
    if (!g) return AXC_EINPUT;
    g->target = &cg_target_get(target != IR_TARGET_COUNT ? target : g->backend)->facts;
    g->conv_algo = conv_algo_of(ctx, o, g);
    if (check_model(ctx, o, g, false) != 0) {
        ir_graph_free_nodes(g);
        return AXC_EINPUT;
    }
    models[(*n)++] = g;
    return AXC_OK;
}

/* axc train's smaller last batch (train_tail.c): every input's dim 0 set
 * to batch before pass_shape infers the rest (0: as declared). */
static void override_batch(ir_graph *g, int64_t batch)
{
    for (int i = 0; batch > 0 && i < g->ninputs; i++) {
        ir_node *n = &g->nodes[g->inputs[i]];
        if (n->rank > 0) n->shape[0] = batch;
    }
}

/* A TFLite model: subgraph 0, imported as an ONNX model is. */
static int import_tflite(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n)
{
    ir_target_id target;
    if (requested_target(o, &target)) return AXC_EUSAGE;
    ir_graph *g = tflite_import(ctx, o->input, ctx->src, ctx->src_len, pass_shape_from);
    if (!g) return AXC_EINPUT;
    g->target = &cg_target_get(target != IR_TARGET_COUNT ? target : g->backend)->facts;
    g->conv_algo = conv_algo_of(ctx, o, g);
    if (check_model(ctx, o, g, false) != 0) {
        ir_graph_free_nodes(g);
        return AXC_EINPUT;
    }
    models[(*n)++] = g;
    return AXC_OK;
}

/* Parses and lowers the selected models of a .ax file. */
static int build_front_end(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n)
{
    ast_file *f = ast_parse(ctx);
    if (!f) return AXC_EINPUT;
    ctx->training = o->train || o->train_step;
    lower_check_defines(ctx, f, o->defines, o->ndefines);
    int idx[AXC_MAX_MODELS], nsel;
    ir_target_id target;
    if (requested_target(o, &target)) return AXC_EUSAGE;
    if (f->nmodels > AXC_MAX_MODELS) {   /* the file's content: an input error */
        ax_error(ctx, f->models[AXC_MAX_MODELS].loc, "more than %d models in one file", AXC_MAX_MODELS);
        return AXC_EINPUT;
    }
    int rc = select_models(ctx, o, f, idx, &nsel);
    if (rc) return rc;
    for (int i = 0; i < nsel; i++) {
        int errors_before = ctx->errors;
        ir_graph *g = lower_model(ctx, f, idx[i], o->defines, o->ndefines);
        override_batch(g, o->batch_override);
        g->target = &cg_target_get(target != IR_TARGET_COUNT ? target : g->backend)->facts;
        g->conv_algo = conv_algo_of(ctx, o, g);
        if (check_model(ctx, o, g, ctx->errors > errors_before) == 0) models[(*n)++] = g;
        else ir_graph_free_nodes(g);
    }
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}

/* Model names the generated code cannot carry (ir_names.h): a located
 * error.  The ONNX importer mangles file names by the same rule, so only a
 * name written in the .ax file reaches it. */
static int check_model_names(ax_ctx *ctx, ir_graph **models, int n)
{
    for (int i = 0; i < n; i++) {
        const char *why = ir_model_name_problem(models[i]->name);
        if (why) ax_error(ctx, models[i]->loc, "model name '%s' is reserved: %s; rename the model", models[i]->name, why);
    }
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}

int axc_build_models(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n)
{
    *n = 0;
    const bool onnx = onnx_is_model(o->input), tflite = axc_is_tflite(ctx, o->input);
    int rc = onnx ? import_onnx(ctx, o, models, n) : tflite ? import_tflite(ctx, o, models, n)
                  : build_front_end(ctx, o, models, n);
    if (!rc) rc = check_model_names(ctx, models, *n);
    if (rc) return rc;
    rc = load_params(ctx, o, models, *n, onnx || tflite);
    if (rc) return rc;
    const bool as_ax = o->emit && !strcmp(o->emit, "ax");
    for (int i = 0; i < *n && !o->train && !o->train_step; i++) {   /* training differentiates the unfused graph */
        const axc_step_env e = {.ctx = ctx, .opts = o, .file_quant = axc_file_quantised(models[i])};
        if ((rc = axc_run_stage(&e, models[i], AXC_STAGE_GRAPH))) return rc;
        if (as_ax && e.file_quant) {
            axc_fail("--emit=ax: model '%s' is quantised (its file gives scales and zero points), which .ax "
                     "cannot say; compile the .onnx itself", models[i]->name);
            return AXC_EUSAGE;
        }
        if ((rc = axc_run_stage(&e, models[i], AXC_STAGE_KERNELS))) return rc;
    }
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}

/* ---- outputs that would clobber inputs ------------------------------------- */

int axc_check_outputs(const axc_opts *o, const axc_output *outs, int n)
{
    const size_t most = 3 + (size_t)o->ninputs + (size_t)o->ncalib;
    const char **in_opt = calloc(most, sizeof *in_opt), **in_path = calloc(most, sizeof *in_path);
    if (!in_opt || !in_path) ax_out_of_memory(2 * most * sizeof *in_opt);
    int nin = 0, rc = AXC_OK;
    in_opt[nin] = "the model"; in_path[nin++] = o->input;
    if (o->weights) { in_opt[nin] = "--weights"; in_path[nin++] = o->weights; }
    for (int k = 0; k < o->ninputs; k++) { in_opt[nin] = "--input"; in_path[nin++] = o->inputs[k].path; }
    if (o->target_file) { in_opt[nin] = "--target"; in_path[nin++] = o->target_file; }
    for (int k = 0; k < o->ncalib; k++) { in_opt[nin] = "--calibrate"; in_path[nin++] = o->calib[k].path; }
    for (int i = 0; i < n && !rc; i++) {
        for (int k = 0; k < nin && !rc; k++)
            if (ax_same_file(outs[i].path, in_path[k])) {
                axc_fail("%s '%s' would overwrite %s '%s'", outs[i].opt, outs[i].path, in_opt[k], in_path[k]);
                rc = AXC_EUSAGE;
            }
        for (int j = 0; j < i && !rc; j++)
            if (ax_same_file(outs[i].path, outs[j].path)) {
                axc_fail("%s '%s' and %s '%s' name the same file", outs[j].opt, outs[j].path, outs[i].opt,
                         outs[i].path);
                rc = AXC_EUSAGE;
            }
    }
    free(in_opt);
    free(in_path);
    return rc;
}
