/* quantize.c — `--quantize=int8 --calibrate NAME=FILE.npy` (docs/precision.md#int8-post-training-quantisation):
 * reads one calibration file per model input (samples along dim 0: shape
 * [S, input dims...], the input's dtype, S >= 1), runs the float model over
 * every sample in the reference interpreter, recording each node's smallest
 * and largest value, and hands the ranges to pass_quant, which rewrites the
 * dense and conv layers to int8.  Bad files are usage errors (exit 2) that
 * name the file, the input and what was expected.  Then it runs the samples
 * again, float and with every int8 layer computed by the runtime's int8
 * kernels (the rest in the interpreter), and prints the error per output. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_target.h"
#include "driver.h"
#include "ir_interp.h"
#include "tensorfile.h"

typedef struct calib_set {
    int64_t samples;
    const uint8_t **data;  /* per graph input: S samples, each ir_nbytes(input) */
} calib_set;

typedef struct ranges {
    double *lo, *hi;
} ranges;

static void observe(void *user, int id, double *v, int64_t count)
{
    ranges *r = user;
    for (int64_t i = 0; i < count; i++) {
        if (v[i] < r->lo[id]) r->lo[id] = v[i];
        if (v[i] > r->hi[id]) r->hi[id] = v[i];
    }
}

/* The --calibrate file for graph input n (index i), checked against it. */
static int load_one(ax_ctx *ctx, const ir_node *n, const char *path, calib_set *set, int i)
{
    tf_tensor t;
    int rc = axc_read_npy_file(ctx, "--calibrate", path, &t);
    if (rc) return rc;
    bool fits = t.rank == n->rank + 1 && t.dtype == n->dtype;
    for (int d = 0; fits && d < n->rank; d++) fits = t.shape[d + 1] == n->shape[d];
    if (!fits) {
        char want[128], got[128];
        ir_shape_str(n->shape, n->rank, want, sizeof want);
        ir_shape_str(t.shape, t.rank, got, sizeof got);
        axc_fail("--calibrate %s: %s holds %s%s, but input '%s' takes %s%s: expected %s[S, ...] with "
                 "the S samples along dim 0", n->name, path, ir_dtype_name(t.dtype), got, n->name,
                 ir_dtype_name(n->dtype), want, ir_dtype_name(n->dtype));
        return AXC_EUSAGE;
    }
    if (t.shape[0] == 0) { axc_fail("--calibrate %s: %s holds no samples", n->name, path); return AXC_EUSAGE; }
    if (set->samples && set->samples != t.shape[0]) {
        axc_fail("--calibrate %s: %s holds %lld samples, the other inputs' files %lld", n->name, path,
                 (long long)t.shape[0], (long long)set->samples);
        return AXC_EUSAGE;
    }
    int64_t at;
    double bad;
    if (axc_first_nonfinite(&t, &at, &bad)) {   /* one would make a scale infinite and every int8 value 0 */
        const int64_t per_sample = t.shape[0] ? (int64_t)(t.nbytes / ir_dtypes[t.dtype].size) / t.shape[0] : 1;
        axc_fail("--calibrate %s: %s holds %g at sample %lld, element %lld (flat index %lld): calibration data "
                 "must be finite", n->name, path, bad, (long long)(at / per_sample), (long long)(at % per_sample),
                 (long long)at);
        return AXC_EINPUT;
    }
    set->samples = t.shape[0];
    set->data[i] = t.data;
    return AXC_OK;
}

/* One --calibrate file per graph input, each naming one. */
static int load_calibration(ax_ctx *ctx, const axc_opts *o, const ir_graph *g, calib_set *set)
{
    set->data = ax_alloc(ctx->arena, sizeof *set->data * (size_t)(g->ninputs + 1));
    for (int k = 0; k < o->ncalib; k++) {
        int found = -1;
        for (int i = 0; i < g->ninputs; i++)
            if (!strcmp(g->nodes[g->inputs[i]].name, o->calib[k].name)) found = i;
        if (found < 0) {
            axc_fail("--calibrate %s: model '%s' has no input of that name", o->calib[k].name, g->name);
            return AXC_EUSAGE;
        }
        int rc = load_one(ctx, &g->nodes[g->inputs[found]], o->calib[k].path, set, found);
        if (rc) return rc;
    }
    for (int i = 0; i < g->ninputs; i++)
        if (!set->data[i]) {
            axc_fail("--quantize=int8: no --calibrate file for input '%s' of model '%s'",
                     g->nodes[g->inputs[i]].name, g->name);
            return AXC_EUSAGE;
        }
    return AXC_OK;
}

/* ---- the calibration set's error: int8 layers emulated in the interpreter ----
 * Each int8 layer, add, concat, ReLU and mean (pool) runs its own kernel-call
 * plan (cg_plan_run.c: the generated code's kernels, operands arriving and
 * results leaving float); the rest of the model, the interpreter. */

typedef struct emulation {
    const ir_graph *g;
    float **stash;   /* per node: a float copy of its value, for the int8 layers reading it */
    bool *wanted;
    cg_plan_host *hosts;   /* per int8 node: its plan, made once */
} emulation;

static float *float_copy(const double *v, int64_t count)
{
    float *f = malloc(sizeof *f * (size_t)(count > 0 ? count : 1));
    if (!f) ax_out_of_memory(0);
    for (int64_t i = 0; i < count; i++) f[i] = (float)v[i];
    return f;
}

static void emulate(void *user, int id, double *v, int64_t count)
{
    emulation *e = user;
    const ir_node *n = &e->g->nodes[id];
    /* an int8 max-pool (no weight, no operands of its own): the float one gives its integers */
    if (n->quant && (n->quant->nin || n->quant->w)) {
        float *y = malloc(sizeof *y * (size_t)count + 1);
        if (!y) ax_out_of_memory(0);
        cg_plan_host_run(e->g, id, &e->hosts[id], e->stash, y);
        for (int64_t i = 0; i < count; i++) {   /* a float epilogue as the generated code's */
            float r = y[i];
            if (n->quant->float_out && n->attrs.residual != IR_NONE) r += e->stash[n->src[n->attrs.residual]][i];
            v[i] = n->quant->float_out && n->attrs.act != IR_NONE
                       ? (float)ir_interp_unary((ir_op)n->attrs.act, n->attrs.alpha, r) : r;
        }
        free(y);
    }
    if (e->wanted[id]) e->stash[id] = float_copy(v, count);
}

/* Runs sample inputs `in` float and emulated; adds each output's squared
 * error and squared float value to err2[k], ref2[k] and raises amax[k] to
 * its largest absolute error. */
static int compare_sample(const ir_graph *g, const void *const *in, void **f, void **q, emulation *e,
                          double *err2, double *ref2, double *amax)
{
    if (ir_interp_run(g, in, f) || ir_interp_run_observed(g, in, q, emulate, e)) return -1;
    for (int id = 0; id < g->nnodes; id++) { free(e->stash[id]); e->stash[id] = NULL; }
    for (int k = 0; k < g->noutputs; k++) {
        const ir_node *o = &g->nodes[g->outputs[k]];
        for (int64_t i = 0; i < ir_numel(o); i++) {
            const double a = o->dtype == AXRT_F64 ? ((double *)f[k])[i] : ((float *)f[k])[i];
            const double b = o->dtype == AXRT_F64 ? ((double *)q[k])[i] : ((float *)q[k])[i];
            err2[k] += (b - a) * (b - a);
            ref2[k] += a * a;
            amax[k] = fabs(b - a) > amax[k] ? fabs(b - a) : amax[k];
        }
    }
    return 0;
}

/* Called per sample with its inputs and two sets of output buffers. */
typedef int sample_fn(const ir_graph *g, const void *const *in, void **out_a, void **out_b, void *user);

/* Calls fn for every sample (aligned copies of its inputs); 0 or -1. */
static int for_each_sample(const ir_graph *g, const calib_set *set, sample_fn *fn, void *user)
{
    const void **in = calloc((size_t)g->ninputs + 1, sizeof *in);
    void **out = calloc(2 * (size_t)g->noutputs + 1, sizeof *out);
    void **owned = calloc((size_t)g->ninputs + 1, sizeof *owned);
    int status = in && out && owned ? 0 : -1;
    for (int k = 0; k < 2 * g->noutputs && !status; k++)
        if (!(out[k] = malloc(ir_nbytes(&g->nodes[g->outputs[k % g->noutputs]]) + 1))) status = -1;
    for (int i = 0; i < g->ninputs && !status; i++)
        if (!(owned[i] = malloc(ir_nbytes(&g->nodes[g->inputs[i]]) + 1))) status = -1;
    for (int64_t s = 0; s < set->samples && !status; s++) {
        for (int i = 0; i < g->ninputs; i++) {
            const size_t bytes = ir_nbytes(&g->nodes[g->inputs[i]]);
            memcpy(owned[i], set->data[i] + (size_t)s * bytes, bytes);
            in[i] = owned[i];
        }
        status = fn(g, in, out, out + g->noutputs, user);
    }
    for (int k = 0; out && k < 2 * g->noutputs; k++) free(out[k]);
    for (int i = 0; owned && i < g->ninputs; i++) free(owned[i]);
    free(in);
    free(out);
    free(owned);
    return status;
}

static int sample_ranges(const ir_graph *g, const void *const *in, void **out, void **unused, void *r)
{
    (void)unused;
    return ir_interp_run_observed(g, in, out, observe, r);
}

typedef struct error_sums {
    emulation e;
    double *err2, *ref2, *amax;
} error_sums;

static int sample_error(const ir_graph *g, const void *const *in, void **f, void **q, void *user)
{
    error_sums *sums = user;
    return compare_sample(g, in, f, q, &sums->e, sums->err2, sums->ref2, sums->amax);
}

/* Per output, on stderr (the format docs/precision.md "int8 post-training quantisation"
 * documents; tests/quant/run.sh recomputes both figures from the float and
 * int8 builds' outputs):
 *   axc: MODEL: int8 vs float on the calibration set (S samples): output K (NAME)
 *   relative error P %, max abs error E
 * P = 100 ||q - f||_2 / ||f||_2 and E = max |q - f| over every element of
 * that output in all S samples together, f the float model's, q the int8
 * model's (its int8 layers computed by the runtime's kernels). */
static int report_error(ax_ctx *ctx, ir_graph *g, const calib_set *set)
{
    const size_t nodes = (size_t)g->nnodes + 1, outs = (size_t)g->noutputs + 1;
    error_sums sums = {{g, ax_alloc(ctx->arena, nodes * sizeof(float *)), ax_alloc(ctx->arena, nodes),
                        ax_alloc(ctx->arena, nodes * sizeof(cg_plan_host))},
                       ax_alloc(ctx->arena, outs * sizeof(double)), ax_alloc(ctx->arena, outs * sizeof(double)),
                       ax_alloc(ctx->arena, outs * sizeof(double))};
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (!n->quant || n->dead) continue;
        if (n->quant->nin || n->quant->w) sums.e.hosts[id] = cg_plan_host_prepare(g, id);
        sums.e.wanted[n->src[0]] = true;
        for (int k = 0; k < n->quant->nin; k++) sums.e.wanted[n->src[k]] = true;
        if (n->attrs.residual != IR_NONE) sums.e.wanted[n->src[n->attrs.residual]] = true;
    }
    for (int k = 0; k < g->noutputs; k++)
        if (!ir_dtype_is_float(g->nodes[g->outputs[k]].dtype)) return 0;
    if (for_each_sample(g, set, sample_error, &sums)) return -1;
    for (int k = 0; k < g->noutputs; k++) {
        const char *name = g->output_names && g->output_names[k] ? g->output_names[k]
                           : g->nodes[g->outputs[k]].name ? g->nodes[g->outputs[k]].name : "output";
        fprintf(stderr, "axc: %s: int8 vs float on the calibration set (%lld samples): output %d (%s) "
                "relative error %.4g %%, max abs error %.4g\n", g->name, (long long)set->samples, k, name,
                100 * sqrt(sums.err2[k] / (sums.ref2[k] > 0 ? sums.ref2[k] : 1)), sums.amax[k]);
    }
    return 0;
}

int axc_quantize(ax_ctx *ctx, const axc_opts *o, ir_graph *g)
{
    if (g->target && g->target->id != IR_TARGET_c && g->target->id != IR_TARGET_llvm) {
        axc_fail("--quantize=int8 is built for the c and llvm targets only, not --target=%s",
                 ir_targets[g->target->id].name);
        return AXC_EUSAGE;
    }
    calib_set set = {0};
    int rc = load_calibration(ctx, o, g, &set);
    if (rc) return rc;
    ranges r = {ax_alloc(ctx->arena, sizeof(double) * (size_t)(g->nnodes + 1)),
                ax_alloc(ctx->arena, sizeof(double) * (size_t)(g->nnodes + 1))};
    for (int id = 0; id < g->nnodes; id++) { r.lo[id] = INFINITY; r.hi[id] = -INFINITY; }
    if (for_each_sample(g, &set, sample_ranges, &r)) ax_out_of_memory(0);
    int layers = 0;
    for (int id = 0; id < g->nnodes; id++)
        layers += !g->nodes[id].dead && (g->nodes[id].op == IR_OP_dense || g->nodes[id].op == IR_OP_conv);
    const int done = pass_quant(g, r.lo, r.hi);
    if (o->emit && !o->run) return ctx->errors ? AXC_EINPUT : AXC_OK;
    int ew = 0, moves = 0;   /* the elementwise and mean nodes; the data movement (no weights, no operands) */
    for (int id = 0; id < g->nnodes; id++) {
        const ir_quant *q = g->nodes[id].quant;
        ew += q && q->nin;
        moves += q && !q->nin && !q->w && g->nodes[id].op != IR_OP_result;
    }
    fprintf(stderr, "axc: %s: %d of %d dense/conv layers in int8, and %d add/concat/ReLU/mean-pool, %d max-pool/"
            "reshape/transpose/slice/chunk (calibrated on %lld samples); the rest of the model in float\n", g->name,
            done, layers, ew, moves, (long long)set.samples);
    if (report_error(ctx, g, &set)) ax_out_of_memory(0);
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}

/* ---- a quantised model file (ONNX QDQ / QLinear*): its own parameters ---- */

bool axc_file_quantised(const ir_graph *g)
{
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && g->nodes[id].file_scale > 0) return true;
    return false;
}

/* Whether op passes its operand's values on unchanged or picks among them
 * (TFLite's rule: it shares the operand's scale and zero point). */
static bool moves_values(ir_op op)
{
    return op == IR_OP_reshape || op == IR_OP_transpose || op == IR_OP_maxpool || op == IR_OP_slice ||
           op == IR_OP_chunk || op == IR_OP_result || op == IR_OP_relu || op == IR_OP_relu6;
}

/* Node id gets node from's file parameters: the integers of the file's
 * value, kept where its readers are float (pass_quant drop_float_ended). */
static void share_params(ir_graph *g, int id, int from)
{
    g->nodes[id].file_scale = g->nodes[from].file_scale;
    g->nodes[id].file_zp = g->nodes[from].file_zp;
}

/* Node id's range when every live reader is a reshape with a range (the
 * importer's reshape after a GlobalAveragePool's mean-pool): the same
 * values, the same parameters. */
static void view_range(ir_graph *g, int id, ranges *r)
{
    double lo = NAN, hi = NAN;
    int first_reader = IR_NONE;
    for (int k = id + 1; k < g->nnodes; k++) {
        const ir_node *n = &g->nodes[k];
        for (int i = 0; !n->dead && i < n->nsrc; i++) {
            if (n->src[i] != id) continue;
            if (n->op != IR_OP_reshape || isnan(r->lo[k]) || (!isnan(lo) && (lo != r->lo[k] || hi != r->hi[k])))
                return;
            lo = r->lo[k];
            hi = r->hi[k];
            first_reader = k;
        }
    }
    if (isnan(lo)) return;
    r->lo[id] = lo;
    r->hi[id] = hi;
    share_params(g, id, first_reader);
}

int axc_quantize_file(ax_ctx *ctx, const axc_opts *o, ir_graph *g)
{
    if (g->target && g->target->id != IR_TARGET_c && g->target->id != IR_TARGET_llvm) {
        axc_fail("a quantised model runs in int8 on the c and llvm targets only, not --target=%s",
                 ir_targets[g->target->id].name);
        return AXC_EUSAGE;
    }
    if (o->interp) {
        axc_fail("model '%s' is quantised (its file gives scales and zero points): it runs in generated code "
                 "(C, or LLVM with --jit), not --interp", g->name);
        return AXC_EUSAGE;
    }
    if (g->dtype != AXRT_F32) {
        axc_fail("--dtype=%s: model '%s' is quantised (its file gives scales and zero points) and computes in "
                 "int8 and Float32", ir_dtype_name(g->dtype), g->name);
        return AXC_EUSAGE;
    }
    if (o->quantize) {
        axc_fail("--quantize=int8: model '%s' is quantised already (its file gives the scales and zero points)",
                 g->name);
        return AXC_EUSAGE;
    }
    pass_fuse_spatial_mean(g);   /* the importer's two means of a GlobalAveragePool: one value, one int8 node */
    /* the range whose parameters (pass_quant_params) are exactly the file's;
       NaN: a value the file leaves float */
    ranges r = {ax_alloc(ctx->arena, sizeof(double) * (size_t)(g->nnodes + 1)),
                ax_alloc(ctx->arena, sizeof(double) * (size_t)(g->nnodes + 1))};
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        r.lo[id] = r.hi[id] = NAN;
        if (n->dead) continue;
        if (n->file_scale > 0) {
            r.lo[id] = (-128.0 - n->file_zp) * n->file_scale;
            r.hi[id] = (127.0 - n->file_zp) * n->file_scale;
        } else if (moves_values(n->op) && n->nsrc >= 1) {
            r.lo[id] = r.lo[n->src[0]];
            r.hi[id] = r.hi[n->src[0]];
            share_params(g, id, n->src[0]);
        }
    }
    for (int id = g->nnodes - 1; id >= 0; id--)   /* a value the file quantises only after a reshape */
        if (!g->nodes[id].dead && isnan(r.lo[id])) view_range(g, id, &r);
    int layers = 0;
    for (int id = 0; id < g->nnodes; id++)
        layers += !g->nodes[id].dead && (g->nodes[id].op == IR_OP_dense || g->nodes[id].op == IR_OP_conv);
    const int done = pass_quant(g, r.lo, r.hi);
    if (o->emit && !o->run) return ctx->errors ? AXC_EINPUT : AXC_OK;
    int ew = 0;
    for (int id = 0; id < g->nnodes; id++)
        ew += g->nodes[id].quant && g->nodes[id].quant->nin;
    fprintf(stderr, "axc: %s: %d of %d dense/conv layers in int8, and %d add/concat/ReLU/mean-pool/softmax/"
            "logistic/tanh, with the model file's scales and zero points; the rest of the model in float\n",
            g->name, done, layers, ew);
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}
