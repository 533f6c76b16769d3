/* compile.c — `axc FILE.ax -o OUT`: code generation, --emit views, saved
 * weights and the make dependency file.  Every file is staged and the set
 * is committed at the end, so a failure leaves no output behind and an
 * existing output untouched (docs/cli.md#exit-status). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "axrt_gpu.h"
#include "cg_target.h"
#include "driver.h"
#include "print_ax.h"
#include "weights.h"

/* path with its extension (after the last '/') replaced by ext. */
static char *with_ext(ax_arena *a, const char *path, const char *ext)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    size_t stem = (dot && (!slash || dot > slash + 1)) ? (size_t)(dot - path) : strlen(path);
    return ax_sprintf(a, "%.*s%s", (int)stem, path, ext);
}

static const char *ext_of(const char *path)
{
    const char *b = axc_base_name(path), *dot = strrchr(b, '.');
    return dot && dot != b ? dot : "";
}

/* -o's extension picks the artefact (docs/cli.md#compile-options; the
 * targets' outputs, codegen/cg_targets.c): any other extension is refused
 * rather than silently written as C. */
static int check_output_ext(const char *out)
{
    const char *e = ext_of(out);
    if (cg_target_for_output(e) != IR_TARGET_COUNT) return 0;
    if (*e) axc_fail("-o %s: unknown output extension '%s' (.c writes C source and a header; "
                     "see axc --help for the targets)", out, e);
    else axc_fail("-o %s: the output has no extension (give OUT.c for C source and a header)", out);
    return -1;
}

/* Make's escaping for a path in a dependency rule. */
static void put_make_path(ax_buf *b, const char *p)
{
    for (; *p; p++) {
        if (*p == ' ' || *p == '#') ax_buf_puts(b, "\\");
        if (*p == '$') ax_buf_puts(b, "$");
        ax_buf_put(b, p, 1);
    }
}

static void dep_rule(ax_buf *b, const axc_opts *o, const char *header)
{
    if (o->deptarget) {
        ax_buf_puts(b, o->deptarget);
    } else {
        put_make_path(b, o->output);
        if (header) { ax_buf_puts(b, " "); put_make_path(b, header); }
    }
    ax_buf_puts(b, ":");
    const char *deps[2] = {o->input, o->weights};
    for (int i = 0; i < 2; i++)
        if (deps[i]) { ax_buf_puts(b, " "); put_make_path(b, deps[i]); }
    ax_buf_puts(b, "\n");
    /* As cc -MP: an empty rule per prerequisite, so deleting or renaming
       one (a weights file) does not break the next make. */
    for (int i = 0; i < 2; i++)
        if (deps[i]) { ax_buf_puts(b, "\n"); put_make_path(b, deps[i]); ax_buf_puts(b, ":\n"); }
}

static void emit_dot(const ir_graph *g, ax_buf *out)
{
    size_t live = 0;
    const int peak = g->nnodes ? pass_memplan_peak(g, &live) : -1;
    ir_dump_dot(g, peak, live, out);
}

/* Before any printer: a located error where a model's target lacks an op
 * (cg_target.unsupported). */
static int check_supported(ir_graph **models, int n)
{
    int errors = 0;
    for (int i = 0; i < n; i++) errors += cg_target_check(models[i]);
    return errors ? AXC_EINPUT : AXC_OK;
}

/* --emit=ptx|hsaco: the GPU target's kernel source compiled here with NVRTC
 * or hiprtc (opened with dlopen; no GPU needed) for --arch.  Returns an
 * exit status. */
static int emit_gpu_code(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, ax_buf *out)
{
    const bool ptx = !strcmp(o->emit, "ptx");
    const ir_target_id want = ptx ? IR_TARGET_cuda : IR_TARGET_hip;
    if (models[0]->target->id != want) {
        axc_fail("--emit=%s needs --target=%s", o->emit, ir_targets[want].name);
        return AXC_EUSAGE;
    }
    if (!o->arch) {
        axc_fail("--emit=%s needs --arch (for example --arch=%s)", o->emit, ptx ? "sm_90" : "gfx90a");
        return AXC_EUSAGE;
    }
    if (check_supported(models, n)) return AXC_EINPUT;
    ax_buf src = {0}, none = {0};
    cg_request req = {.models = models, .nmodels = n, .header_name = "", .kernels_only = true,
                      .source_name = axc_source_name(ctx->arena, o)};
    if (cg_target_get(want)->emit(&req, &src, &none)) { ax_buf_free(&src); ax_buf_free(&none); return AXC_EINPUT; }
    ax_buf_put(&src, "", 1);
    char *code = NULL, *err = ax_alloc(ctx->arena, 1 << 16);
    size_t len = 0;
    const int failed = axrt_gpu_compile(ptx ? AXRT_GPU_CUDA : AXRT_GPU_HIP, src.data, o->arch, &code, &len,
                                        err, 1 << 16);
    ax_buf_free(&src);
    ax_buf_free(&none);
    if (failed) {
        axc_fail("cannot compile the %s kernels for %s: %s", ir_targets[want].name, o->arch, err);
        return AXC_EUSAGE;
    }
    ax_buf_put(out, code, len);
    free(code);
    return AXC_OK;
}

/* --emit: the IR (with --train, the step as the C target prints it), a
 * Graphviz graph (as SVG through dot), the memory plan
 * (as text or a timeline picture), GPU code.  Returns an exit status. */
static int emit_view(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, const pass_train_step *train,
                     ax_buf *out)
{
    if (!strcmp(o->emit, "ptx") || !strcmp(o->emit, "hsaco")) return emit_gpu_code(ctx, o, models, n, out);
    for (int i = 0; i < n; i++) {
        if (!strcmp(o->emit, "ax") && print_ax_model(models[i], out)) return AXC_EINPUT;
        else if (!strcmp(o->emit, "ax")) continue;
        if (!strcmp(o->emit, "ir") && train) {   /* the step as the C target prints it */
            if (check_supported(models, n)) return AXC_EINPUT;
            ir_dump_step(models[i], cg_plan_train(models[i], train, o->blas), out);
        } else if (!strcmp(o->emit, "ir")) ir_dump(models[i], out);
        else if (!strcmp(o->emit, "dot") || !strcmp(o->emit, "svg")) emit_dot(models[i], out);
        else if (!strcmp(o->emit, "timeline")) pass_memplan_svg(models[i], out);
        else pass_memplan_report(models[i], out);
    }
    return strcmp(o->emit, "svg") ? AXC_OK : axc_render_svg(out);
}

static int stage(ax_outset *set, const char *path, const ax_buf *b)
{
    if (ax_stage(set, path, b->data ? b->data : "", b->len) == 0) return 0;
    axc_fail("cannot write '%s': %m", path);
    return -1;
}

/* --triple/--cpu: only for the llvm target, and known to this LLVM (the
 * error lists what it knows).  Returns an exit status. */
static int check_llvm_target(ax_ctx *ctx, const axc_opts *o, ir_target_id id)
{
    if (id != IR_TARGET_llvm) {
        if (!o->triple && !o->cpu) return AXC_OK;
        axc_fail("--triple and --cpu apply to the llvm target (a .o or .ll output, or --target=llvm)");
        return AXC_EUSAGE;
    }
#ifdef AXC_HAVE_LLVM
    switch (cg_llvm_check_target(o->triple, o->cpu)) {
    case 1:
        axc_fail("LLVM has no target for triple '%s'; this LLVM has: %s", o->triple,
                 cg_llvm_target_names(ctx->arena));
        return AXC_EUSAGE;
    case 2:
        axc_fail("unknown CPU '%s' for %s; this LLVM's CPUs for it are listed below", o->cpu,
                 o->triple ? o->triple : "the host");
        cg_llvm_list_cpus(o->triple);
        return AXC_EUSAGE;
    case 3:
        axc_fail("triple '%s' is big-endian; the llvm target embeds parameters little-endian", o->triple);
        return AXC_EUSAGE;
    }
#endif
    return AXC_OK;
}

static bool has_ext(const char *path, const char *ext)
{
    size_t len = strlen(path), elen = strlen(ext);
    return len > elen && !strcmp(path + len - elen, ext);
}

/* Generates code into c/h.  Returns an exit status. */
static int generate(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, const pass_train_step *train,
                    const char *header, ax_buf *c, ax_buf *h)
{
    const cg_target *target = cg_target_get(models[0]->target->id);
#ifndef AXC_HAVE_LLVM
    if (!target->emit) { /* only the llvm back end can be left out of a build */
        axc_fail("the %s target %s; use %s", ir_targets[target->facts.id].name, target->missing,
                 "--target=c (a .c output)");
        return AXC_EUSAGE;
    }
#else
#endif
    int rc = check_llvm_target(ctx, o, target->facts.id);
    if (!rc) rc = check_supported(models, n);
    if (rc) return rc;
    cg_request req = {models, n, header ? axc_base_name(header) : "", axc_source_name(ctx->arena, o), o->profile,
                      o->triple, o->cpu, has_ext(o->output, ".ll"), o->blas,
                      has_ext(o->output, ".cu") || has_ext(o->output, ".hip"), train};
    return target->emit(&req, c, h) ? AXC_EINPUT : AXC_OK;
}

/* -o m.cu / m.hip: the kernel source alone, no header. */
static bool has_kernel_ext(const char *path)
{
    const char *e = ext_of(path);
    return !strcmp(e, ".cu") || !strcmp(e, ".hip");
}

/* The header and dependency file paths (NULL where none is written). */
static const char *header_path(ax_ctx *ctx, const axc_opts *o)
{
    if (o->emit || !o->output || has_kernel_ext(o->output)) return NULL;
    return o->header ? o->header : with_ext(ctx->arena, o->output, ".h");
}

static const char *dep_path(ax_ctx *ctx, const axc_opts *o)
{
    if (!(o->make_deps || o->depfile) || !o->output) return NULL;
    return o->depfile ? o->depfile : with_ext(ctx->arena, o->output, ".d");
}

/* Every file this compile writes, checked against the inputs and each other. */
static int check_outputs(ax_ctx *ctx, const axc_opts *o)
{
    axc_output outs[4];
    int n = 0;
    const char *header = header_path(ctx, o), *dep = dep_path(ctx, o);
    if (o->output) outs[n++] = (axc_output){"-o", o->output};
    if (header) outs[n++] = (axc_output){"--header", header};
    if (o->save_weights) outs[n++] = (axc_output){"--save-weights", o->save_weights};
    if (dep) outs[n++] = (axc_output){"-MF", dep};
    return axc_check_outputs(o, outs, n);
}

static int write_outputs(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, const pass_train_step *train,
                         ax_outset *set)
{
    ax_buf view = {0}, c = {0}, h = {0}, w = {0}, d = {0};
    int rc = AXC_OK;
    const char *header = NULL;
    if (o->emit) {
        rc = emit_view(ctx, o, models, n, train, &view);
        if (!rc && o->output) rc = stage(set, o->output, &view) ? AXC_EUSAGE : AXC_OK;
        else if (!rc) fwrite(view.data ? view.data : "", 1, view.len, stdout);
    } else if (o->output) {
        header = header_path(ctx, o);
        rc = generate(ctx, o, models, n, train, header, &c, &h);
        if (!rc && (stage(set, o->output, &c) || (header && stage(set, header, &h)))) rc = AXC_EUSAGE;
    }
    if (!rc && o->save_weights) {
        if (n > 1) { axc_fail("--save-weights needs a single model (choose one with --model)"); rc = AXC_EUSAGE; }
        else { weights_save(models[0], &w); rc = stage(set, o->save_weights, &w) ? AXC_EUSAGE : AXC_OK; }
    }
    if (!rc && (o->make_deps || o->depfile) && o->output) {
        dep_rule(&d, o, header);
        const char *dpath = dep_path(ctx, o);
        rc = stage(set, dpath, &d) ? AXC_EUSAGE : AXC_OK;
    }
    ax_buf_free(&view); ax_buf_free(&c); ax_buf_free(&h); ax_buf_free(&w); ax_buf_free(&d);
    return rc;
}

/* Renames the staged files into place; a failure names the output that
 * could not be written (a directory in the way, typically). */
static int commit_outputs(ax_ctx *ctx, ax_outset *set)
{
    int n = set->n;
    const char **paths = ax_alloc(ctx->arena, sizeof *paths * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) paths[i] = ax_strdup(ctx->arena, set->final[i]);
    if (ax_commit(set) == 0) return AXC_OK;
    int err = errno;
    const char *bad = n ? paths[0] : "outputs";
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) { bad = paths[i]; err = EISDIR; break; }
    }
    errno = err;
    axc_fail("cannot write '%s': %m", bad);
    return AXC_EUSAGE;
}

int axc_compile(ax_ctx *ctx, const axc_opts *o)
{
    if (o->output && !o->emit && check_output_ext(o->output)) return AXC_EUSAGE;
    if (o->arch && (!o->emit || (strcmp(o->emit, "ptx") && strcmp(o->emit, "hsaco")))) {
        axc_fail("--arch applies to --emit=ptx or --emit=hsaco");
        return AXC_EUSAGE;
    }
    ir_graph *models[AXC_MAX_MODELS];
    int n = 0;
    int rc = check_outputs(ctx, o);
    if (!rc) rc = axc_build_models(ctx, o, models, &n);
    pass_train_step train = {0};
    if (!rc && o->train_step) rc = axc_train_step_graphs(ctx, o, models, n, &train);
    if (rc) { axc_free_models(models, n); return rc; }
    if (o->mem_report) {
        ax_buf b = {0};
        for (int i = 0; i < n; i++) pass_memplan_report(models[i], &b);
        fwrite(b.data ? b.data : "", 1, b.len, stdout);
        ax_buf_free(&b);
        if (o->train_step) {   /* docs/training.md */
            pass_train_print_remat(models[0], &train);
            printf("forward on the state: %zu bytes\ntraining state: %zu bytes\n", train.forward->arena_bytes,
                   train.state_bytes);
        }
    }
    ax_outset set = {0};
    rc = write_outputs(ctx, o, models, n, o->train_step ? &train : NULL, &set);
    if (rc == AXC_OK && ctx->errors) rc = AXC_EINPUT;
    axc_free_models(models, n);
    if (train.forward) ir_graph_free_nodes(train.forward);
    if (rc) { ax_abort(&set); return rc; }
    return commit_outputs(ctx, &set);
}
