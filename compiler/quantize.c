/* quantize.c — `--quantize=int8 --calibrate NAME=FILE.npy` (interface.md §7):
 * reads one calibration file per model input (samples along dim 0: shape
 * [S, input dims...], the input's dtype, S >= 1), runs the float model over
 * every sample in the reference interpreter, recording each node's smallest
 * and largest value, and hands the ranges to pass_quant, which rewrites the
 * dense and conv layers to int8.  Bad files are usage errors (exit 2) that
 * name the file, the input and what was expected. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    size_t len;
    char err[256];
    const uint8_t *buf = (const uint8_t *)ax_read_file(ctx->arena, path, &len);
    if (!buf) { axc_fail("cannot read '%s': %s", path, strerror(errno)); return AXC_EUSAGE; }
    tf_tensor t;
    if (tf_npy_parse(buf, len, &t, err, sizeof err)) { axc_fail("%s: %s", path, err); return AXC_EUSAGE; }
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

/* Runs every sample through the interpreter, widening r per node. */
static int observe_ranges(const ir_graph *g, const calib_set *set, ranges *r)
{
    const void **in = calloc((size_t)g->ninputs + 1, sizeof *in);
    void **out = calloc((size_t)g->noutputs + 1, sizeof *out);
    void **owned = calloc((size_t)g->ninputs + 1, sizeof *owned);
    int status = in && out && owned ? 0 : -1;
    for (int k = 0; k < g->noutputs && !status; k++)
        if (!(out[k] = malloc(ir_nbytes(&g->nodes[g->outputs[k]]) + 1))) status = -1;
    for (int i = 0; i < g->ninputs && !status; i++)
        if (!(owned[i] = malloc(ir_nbytes(&g->nodes[g->inputs[i]]) + 1))) status = -1;
    for (int64_t s = 0; s < set->samples && !status; s++) {
        for (int i = 0; i < g->ninputs; i++) {   /* aligned copies of sample s */
            const size_t bytes = ir_nbytes(&g->nodes[g->inputs[i]]);
            memcpy(owned[i], set->data[i] + (size_t)s * bytes, bytes);
            in[i] = owned[i];
        }
        status = ir_interp_run_observed(g, in, out, observe, r);
    }
    for (int k = 0; out && k < g->noutputs; k++) free(out[k]);
    for (int i = 0; owned && i < g->ninputs; i++) free(owned[i]);
    free(in);
    free(out);
    free(owned);
    return status;
}

int axc_quantize(ax_ctx *ctx, const axc_opts *o, ir_graph *g)
{
    if (g->target && g->target->id != IR_TARGET_c) {
        axc_fail("--quantize=int8 is built for the C target only, not --target=%s", ir_targets[g->target->id].name);
        return AXC_EUSAGE;
    }
    calib_set set = {0};
    int rc = load_calibration(ctx, o, g, &set);
    if (rc) return rc;
    ranges r = {ax_alloc(ctx->arena, sizeof(double) * (size_t)(g->nnodes + 1)),
                ax_alloc(ctx->arena, sizeof(double) * (size_t)(g->nnodes + 1))};
    for (int id = 0; id < g->nnodes; id++) { r.lo[id] = INFINITY; r.hi[id] = -INFINITY; }
    if (observe_ranges(g, &set, &r)) ax_out_of_memory(0);
    int layers = 0;
    for (int id = 0; id < g->nnodes; id++)
        layers += !g->nodes[id].dead && (g->nodes[id].op == IR_OP_dense || g->nodes[id].op == IR_OP_conv);
    const int done = pass_quant(g, r.lo, r.hi);
    if (!o->emit || o->run)
        fprintf(stderr, "axc: %s: %d of %d dense/conv layers in int8 (calibrated on %lld samples); "
                "the rest of the model in float\n", g->name, done, layers, (long long)set.samples);
    return ctx->errors ? AXC_EINPUT : AXC_OK;
}
