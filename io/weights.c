/* weights.c — parameter data for param nodes: loaded from a safetensors file
 * (--weights), initialised deterministically (--seed) or saved
 * (--save-weights).  Data lives in the context arena, in the node's dtype.
 *
 * Initialisation algorithm (interface.md §1; stable, users may reproduce it):
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

static bool same_shape(const ir_node *n, const tf_tensor *t)
{
    if (n->rank != t->rank) return false;
    for (int i = 0; i < n->rank; i++)
        if (n->shape[i] != t->shape[i]) return false;
    return true;
}

/* Matches param n against the file's tensors; copies the data when it fits.
 * Returns the number of errors (0 or 1). */
static int load_param(ir_graph *g, ir_node *n, const tf_tensor *t, int nt, bool *used,
                      const char *path)
{
    char want[128], have[128];
    ir_shape_str(n->shape, n->rank, want, sizeof want);
    int k = 0;
    while (k < nt && strcmp(t[k].name, n->name) != 0) k++;
    if (k == nt) {
        ax_error(g->ctx, n->loc, "missing tensor '%s' (%s%s) in %s", n->name,
                 ir_dtype_name(n->dtype), want, path);
        return 1;
    }
    used[k] = true;
    if (!same_shape(n, &t[k])) {
        ax_error(g->ctx, n->loc, "tensor '%s' in %s has shape %s but the model expects %s",
                 n->name, path, ir_shape_str(t[k].shape, t[k].rank, have, sizeof have), want);
        return 1;
    }
    n->data = ax_alloc(g->ctx->arena, ir_nbytes(n) ? ir_nbytes(n) : 1);
    tf_convert(n->data, n->dtype, t[k].data, t[k].dtype, (size_t)ir_numel(n));
    return 0;
}

int weights_load(ir_graph *g, const char *path)
{
    size_t len;
    char err[256];
    tf_tensor *t;
    int nt, errors = 0;
    const uint8_t *buf = (const uint8_t *)ax_read_file(g->ctx->arena, path, &len);
    if (!buf) {
        ax_error(g->ctx, ax_noloc(), "cannot read %s: %s", path, strerror(errno));
        return 1;
    }
    if (tf_safetensors_parse(g->ctx->arena, buf, len, &t, &nt, err, sizeof err) != 0) {
        ax_error(g->ctx, ax_noloc(), "%s: %s", path, err);
        return 1;
    }
    bool *used = ax_alloc(g->ctx->arena, sizeof *used * (size_t)(nt + 1));
    for (int i = 0; i < g->nnodes; i++) {
        ir_node *n = ir_at(g, i);
        if (n->op == IR_OP_param && !n->dead) errors += load_param(g, n, t, nt, used, path);
    }
    for (int k = 0; k < nt; k++)
        if (!used[k] && !is_batches_tracked(t[k].name)) {
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
