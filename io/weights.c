/* weights.c — parameter data for param nodes: loaded from a safetensors file
 * (--weights), initialised deterministically (--seed) or saved
 * (--save-weights).  Data lives in the context arena, in the node's dtype.
 *
 * Initialisation algorithm (docs/cli.md#parameters; stable, users may reproduce it):
 *   h      = FNV-1a 64 of the parameter's state_dict name
 *            (offset basis 0xcbf29ce484222325, prime 0x100000001b3, bytes of
 *            the name without terminator)
 *   state  = seed XOR h
 *   for each element i in row-major order:
 *       state += 0x9e3779b97f4a7c15                        (splitmix64)
 *       z = state
 *       z = (z XOR (z >> 30)) * 0xbf58476d1ce4e5b9
 *       z = (z XOR (z >> 27)) * 0x94d049bb133111eb
 *       z =  z XOR (z >> 31)
 *       u = (z >> 11) * 2^-53                              (uniform in [0, 1))
 *       value[i] = (2u - 1) * limit                        (in double, then
 *                                                           rounded to the dtype)
 *   limit = sqrt(6 / (fan_in + fan_out)) (Glorot/Xavier uniform) with
 *   PyTorch's fans: for rank >= 2, receptive = prod(shape[2:]),
 *   fan_in = shape[1] * receptive, fan_out = shape[0] * receptive; a rank-1
 *   parameter uses fan_in = fan_out = shape[0].
 *   ZEROS parameters are 0, ONES parameters are 1.
 * Each parameter's values depend only on (seed, its name, its shape). */
#include "weights.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "tensorfile.h"

/* ---- initialisation ------------------------------------------------------ */

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* sqrt(6 / (fan_in + fan_out)) with PyTorch's fan rule. */
static double glorot_limit(const ir_node *n)
{
    double fan_in = 1, fan_out = 1;
    if (n->rank == 1) fan_in = fan_out = (double)n->shape[0];
    if (n->rank >= 2) {
        double receptive = 1;
        for (int i = 2; i < n->rank; i++) receptive *= (double)n->shape[i];
        fan_in = (double)n->shape[1] * receptive;
        fan_out = (double)n->shape[0] * receptive;
    }
    return sqrt(6.0 / (fan_in + fan_out));
}

/* Fills n->data (arena) with its role's initial values. */
static void init_param(ir_graph *g, ir_node *n, uint64_t seed)
{
    size_t count = (size_t)ir_numel(n);
    double *values = ax_alloc(g->ctx->arena, sizeof *values * (count ? count : 1));
    if (n->role == IR_PARAM_ONES) {
        for (size_t i = 0; i < count; i++) values[i] = 1.0;
    } else if (n->role == IR_PARAM_GLOROT) {
        uint64_t state = seed ^ fnv1a64(n->name);
        double limit = glorot_limit(n);
        for (size_t i = 0; i < count; i++) {
            double u = (double)(ax_splitmix64(&state) >> 11) * 0x1.0p-53;
            values[i] = (2.0 * u - 1.0) * limit;
        }
    }
    n->data = ax_alloc(g->ctx->arena, ir_nbytes(n) ? ir_nbytes(n) : 1);
    tf_convert(n->data, n->dtype, values, AXRT_F64, count);
}

void weights_init(ir_graph *g, uint64_t seed)
{
    for (int i = 0; i < g->nnodes; i++) {
        ir_node *n = ir_at(g, i);
        if (n->op == IR_OP_param && !n->dead) init_param(g, n, seed);
    }
}

/* ---- loading ----------------------------------------------------------------- */

static bool is_batches_tracked(const char *name)
{
    static const char suffix[] = "num_batches_tracked";
    size_t len = strlen(name), slen = sizeof suffix - 1;
    return len >= slen && strcmp(name + len - slen, suffix) == 0 &&
           (len == slen || name[len - slen - 1] == '.');
}

/* Hugging Face's `embeddings.position_ids` buffer: an integer tensor named
 * "position_ids" (or ending in ".position_ids") whose every row is 0, 1, ...
 * It holds nothing a model needs (positions are an input in axc), and
 * transformers itself ignores it when loading, so it is accepted and
 * ignored like num_batches_tracked. */
static bool is_position_ids(ax_arena *arena, const tf_tensor *t)
{
    static const char suffix[] = "position_ids";
    size_t len = strlen(t->name), slen = sizeof suffix - 1;
    if (len < slen || strcmp(t->name + len - slen, suffix) != 0 ||
        (len > slen && t->name[len - slen - 1] != '.'))
        return false;
    if ((t->dtype != AXRT_I64 && t->dtype != AXRT_I32) || t->rank < 1) return false;
    size_t count = t->nbytes / (t->dtype == AXRT_I64 ? 8 : 4);
    int64_t row = t->shape[t->rank - 1];
    double *v = ax_alloc(arena, sizeof *v * (count ? count : 1));
    tf_convert(v, AXRT_F64, t->data, t->dtype, count);
    for (size_t i = 0; i < count; i++)
        if (v[i] != (double)((int64_t)i % row)) return false;
    return true;
}

static bool same_shape(const ir_node *n, const tf_tensor *t)
{
    if (n->rank != t->rank) return false;
    for (int i = 0; i < n->rank; i++)
        if (n->shape[i] != t->shape[i]) return false;
    return true;
}

/* Finds the file's tensor named like n; nt if none. */
static int find_tensor(const ir_node *n, const tf_tensor *t, int nt)
{
    int k = 0;
    while (k < nt && strcmp(t[k].name, n->name) != 0) k++;
    return k;
}

/* Copies tensor t into param n when the shapes agree.  Returns the number
 * of errors (0 or 1). */
static int take_tensor(ir_graph *g, ir_node *n, const tf_tensor *t, const char *path)
{
    char want[128], have[128];
    ir_shape_str(n->shape, n->rank, want, sizeof want);
    if (!same_shape(n, t)) {
        ax_error(g->ctx, n->loc, "tensor '%s' in %s has shape %s but the model expects %s",
                 n->name, path, ir_shape_str(t->shape, t->rank, have, sizeof have), want);
        return 1;
    }
    n->data = ax_alloc(g->ctx->arena, ir_nbytes(n) ? ir_nbytes(n) : 1);
    tf_convert(n->data, n->dtype, t->data, t->dtype, (size_t)ir_numel(n));
    return 0;
}

/* a and b equal once every non-alphanumeric byte counts as '_'
 * (PyTorch's "layer1.0.conv1.weight" vs a label "layer1_0_conv1.weight"). */
static bool same_but_separators(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        bool sa = !isalnum((unsigned char)*a), sb = !isalnum((unsigned char)*b);
        if (sa != sb || (!sa && *a != *b)) return false;
    }
    return *a == *b;
}

static const char *last_part(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

/* The unused tensor that a missing param n most likely is under another
 * name: same shape and the same name up to separators, else the only unused
 * tensor of that shape with the same last part (".weight").  -1 if none. */
static int likely_rename(const ir_node *n, const tf_tensor *t, int nt, const bool *used)
{
    int only = -1, count = 0;
    for (int k = 0; k < nt; k++) {
        if (used[k] || !same_shape(n, &t[k])) continue;
        if (same_but_separators(n->name, t[k].name)) return k;
        if (!strcmp(last_part(n->name), last_part(t[k].name))) { only = k; count++; }
    }
    return count == 1 ? only : -1;
}

/* Reports a param the file lacks, paired with the tensor it probably is. */
static void report_missing(ir_graph *g, const ir_node *n, const tf_tensor *t, int nt, bool *used,
                           const char *path)
{
    char want[128];
    ir_shape_str(n->shape, n->rank, want, sizeof want);
    int k = likely_rename(n, t, nt, used);
    if (k < 0) {
        ax_error(g->ctx, n->loc, "missing tensor '%s' (%s%s) in %s", n->name,
                 ir_dtype_name(n->dtype), want, path);
        return;
    }
    used[k] = true;
    ax_error(g->ctx, n->loc, "missing tensor '%s' (%s%s) in %s; the file has '%s' of the same shape",
             n->name, ir_dtype_name(n->dtype), want, path, t[k].name);
}

/* What a file that failed to parse as safetensors is by its magic bytes;
 * NULL if unknown. */
static const char *other_format(const uint8_t *buf, size_t len)
{
    if (len >= 6 && !memcmp(buf, "\x93NUMPY", 6)) return "a NumPy .npy file";
    if (len >= 4 && !memcmp(buf, "PK\x03\x04", 4)) return "a zip archive (a torch.save checkpoint?)";
    if (len >= 2 && buf[0] == 0x80 && buf[1] <= 5) return "a Python pickle (a torch.save checkpoint?)";
    return NULL;
}

/* An ONNX ModelProto as exporters write it: ir_version (field 1, a small
 * varint) first, then producer_name, a graph or opset_import. */
static bool looks_like_onnx(const char *path, const uint8_t *buf, size_t len)
{
    const size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".onnx"))
        return true;
    return buf && len > 3 && buf[0] == 0x08 && buf[1] >= 1 && buf[1] <= 30 &&
           (buf[2] == 0x12 || buf[2] == 0x1a || buf[2] == 0x3a || buf[2] == 0x42);
}

int weights_load(ir_graph *g, const char *path)
{
    size_t len;
    char err[256];
    tf_tensor *t;
    int nt, errors = 0;
    /* The largest file that can hold this model's parameters: the length
       prefix, the largest header, every element at 8 bytes, some slack for
       extra tensors (batches_tracked, position_ids). */
    size_t max = 8 + (size_t)TF_MAX_HEADER_BYTES + ((size_t)1 << 20);
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == IR_OP_param && !g->nodes[i].dead)
            max += 8 * (size_t)ir_numel(&g->nodes[i]);
    static const char onnx_message[] = "%s is an ONNX model; pass it as the model (axc %s -o OUT.c), "
                                       "not --weights";
    if (looks_like_onnx(path, NULL, 0)) {   /* before reading: it may be large */
        ax_error(g->ctx, ax_noloc(), onnx_message, path, path);
        return 1;
    }
    const uint8_t *buf = (const uint8_t *)ax_read_file_max(g->ctx->arena, path, max, &len);
    if (!buf && errno == EFBIG) {
        ax_error(g->ctx, ax_noloc(), "cannot read %s: larger than %zu bytes, the most this model's parameters "
                 "can take", path, max);
        return 1;
    }
    if (!buf) return -1;   /* unreadable: the driver says so (a usage/I-O error) */
    if (tf_safetensors_parse(g->ctx->arena, buf, len, &t, &nt, err, sizeof err) != 0) {
        /* a header length read from another format's magic is nonsense: name the format */
        const char *other = other_format(buf, len);
        if (looks_like_onnx(path, buf, len))
            ax_error(g->ctx, ax_noloc(), onnx_message, path, path);
        else if (other)
            ax_error(g->ctx, ax_noloc(), "%s is %s, not a safetensors file (write one with "
                     "axc_torch.save_safetensors or safetensors.torch.save_file)", path, other);
        else
            ax_error(g->ctx, ax_noloc(), "%s: %s", path, err);
        return 1;
    }
    bool *used = ax_alloc(g->ctx->arena, sizeof *used * (size_t)(nt + 1));
    bool *missing = ax_alloc(g->ctx->arena, sizeof *missing * (size_t)(g->nnodes + 1));
    for (int i = 0; i < g->nnodes; i++) {
        ir_node *n = ir_at(g, i);
        if (n->op != IR_OP_param || n->dead) continue;
        int k = find_tensor(n, t, nt);
        if (k == nt) { missing[i] = true; continue; }
        used[k] = true;
        errors += take_tensor(g, n, &t[k], path);
    }
    /* after every exact match, so a rename is paired only with a leftover */
    for (int i = 0; i < g->nnodes; i++)
        if (missing[i]) { report_missing(g, ir_at(g, i), t, nt, used, path); errors++; }
    for (int k = 0; k < nt; k++)
        if (!used[k] && !is_batches_tracked(t[k].name) && !is_position_ids(g->ctx->arena, &t[k])) {
            ax_error(g->ctx, ax_noloc(), "%s: unexpected tensor '%s' (the model has no such "
                     "parameter)", path, t[k].name);
            errors++;
        }
    return errors;
}

/* ---- saving -------------------------------------------------------------------- */

void weights_save(const ir_graph *g, ax_buf *out)
{
    int count = 0;
    for (int i = 0; i < g->nnodes; i++)
        count += g->nodes[i].op == IR_OP_param && !g->nodes[i].derived;
    tf_tensor *t = ax_alloc(g->ctx->arena, sizeof *t * (size_t)(count + 1));
    int k = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const ir_node *n = &g->nodes[i];
        /* the state_dict: the user's params, also those a fold replaced (dead, data kept) */
        if (n->op != IR_OP_param || n->derived) continue;
        if (!n->data) ax_die("weights_save: parameter '%s' has no data", n->name);
        t[k].name = n->name;
        t[k].dtype = n->dtype;
        t[k].rank = n->rank;
        memcpy(t[k].shape, n->shape, sizeof n->shape[0] * (size_t)n->rank);
        t[k].data = n->data;
        t[k].nbytes = ir_nbytes(n);
        k++;
    }
    tf_safetensors_write(out, t, count);
}

int weights_save_file(const ir_graph *g, const char *path)
{
    ax_buf b = {0};
    weights_save(g, &b);
    const int bad = ax_write_file_atomic(path, b.data, b.len);
    const int saved = errno;
    ax_buf_free(&b);
    errno = saved;
    return bad ? -1 : 0;
}
