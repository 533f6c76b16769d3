/* compare.c — `axc compare DIR REF_DIR [--rtol R]` (docs/cli.md#seeing-inside-a-model): walks
 * DIR's layers in execution order (index.tsv, as `axc run --dump-dir` or
 * the Python helper writes it) and names the first whose output differs
 * from REF_DIR's layer of the same name beyond the tolerance: exit 1; 0 when
 * every layer both hold agrees; 2 on a usage or file problem.  A layer's
 * output is the last node named after it (named_later).  A layer
 * differs when max|a - b| > rtol * max|b| (its largest reference
 * magnitude), a NaN is in one and not the other, or the shapes differ.
 * Two ways a correct port from PyTorch differs from axc, undone here:
 * - layout: axc's image tensors are channels-last (NHWC), PyTorch's
 *   channels-first; a reference of shape [N, C, ...] whose channels moved
 *   last give DIR's shape is compared channels-last when its shape differs
 *   from DIR's or its index's layout column says "channels-first" (as
 *   axc_torch.dump_reference writes it: square tensors fit both layouts);
 * - fused activations: a layer whose op ends in "+act" (Dense(...;
 *   activation=relu) is "dense+relu"), or whose last node is the activation
 *   (-O0), is compared with the reference entry right after its namesake
 *   when that entry's op is the activation (PyTorch's nn.ReLU module after
 *   nn.Linear; ops match ignoring case and '_'). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "tensorfile.h"

#define MAX_LAYERS 100000

typedef struct layer_entry {
    char *layer, *file, *op; /* op: "" when the index has none */
    bool channels_first;     /* the layout column says "channels-first" */
} layer_entry;

typedef struct layer_index {
    layer_entry *entries;
    int n;
} layer_index;

/* Reads DIR/index.tsv: "index<TAB>layer<TAB>file[<TAB>op[<TAB>layout]]" per
 * line, '#' comments. */
static int read_index(ax_arena *a, const char *dir, layer_index *out)
{
    const char *path = ax_sprintf(a, "%s/index.tsv", dir);
    size_t len;
    char *text = ax_read_file(a, path, &len);
    if (!text) { axc_fail("cannot read '%s': %s", path, strerror(errno)); return -1; }
    out->entries = ax_alloc(a, sizeof *out->entries * MAX_LAYERS);
    out->n = 0;
    for (char *line = strtok(text, "\n"); line && out->n < MAX_LAYERS; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || !line[0]) continue;
        char *layer = strchr(line, '\t'), *file = layer ? strchr(layer + 1, '\t') : NULL;
        if (!file) { axc_fail("%s: malformed line '%s'", path, line); return -1; }
        *layer++ = 0, *file++ = 0;
        char *op = strchr(file, '\t');
        if (op) *op++ = 0;
        char *layout = op ? strchr(op, '\t') : NULL;
        if (layout) *layout++ = 0;
        char *end = layout ? strchr(layout, '\t') : NULL;
        if (end) *end = 0;
        out->entries[out->n++] = (layer_entry){layer, ax_sprintf(a, "%s/%s", dir, file), op ? op : "",
                                               layout && !strcmp(layout, "channels-first")};
    }
    return 0;
}

/* The tensor in path as doubles (heap); NULL after reporting. */
static double *load_values(ax_arena *a, const char *path, tf_tensor *t)
{
    size_t len;
    char err[256];
    const char *bytes = ax_read_file(a, path, &len);
    if (!bytes) { axc_fail("cannot read '%s': %s", path, strerror(errno)); return NULL; }
    if (tf_npy_parse((const uint8_t *)bytes, len, t, err, sizeof err)) {
        axc_fail("%s: %s", path, err);
        return NULL;
    }
    size_t count = t->nbytes / axrt_dtype_size(t->dtype);
    double *v = malloc((count ? count : 1) * sizeof *v);
    if (!v) ax_die("out of memory");
    tf_convert(v, AXRT_F64, t->data, t->dtype, count);
    return v;
}

static bool same_shape(const tf_tensor *a, const tf_tensor *b)
{
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* Whether ref (channels-first [N, C, d1, ...]) holds run's tensor
 * (channels-last [N, d1, ..., C]) in PyTorch's layout. */
static bool channels_first_of(const tf_tensor *run, const tf_tensor *ref)
{
    int r = run->rank;
    if (r < 3 || ref->rank != r || run->shape[0] != ref->shape[0] || run->shape[r - 1] != ref->shape[1]) return false;
    for (int d = 1; d < r - 1; d++)
        if (run->shape[d] != ref->shape[d + 1]) return false;
    return true;
}

/* ref's values moved from [N, C, S] to [N, S, C] (S: the spatial dims,
 * flattened); its shape becomes run's. */
static void to_channels_last(double *v, tf_tensor *ref, const tf_tensor *run)
{
    size_t n = (size_t)ref->shape[0], c = (size_t)ref->shape[1], s = 1;
    for (int d = 2; d < ref->rank; d++) s *= (size_t)ref->shape[d];
    size_t count = n * c * s;
    double *moved = malloc((count > 0 ? count : 1) * sizeof *moved);
    if (!moved) ax_die("out of memory");
    for (size_t i = 0; i < n; i++)
        for (size_t ch = 0; ch < c; ch++)
            for (size_t p = 0; p < s; p++) moved[(i * s + p) * c + ch] = v[(i * c + ch) * s + p];
    memcpy(v, moved, count * sizeof *v);
    free(moved);
    memcpy(ref->shape, run->shape, sizeof ref->shape);
}

/* A layer may span several nodes (Dense(...; activation=softmax) is a
 * dense and a softmax, both named after the layer); its output is the last
 * one's. */
static bool named_later(const layer_index *x, int k)
{
    for (int i = k + 1; i < x->n; i++)
        if (!strcmp(x->entries[i].layer, x->entries[k].layer)) return true;
    return false;
}

/* The activation fused into run's layer k ("relu" of "dense+relu", or
 * the op of its last node when earlier nodes share its name); NULL when
 * none. */
static const char *fused_activation(const layer_index *run, int k)
{
    const char *op = run->entries[k].op, *plus = strrchr(op, '+');
    if (plus) return plus + 1;
    for (int i = 0; i < k; i++)
        if (!strcmp(run->entries[i].layer, run->entries[k].layer)) return op;
    return NULL;
}

/* "relu" names the op "ReLU"; "leaky_relu" names "LeakyReLU". */
static bool same_op(const char *a, const char *b)
{
    for (;; a++, b++) {
        while (*a == '_') a++;
        while (*b == '_') b++;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
        if (!*a) return true;
    }
}

/* The op after the last '+' of op ("relu" of "dense+relu"), or op. */
static const char *last_op(const char *op)
{
    const char *plus = strrchr(op, '+');
    return plus ? plus + 1 : op;
}

/* The index of the last entry of x named layer before end, or -1. */
static int last_named(const layer_index *x, const char *layer, int end)
{
    for (int i = end - 1; i >= 0; i--)
        if (!strcmp(x->entries[i].layer, layer)) return i;
    return -1;
}

/* What run's layer k (its last node) is compared with. */
typedef struct pairing {
    const layer_entry *run, *ref; /* ref NULL: the reference lacks the layer */
    const char *apply;            /* an activation to apply to ref first, or NULL */
} pairing;

/* A layer with a fused activation act is compared, in this order of
 * preference: as is when the reference's namesake holds act too (another
 * axc dump); with the reference entry right after the namesake when that
 * is act (PyTorch's nn.ReLU module after nn.Linear); before act, through
 * the layer's own earlier node (-O0), when the reference applies act
 * without a module of its own (torch.relu in forward); else with act
 * applied to the reference. */
static pairing pair_layer(const layer_index *run, int k, const layer_index *ref)
{
    const layer_entry *e = &run->entries[k];
    const char *act = fused_activation(run, k);
    int i = last_named(ref, e->layer, ref->n);
    if (i < 0) return (pairing){e, NULL, NULL};
    const layer_entry *r = &ref->entries[i];
    if (!act || !*act || same_op(last_op(r->op), act)) return (pairing){e, r, NULL};
    if (i + 1 < ref->n && same_op(ref->entries[i + 1].op, act)) return (pairing){e, &ref->entries[i + 1], NULL};
    int pre = last_named(run, e->layer, k);
    if (pre >= 0) return (pairing){&run->entries[pre], r, NULL};
    return (pairing){e, r, act};
}

/* v = act(v) for the activations a reference may lack (relu, sigmoid,
 * tanh); false for another one, left as is. */
static bool apply_activation(double *v, size_t count, const char *act)
{
    for (size_t i = 0; i < count; i++) {
        if (same_op(act, "relu")) v[i] = v[i] > 0 ? v[i] : 0;
        else if (same_op(act, "sigmoid")) v[i] = 1 / (1 + exp(-v[i]));
        else if (same_op(act, "tanh")) v[i] = tanh(v[i]);
        else return false;
    }
    return true;
}

/* 1 when the layers differ (message printed), 0 when they agree, -1 on error. */
static int compare_layer(ax_arena *a, const pairing *p, double rtol, int k)
{
    const layer_entry *e = p->run;
    tf_tensor ta, tb;
    double *va = load_values(a, e->file, &ta), *vb = va ? load_values(a, p->ref->file, &tb) : NULL;
    if (!va || !vb) { free(va); return -1; }
    int differs = 0;
    if ((p->ref->channels_first || !same_shape(&ta, &tb)) && channels_first_of(&ta, &tb)) to_channels_last(vb, &tb, &ta);
    if (p->apply) apply_activation(vb, tb.nbytes / axrt_dtype_size(tb.dtype), p->apply);
    if (!same_shape(&ta, &tb)) {
        char sa[96], sb[96];
        printf("first difference at layer '%s' (#%d): shape %s, reference %s\n", e->layer, k,
               ir_shape_str(ta.shape, ta.rank, sa, sizeof sa), ir_shape_str(tb.shape, tb.rank, sb, sizeof sb));
        differs = 1;
    } else {
        size_t count = ta.nbytes / axrt_dtype_size(ta.dtype), nan_at = count;
        double worst = 0, scale = 0;
        for (size_t i = 0; i < count; i++) {
            if (isnan(va[i]) != isnan(vb[i]) && nan_at == count) nan_at = i;
            if (!isnan(va[i]) && !isnan(vb[i]) && fabs(va[i] - vb[i]) > worst) worst = fabs(va[i] - vb[i]);
            if (isfinite(vb[i]) && fabs(vb[i]) > scale) scale = fabs(vb[i]);
        }
        if (nan_at < count) {
            printf("first difference at layer '%s' (#%d): element %zu is %g, reference %g\n", e->layer,
                   k, nan_at, va[nan_at], vb[nan_at]);
            differs = 1;
        } else if (worst > rtol * (scale > 0 ? scale : 1)) {
            printf("first difference at layer '%s' (#%d): max |a - ref| = %.3g, %.3g of the largest "
                   "|ref| %.3g (rtol %g)\n", e->layer, k, worst, worst / (scale > 0 ? scale : 1), scale, rtol);
            differs = 1;
        }
    }
    free(va);
    free(vb);
    return differs;
}

static int parse_compare_args(int argc, char **argv, const char **dirs, double *rtol)
{
    int ndirs = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strncmp(a, "--rtol=", 7)) v = a + 7;
        else if (!strcmp(a, "--rtol") && i + 1 < argc) v = argv[++i];
        if (v) {
            char *end;
            *rtol = strtod(v, &end);
            if (end == v || *end || !(*rtol >= 0)) { axc_fail("--rtol expects a tolerance such as 1e-4, not '%s'", v); return -1; }
        } else if (a[0] == '-' || ndirs == 2) {
            axc_fail("usage: axc compare DIR REF_DIR [--rtol R] (unexpected '%s')", a);
            return -1;
        } else {
            dirs[ndirs++] = a;
        }
    }
    if (ndirs == 2) return 0;
    axc_fail("usage: axc compare DIR REF_DIR [--rtol R]");
    return -1;
}

int axc_compare_main(int argc, char **argv)
{
    const char *dirs[2];
    double rtol = 1e-4;
    if (parse_compare_args(argc, argv, dirs, &rtol)) return AXC_EUSAGE;
    ax_arena *a = ax_arena_new();
    layer_index run, ref;
    int rc = read_index(a, dirs[0], &run) || read_index(a, dirs[1], &ref) ? AXC_EUSAGE : AXC_OK;
    int compared = 0, missing = 0;
    for (int k = 0; rc == AXC_OK && k < run.n; k++) {
        if (named_later(&run, k)) continue;
        pairing p = pair_layer(&run, k, &ref);
        if (!p.ref) { missing++; continue; }
        int d = compare_layer(a, &p, rtol, k);
        rc = d < 0 ? AXC_EUSAGE : d > 0 ? AXC_EINPUT : AXC_OK;
        compared++;
    }
    if (rc == AXC_OK && compared == 0) {
        axc_fail("no layer of '%s' is in '%s'", dirs[0], dirs[1]);
        rc = AXC_EUSAGE;
    } else if (rc == AXC_OK) {
        printf("all %d layers agree within rtol %g", compared, rtol);
        printf(missing ? " (%d layers not in the reference)\n" : "\n", missing);
    }
    ax_arena_free(a);
    return rc;
}
