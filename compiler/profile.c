/* profile.c — what `axc run --profile` and `--dump-dir` do with code
 * generated with per-layer hooks (cg_request.profile, axrt.h
 * axrt_layer_profile): the per-layer table, and each layer's output written
 * as .npy with an index file in execution order (docs/cli.md#seeing-inside-a-model). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cg.h"
#include "driver.h"
#include "tensorfile.h"

/* The one dump in progress: the generated code's hook takes no context,
 * and `axc run` runs one model once with it set. */
static struct {
    const char *dir;
    ax_buf index;     /* index.tsv, written when the run is over */
    int failed;
} dump;

/* A file name from a layer name: letters, digits, '.', '-', '_' kept. */
static void file_name(char *buf, size_t size, int index, const char *layer)
{
    int n = snprintf(buf, size, "%03d_", index);
    for (const char *c = layer; *c && (size_t)n + 5 < size; c++)
        buf[n++] = (char)((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                                  (*c >= '0' && *c <= '9') || strchr(".-_", *c)
                              ? *c
                              : '_');
    snprintf(buf + n, size - (size_t)n, ".npy");
}

static void dump_layer(int index, const axrt_layer_profile *layer, const void *output)
{
    if (!output) /* a multi-result producer: its results are dumped as layers */
        return;
    tf_tensor t = {.name = layer->layer, .dtype = layer->out.dtype, .rank = layer->out.rank,
                   .data = output};
    size_t count = 1;
    for (int d = 0; d < t.rank; d++) {
        t.shape[d] = layer->out.dims[d];
        count *= (size_t)t.shape[d];
    }
    t.nbytes = count * axrt_dtype_size(t.dtype);
    float *widened = NULL;
    if (t.dtype == AXRT_BF16) { /* .npy has no bfloat16: widened to float32, exactly */
        widened = malloc(count * sizeof *widened + 1);
        if (!widened) ax_die("out of memory");
        tf_convert(widened, AXRT_F32, output, AXRT_BF16, count);
        t.dtype = AXRT_F32, t.data = (const uint8_t *)widened, t.nbytes = count * sizeof *widened;
    }
    char name[200], path[4096];
    file_name(name, sizeof name, index, layer->layer);
    snprintf(path, sizeof path, "%s/%s", dump.dir, name);
    ax_buf b = {0};
    tf_npy_write(&b, &t);
    if (ax_write_file_atomic(path, b.data, b.len) != 0) {
        if (!dump.failed) axc_fail("cannot write '%s': %s", path, strerror(errno));
        dump.failed = 1;
    }
    free(widened);
    ax_buf_free(&b);
    ax_buf_printf(&dump.index, "%d\t%s\t%s\t%s\n", index, layer->layer, name, layer->op);
}

int axc_profile_attach(ax_ctx *ctx, void *(*lookup)(void *, const char *), void *handle, const ir_graph *g,
                       axc_profile *p)
{
    p->layers = lookup(handle, ax_sprintf(ctx->arena, "%s_profile", g->name));
    p->hook = lookup(handle, ax_sprintf(ctx->arena, "%s_layer_hook", g->name));
    p->count = cg_profiled_layers(g);
    if (!p->layers || !p->hook) ax_die("generated code for '%s' built without its profile", g->name);
    return AXC_OK;
}

int axc_profile_dump_begin(const axc_profile *p, const char *dir)
{
    if (mkdir(dir, 0777) && errno != EEXIST) {
        axc_fail("cannot create '%s': %s", dir, strerror(errno));
        return AXC_EUSAGE;
    }
    dump.dir = dir;
    dump.failed = 0;
    ax_buf_free(&dump.index);
    ax_buf_puts(&dump.index, "# index\tlayer\tfile\top (axc run --dump-dir; axc compare reads it)\n");
    *p->hook = dump_layer;
    return AXC_OK;
}

int axc_profile_dump_end(const axc_profile *p)
{
    *p->hook = NULL;
    if (!dump.dir) /* begin failed (and said why) */
        return AXC_EUSAGE;
    char path[4096];
    snprintf(path, sizeof path, "%s/index.tsv", dump.dir);
    if (!dump.failed && ax_write_file_atomic(path, dump.index.data, dump.index.len)) {
        axc_fail("cannot write '%s': %s", path, strerror(errno));
        dump.failed = 1;
    }
    ax_buf_free(&dump.index);
    dump.dir = NULL;
    return dump.failed ? AXC_EUSAGE : AXC_OK;
}

void axc_profile_reset(const axc_profile *p)
{
    for (int k = 0; k < p->count; k++) p->layers[k].ticks = p->layers[k].calls = 0;
}

/* The table's name columns: as wide as the longest layer and op names
 * (names are printed whole), at least as wide as their headings' defaults. */
typedef struct { int layer, op; } profile_widths;

static profile_widths column_widths(const axc_profile *p)
{
    profile_widths w = {22, 26};
    for (int k = 0; k < p->count; k++) {
        const size_t layer = p->layers[k].layer ? strlen(p->layers[k].layer) : 0;
        const size_t op = p->layers[k].op ? strlen(p->layers[k].op) : 0;
        if (layer > (size_t)w.layer) w.layer = layer > 1000 ? 1000 : (int)layer;
        if (op > (size_t)w.op) w.op = op > 1000 ? 1000 : (int)op;
    }
    return w;
}

/* One row: layer, op, shape, time per call, share, and the rate that
 * matters for it (GFLOP/s when it computes more than a FLOP per byte,
 * else GB/s). */
static void print_row(const axrt_layer_profile *l, profile_widths w, double us, double total_us)
{
    char shape[96];
    ir_shape_str(l->out.dims, l->out.rank, shape, sizeof shape);
    double rate = 0;
    const char *unit = "";
    if (us > 0 && l->flops > l->bytes) { rate = l->flops / us / 1e3; unit = "GFLOP/s"; }
    else if (us > 0 && l->bytes > 0) { rate = l->bytes / us / 1e3; unit = "GB/s"; }
    printf("  %-*s %-*s %-18s %10.2f %6.1f%% %8.2f %s\n", w.layer, l->layer ? l->layer : "", w.op,
           l->op ? l->op : "", shape, us, total_us > 0 ? 100 * us / total_us : 0, rate, unit);
}

void axc_profile_print(const axc_profile *p, const char *model, double wall_us_per_run)
{
    double total = 0;
    for (int k = 0; k < p->count; k++)
        if (p->layers[k].calls) total += (double)p->layers[k].ticks / 1e3 / (double)p->layers[k].calls;
    printf("profile of %s (per run, averaged over %llu runs)\n", model,
           p->count ? (unsigned long long)p->layers[0].calls : 0ull);
    const profile_widths w = column_widths(p);
    printf("  %-*s %-*s %-18s %10s %7s %8s\n", w.layer, "layer", w.op, "op", "output", "time us", "share",
           "rate");
    for (int k = 0; k < p->count; k++) {
        const axrt_layer_profile *l = &p->layers[k];
        print_row(l, w, l->calls ? (double)l->ticks / 1e3 / (double)l->calls : 0, total);
    }
    printf("  total %.2f us in layers, %.2f us per run measured around the whole model\n", total,
           wall_us_per_run);
}
