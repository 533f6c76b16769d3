/* onnx_import.c — ONNX bytes -> IR (onnx.h): the bounded model reader
 * (protobuf-c with size limits, tensors from raw_data, typed fields or
 * external data beside the model), the value table, and the graph walk that
 * hands each node to its op handler (onnx_ops.c).  Without protobuf-c at
 * build time (AXC_ONNX undefined) onnx_import reports that the ONNX front
 * end was left out of this build. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

bool onnx_is_model(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 5 && strcmp(path + n - 5, ".onnx") == 0;
}

#ifndef AXC_ONNX

bool onnx_available(void) { return false; }

ir_graph *onnx_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len,
                      onnx_infer_fn infer, const onnx_input_shape *shapes, int nshapes)
{
    (void)bytes; (void)len; (void)infer; (void)shapes; (void)nshapes;
    ax_error(ctx, ax_noloc(), "'%s' is an ONNX model, but this axc was built without the ONNX "
             "front end (install protobuf-c: sh scripts/deps.sh, then rebuild)", path);
    return NULL;
}

#else

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir_names.h"
#include "onnx_internal.h"

bool onnx_available(void) { return true; }

/* A model is at most this many nodes / initializers / inputs. */
#define OX_MAX_NODES 100000
#define OX_MAX_TENSOR_BYTES ((int64_t)1 << 32)

/* ---- values ------------------------------------------------------------- */

static size_t hash_name(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static ox_val *slot(ox_state *s, const char *name)
{
    size_t i = hash_name(name) & (s->cap - 1);
    while (s->vals[i].name && strcmp(s->vals[i].name, name) != 0) i = (i + 1) & (s->cap - 1);
    return &s->vals[i];
}

ox_val *ox_lookup(ox_state *s, const char *name)
{
    if (!s->cap) return NULL;
    ox_val *v = slot(s, name);
    return v->name ? v : NULL;
}

static void grow(ox_state *s)
{
    ox_val *old = s->vals;
    size_t oldcap = s->cap;
    s->cap = oldcap ? oldcap * 2 : 1024;
    s->vals = calloc(s->cap, sizeof *s->vals);
    if (!s->vals) ax_die("out of memory");
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].name) *slot(s, old[i].name) = old[i];
    free(old);
}

ox_val *ox_define(ox_state *s, const char *name)
{
    if (2 * (s->used + 1) > s->cap) grow(s);
    ox_val *v = slot(s, name);
    if (!v->name) s->used++;
    memset(v, 0, sizeof *v);
    v->name = name;
    v->node = IR_NONE;
    v->nchw = IR_NONE;
    return v;
}

/* ---- messages ------------------------------------------------------------ */

void ox_fail(ox_state *s, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *n = s->node;
    if (n)
        ax_error(s->ctx, ax_noloc(), "ONNX node '%s' (%s): %s", n->name && *n->name ? n->name : "?",
                 n->op_type ? n->op_type : "?", msg);
    else
        ax_error(s->ctx, ax_noloc(), "ONNX model: %s", msg);
}

void ox_unsupported(ox_state *s, const char *what)
{
    ox_fail(s, "unsupported: %s", what);
}

ox_val *ox_input(ox_state *s, int i, bool *ok)
{
    const Onnx__NodeProto *n = s->node;
    if (i >= (int)n->n_input || !n->input[i][0]) return NULL;
    ox_val *v = ox_lookup(s, n->input[i]);
    if (!v) {
        ox_fail(s, "input '%s' is not defined before this node (by an earlier node, an initializer "
                "or a graph input)", n->input[i]);
        *ok = false;
    }
    return v;
}

/* ---- attributes ---------------------------------------------------------- */

const Onnx__AttributeProto *ox_attr(ox_state *s, const char *name)
{
    for (size_t i = 0; i < s->node->n_attribute; i++)
        if (s->node->attribute[i]->name && !strcmp(s->node->attribute[i]->name, name))
            return s->node->attribute[i];
    return NULL;
}

int64_t ox_attr_int(ox_state *s, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    return a && a->has_i ? a->i : dflt;
}

double ox_attr_float(ox_state *s, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    return a && a->has_f ? a->f : dflt;
}

const char *ox_attr_str(ox_state *s, const char *name, const char *dflt)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    if (!a || !a->has_s) return dflt;
    char *t = ax_alloc(s->ctx->arena, a->s.len + 1);
    memcpy(t, a->s.data, a->s.len);
    return t;
}

int ox_attr_ints(ox_state *s, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    if (!a) return -1;
    int n = (int)(a->n_ints < (size_t)max ? a->n_ints : (size_t)max);
    for (int i = 0; i < n; i++) out[i] = a->ints[i];
    return a->n_ints > (size_t)max ? max + 1 : n;
}

/* ---- tensors ------------------------------------------------------------- */

ox_const *ox_const_new(ox_state *s, bool is_int, int rank, const int64_t *shape)
{
    ox_const *c = ax_alloc(s->ctx->arena, sizeof *c);
    c->is_int = is_int;
    c->rank = rank;
    c->count = 1;
    c->node = IR_NONE;
    for (int i = 0; i < rank; i++) {
        c->shape[i] = shape[i];
        c->count *= shape[i];
    }
    c->v = ax_alloc(s->ctx->arena, sizeof *c->v * (size_t)(c->count ? c->count : 1));
    c->iv = is_int ? ax_alloc(s->ctx->arena, sizeof *c->iv * (size_t)(c->count ? c->count : 1)) : NULL;
    return c;
}

void ox_set_int(ox_const *c, int64_t i, int64_t x)
{
    c->iv[i] = x;
    c->v[i] = (double)x;
}

void ox_copy_elem(ox_const *dst, int64_t di, const ox_const *src, int64_t si)
{
    dst->v[di] = src->v[si];
    if (dst->iv) {
        int64_t x = 0;
        if (src->iv) x = src->iv[si];
        else ox_double_to_int(src->v[si], &x);
        dst->iv[di] = x;
    }
}

bool ox_double_to_int(double x, int64_t *out)
{
    /* -2^63 <= x < 2^63 (both exact doubles); NaN fails both */
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return false;
    *out = (int64_t)x;
    return true;
}

bool ox_int_at(ox_state *s, const ox_const *c, int64_t i, int64_t *out)
{
    if (c->iv) {
        *out = c->iv[i];
        return true;
    }
    if (ox_double_to_int(c->v[i], out)) return true;
    ox_fail(s, "the value %g is not an integer in the int64 range", c->v[i]);
    return false;
}

/* Element size of an ONNX data type we read, 0 if unsupported. */
static int elem_size(int dt, bool *is_int)
{
    *is_int = true;
    switch (dt) {
    case 1: *is_int = false; return 4;       /* FLOAT */
    case 11: *is_int = false; return 8;      /* DOUBLE */
    case 2: case 3: case 9: return 1;        /* UINT8, INT8, BOOL */
    case 4: case 5: return 2;                /* UINT16, INT16 */
    case 6: case 12: return 4;               /* INT32, UINT32 */
    case 7: case 13: return 8;               /* INT64, UINT64 */
    default: return 0;
    }
}

/* Element i of c from its little-endian bytes at p (data type dt): an
 * integer exact in iv (a UINT64 over INT64_MAX keeps its bits). */
static void raw_elem(ox_const *c, int64_t i, const uint8_t *p, int dt)
{
    switch (dt) {
    case 1: { float f; memcpy(&f, p, 4); c->v[i] = f; return; }
    case 11: { double d; memcpy(&d, p, 8); c->v[i] = d; return; }
    case 2: case 9: ox_set_int(c, i, *p); return;
    case 3: ox_set_int(c, i, (int8_t)*p); return;
    case 4: { uint16_t v; memcpy(&v, p, 2); ox_set_int(c, i, v); return; }
    case 5: { int16_t v; memcpy(&v, p, 2); ox_set_int(c, i, v); return; }
    case 6: { int32_t v; memcpy(&v, p, 4); ox_set_int(c, i, v); return; }
    case 12: { uint32_t v; memcpy(&v, p, 4); ox_set_int(c, i, v); return; }
    case 13: { uint64_t v; memcpy(&v, p, 8); c->iv[i] = (int64_t)(v & INT64_MAX) | (v >> 63 ? INT64_MIN : 0);
               c->v[i] = (double)v; return; }
    default: { int64_t v; memcpy(&v, p, 8); ox_set_int(c, i, v); return; }
    }
}

static const char *ext_field(const Onnx__TensorProto *t, const char *key)
{
    for (size_t i = 0; i < t->n_external_data; i++)
        if (t->external_data[i]->key && !strcmp(t->external_data[i]->key, key))
            return t->external_data[i]->value;
    return NULL;
}

/* Reads external data of t (bytes wanted) from a file inside s->dir. */
static uint8_t *read_external(ox_state *s, const Onnx__TensorProto *t, size_t want)
{
    const char *loc = ext_field(t, "location"), *off = ext_field(t, "offset"),
               *len = ext_field(t, "length");
    const char *name = t->name ? t->name : "?";
    if (!loc || !*loc || loc[0] == '/' || strstr(loc, "..")) {
        ox_fail(s, "tensor '%s': external data location '%s' must be a relative path inside the "
                "model's directory", name, loc ? loc : "");
        return NULL;
    }
    char *path = ax_sprintf(s->ctx->arena, "%s/%s", s->dir, loc);
    char real_dir[PATH_MAX], real_file[PATH_MAX];
    if (!realpath(s->dir, real_dir) || !realpath(path, real_file)) {
        ox_fail(s, "tensor '%s': cannot read external data '%s': %s", name, loc, strerror(errno));
        return NULL;
    }
    size_t dl = strlen(real_dir);
    if (strncmp(real_file, real_dir, dl) != 0 || real_file[dl] != '/') {
        ox_fail(s, "tensor '%s': external data location '%s' must be a relative path inside the "
                "model's directory", name, loc);
        return NULL;
    }
    long long o = off ? strtoll(off, NULL, 10) : 0, l = len ? strtoll(len, NULL, 10) : (long long)want;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; only a regular
     * file is read (a FIFO, a device or a directory is refused). */
    int fd = open(real_file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        ox_fail(s, "tensor '%s': external data '%s' is not a regular file", name, loc);
        return NULL;
    }
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (fd >= 0 && !f) close(fd);
    if (!f || o < 0 || l != (long long)want ||
        o > (long long)st.st_size || (long long)want > (long long)st.st_size - o ||
        fseek(f, (long)o, SEEK_SET) != 0) {
        if (f) fclose(f);
        ox_fail(s, "tensor '%s': external data '%s' (offset %lld, length %lld) does not hold its %zu "
                "bytes", name, loc, o, l, want);
        return NULL;
    }
    uint8_t *buf = malloc(want ? want : 1);
    if (!buf) ax_die("out of memory");
    size_t got = fread(buf, 1, want, f);
    fclose(f);
    if (got != want) {
        free(buf);
        ox_fail(s, "tensor '%s': external data '%s' (offset %lld, length %lld) does not hold its %zu "
                "bytes", name, loc, o, l, want);
        return NULL;
    }
    return buf;
}

/* Typed-field values of t, if it has them (count checked). */
/* The typed value field a TensorProto of data type dt keeps its values in
 * (onnx.proto): 0 float_data, 1 int32_data, 2 int64_data, 3 double_data,
 * 4 uint64_data. */
static int typed_field_of(int dt)
{
    switch (dt) {
    case 1: return 0;                      /* FLOAT */
    case 7: return 2;                      /* INT64 */
    case 11: return 3;                     /* DOUBLE */
    case 12: case 13: return 4;            /* UINT32, UINT64 */
    default: return 1;                     /* the small integers and BOOL */
    }
}

static const char *const typed_field_names[5] = {"float_data", "int32_data", "int64_data", "double_data",
                                                 "uint64_data"};

/* How many values t holds in its typed field (the one of its data type);
 * a tensor with more than one value field, or a typed field not of its
 * data type, is an error (onnx.checker: exactly one), -1. */
static int64_t typed_count(ox_state *s, const Onnx__TensorProto *t, bool external)
{
    const char *name = t->name ? t->name : "?";
    size_t n[5] = {t->n_float_data, t->n_int32_data, t->n_int64_data, t->n_double_data, t->n_uint64_data};
    int fields = (t->has_raw_data && t->raw_data.len) + external + (t->n_string_data > 0), field = -1;
    for (int k = 0; k < 5; k++)
        if (n[k]) fields++, field = k;
    if (fields > 1) {
        ox_fail(s, "tensor '%s' holds its values in more than one field (raw_data, external data, %s...): "
                "exactly one is allowed", name, field >= 0 ? typed_field_names[field] : "string_data");
        return -1;
    }
    if (field >= 0 && field != typed_field_of(t->data_type)) {
        ox_fail(s, "tensor '%s' of ONNX data type %d holds its values in %s, not %s", name, (int)t->data_type,
                typed_field_names[field], typed_field_names[typed_field_of(t->data_type)]);
        return -1;
    }
    return field >= 0 ? (int64_t)n[field] : 0;
}

static void typed_fields(const Onnx__TensorProto *t, ox_const *c)
{
    for (size_t i = 0; i < t->n_float_data; i++) c->v[i] = t->float_data[i];
    for (size_t i = 0; i < t->n_double_data; i++) c->v[i] = t->double_data[i];
    for (size_t i = 0; i < t->n_int32_data; i++) {
        if (c->is_int) ox_set_int(c, (int64_t)i, t->int32_data[i]);
        else c->v[i] = t->int32_data[i];
    }
    for (size_t i = 0; i < t->n_int64_data; i++) ox_set_int(c, (int64_t)i, t->int64_data[i]);
    for (size_t i = 0; i < t->n_uint64_data; i++) {
        uint64_t v = t->uint64_data[i];
        c->iv[i] = (int64_t)(v & INT64_MAX) | (v >> 63 ? INT64_MIN : 0);
        c->v[i] = (double)v;
    }
}

ox_const *ox_tensor(ox_state *s, const Onnx__TensorProto *t)
{
    const char *name = t->name ? t->name : "?";
    bool is_int;
    int es = elem_size(t->data_type, &is_int);
    if (!es) {
        ox_fail(s, "unsupported: tensor '%s' of ONNX data type %d (float, double and integer "
                "types only)", name, (int)t->data_type);
        return NULL;
    }
    if (t->n_dims > IR_MAX_RANK) {
        ox_fail(s, "tensor '%s' has rank %zu (at most %d)", name, t->n_dims, IR_MAX_RANK);
        return NULL;
    }
    int64_t bytes = es, count = 1;
    for (size_t i = 0; i < t->n_dims; i++)
        if (t->dims[i] < 0 || __builtin_mul_overflow(bytes, t->dims[i], &bytes) ||
            bytes > OX_MAX_TENSOR_BYTES) {
            ox_fail(s, "tensor '%s' has a negative or too large dimension", name);
            return NULL;
        }
    count = bytes / es;
    bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    int64_t typed = typed_count(s, t, external);
    if (typed < 0) return NULL;
    /* the values present are checked against the count before anything of
     * the count's size is allocated (a 90-byte file may declare 2^32) */
    if (external) {
        uint8_t *buf = read_external(s, t, (size_t)bytes);
        if (!buf) return NULL;
        ox_const *c = ox_const_new(s, is_int, (int)t->n_dims, t->dims);
        for (int64_t i = 0; i < count; i++) raw_elem(c, i, buf + i * es, t->data_type);
        free(buf);
        return c;
    }
    if (!t->has_raw_data) {
        if (typed != count) {
            ox_fail(s, "tensor '%s' has %lld values for its %lld elements", name, (long long)typed, (long long)count);
            return NULL;
        }
        ox_const *c = ox_const_new(s, is_int, (int)t->n_dims, t->dims);
        typed_fields(t, c);
        return c;
    }
    if (t->raw_data.len != (size_t)bytes) {
        ox_fail(s, "tensor '%s' has %zu bytes of raw data for its %lld elements", name,
                t->raw_data.len, (long long)count);
        return NULL;
    }
    ox_const *c = ox_const_new(s, is_int, (int)t->n_dims, t->dims);
    for (int64_t i = 0; i < count; i++) raw_elem(c, i, t->raw_data.data + i * es, t->data_type);
    return c;
}

/* ---- nodes ----------------------------------------------------------------- */

static const char *node_label(ox_state *s)
{
    const Onnx__NodeProto *n = s->node;
    if (!n) return NULL;
    return ax_sprintf(s->ctx->arena, "%s '%s'", n->op_type ? n->op_type : "?",
                      n->name && *n->name ? n->name : (n->n_output ? n->output[0] : "?"));
}

/* Shape inference of the nodes added since the last call only: import
 * stays linear in the node count (the whole graph after every node was
 * quadratic). */
static int infer_new_nodes(ox_state *s)
{
    int first = s->inferred;
    s->inferred = s->g->nnodes;
    return s->infer(s->g, first);
}

int ox_add(ox_state *s, ir_op op, const int *src, int nsrc, const ir_attrs *attrs)
{
    for (int i = 0; i < nsrc; i++)
        if (src[i] == IR_NONE && (i >= 32 || !(ir_ops[op].optional & (1u << i)))) return IR_NONE;
    int id = ir_add(s->g, op, src, nsrc, ax_noloc());
    ir_node *n = ir_at(s->g, id);
    n->attrs = attrs ? *attrs : ir_attrs_unset();
    n->name = node_label(s);
    n->dtype = AXRT_F32;
    int errors = s->ctx->errors;
    if (infer_new_nodes(s) || s->ctx->errors > errors) return IR_NONE;
    return id;
}

int ox_param(ox_state *s, const double *values, int rank, const int64_t *shape, const char *what)
{
    int id = ir_add(s->g, IR_OP_param, NULL, 0, ax_noloc());
    ir_node *n = ir_at(s->g, id);
    n->attrs = ir_attrs_unset();
    n->name = what ? what : ax_sprintf(s->ctx->arena, "onnx_const_%d", s->counter++);
    n->dtype = AXRT_F32;
    n->role = IR_PARAM_ZEROS;
    n->rank = rank;
    int64_t count = 1;
    for (int i = 0; i < rank; i++) count *= (n->shape[i] = shape[i]);
    float *data = ax_alloc(s->ctx->arena, sizeof *data * (size_t)(count ? count : 1));
    for (int64_t i = 0; i < count; i++) data[i] = (float)values[i];
    n->data = data;
    ox_quant_param(s, id, what);
    return id;
}

int ox_transpose(ox_state *s, int x, const int *perm, int rank)
{
    const ir_node *in = ir_at(s->g, x);
    int composed[IR_MAX_RANK];
    if (in->op == IR_OP_transpose && in->attrs.nperm == rank) {   /* one transpose, not two */
        for (int i = 0; i < rank; i++) composed[i] = in->attrs.perm[perm[i]];
        perm = composed;
        x = in->src[0];
    }
    bool identity = true;
    for (int i = 0; i < rank; i++) identity &= perm[i] == i;
    if (identity) return x;
    ir_attrs a = ir_attrs_unset();
    a.nperm = rank;
    memcpy(a.perm, perm, sizeof *perm * (size_t)rank);
    return ox_add(s, IR_OP_transpose, &x, 1, &a);
}

int ox_scalar(ox_state *s, double value) { return ir_add_scalar(s->g, value, ax_noloc()); }

int ox_node(ox_state *s, ox_val *v)
{
    if (v->c) {
        if (v->c->node == IR_NONE) {
            if (v->c->is_int) {
                ox_unsupported(s, "an integer constant used as a tensor");
                return IR_NONE;
            }
            if (v->c->rank == 0) return v->c->node = ox_scalar(s, v->c->v[0]);
            v->c->node = ox_param(s, v->c->v, v->c->rank, v->c->shape, ax_strdup(s->ctx->arena, v->name));
        }
        return v->c->node;
    }
    if (!v->nhwc) return v->node;
    static const int to_nchw[4] = {0, 3, 1, 2};
    if (v->nchw == IR_NONE) v->nchw = ox_transpose(s, v->node, to_nchw, 4);
    return v->nchw;
}

int ox_node_nhwc(ox_state *s, ox_val *v)
{
    if (!v->c && v->nhwc) return v->node;
    int x = ox_node(s, v);
    if (x == IR_NONE) return IR_NONE;
    if (ir_at(s->g, x)->rank != 4) {
        ox_unsupported(s, "an input that is not 4-D (N, C, H, W)");
        return IR_NONE;
    }
    static const int to_nhwc[4] = {0, 2, 3, 1};
    return ox_transpose(s, x, to_nhwc, 4);
}

int ox_shape(ox_state *s, ox_val *v, int64_t *shape)
{
    if (v->c) {
        memcpy(shape, v->c->shape, sizeof *shape * (size_t)v->c->rank);
        return v->c->rank;
    }
    const ir_node *n = ir_at(s->g, v->node);
    if (v->nhwc) {
        shape[0] = n->shape[0], shape[1] = n->shape[3], shape[2] = n->shape[1], shape[3] = n->shape[2];
        return 4;
    }
    memcpy(shape, n->shape, sizeof *shape * (size_t)n->rank);
    return n->rank;
}

/* ---- the model ---------------------------------------------------------- */

/* "resnet18" from ".../resnet18.onnx", made a C identifier that the generated
 * code can carry (ir_names.h: "m_" before a reserved one). */
static const char *model_name(ax_arena *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    char *name = ax_strdup(a, slash ? slash + 1 : path);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    for (char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            *c = '_';
    if (!*name || (*name >= '0' && *name <= '9') || ir_model_name_problem(name))   /* axrt.onnx: m_axrt */
        return ax_sprintf(a, "m_%s", name);
    return name;
}

static const char *dir_of(ax_arena *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return ".";
    if (slash == path) return "/";
    char *d = ax_strdup(a, path);
    d[slash - path] = '\0';
    return d;
}

/* --shape's entry for input name, or NULL. */
static const onnx_input_shape *given_shape(const ox_state *s, const char *name)
{
    for (int i = 0; i < s->nshapes; i++)
        if (!strcmp(s->shapes[i].name, name)) return &s->shapes[i];
    return NULL;
}

/* The declared dims of input name as --shape text, a symbolic or unknown one as 1. */
static const char *shape_hint(ox_state *s, const Onnx__TensorShapeProto *shape)
{
    ax_buf b = {0};
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        const bool fixed = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0;
        ax_buf_printf(&b, "%s%lld", i ? "x" : "", fixed ? (long long)d->dim_value : 1LL);
    }
    const char *text = ax_strdup(s->ctx->arena, b.data ? b.data : "");
    ax_buf_free(&b);
    return text;
}

/* Input name's dims into dims: --shape NAME=... where given (it fixes the
 * symbolic ones, batch and sequence, and may change any: interface.md §9),
 * else the model's fixed ones. */
static bool input_dims(ox_state *s, const char *name, const Onnx__TensorShapeProto *shape, int64_t *dims)
{
    const onnx_input_shape *given = given_shape(s, name);
    if (given && given->rank != (int)shape->n_dim) {
        ox_fail(s, "--shape %s= gives %d dimensions, but input '%s' has %zu (e.g. --shape %s=%s)", name,
                given->rank, name, shape->n_dim, name, shape_hint(s, shape));
        return false;
    }
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        const bool fixed = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if (fixed && d->dim_value < 1 && !given) {
            ox_fail(s, "input '%s' has the non-positive dimension %zu (%lld)", name, i, (long long)d->dim_value);
            return false;
        }
        if (!fixed && !given) {
            const bool named = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param;
            ox_fail(s, "input '%s' has the symbolic dimension %zu%s%s%s: fix its shape at compile time with "
                    "--shape %s=%s (its size for '%s' in place of 1)", name, i, named ? " ('" : "",
                    named ? d->dim_param : "", named ? "')" : "", name, shape_hint(s, shape),
                    named ? d->dim_param : "that dimension");
            return false;
        }
        dims[i] = given ? given->dims[i] : d->dim_value;
    }
    return true;
}

/* Every --shape names an input of the graph (not an initializer). */
static bool shapes_name_inputs(ox_state *s, const Onnx__GraphProto *gp)
{
    for (int k = 0; k < s->nshapes; k++) {
        bool found = false;
        for (size_t i = 0; i < gp->n_input && !found; i++) {
            const char *name = gp->input[i]->name ? gp->input[i]->name : "";
            found = !strcmp(name, s->shapes[k].name) && !(ox_lookup(s, name) && ox_lookup(s, name)->c);
        }
        if (!found) {
            ax_buf list = {0};
            for (size_t i = 0; i < gp->n_input; i++) {
                const char *name = gp->input[i]->name ? gp->input[i]->name : "";
                if (!(ox_lookup(s, name) && ox_lookup(s, name)->c))
                    ax_buf_printf(&list, "%s'%s'", list.data && *list.data ? ", " : "", name);
            }
            ox_fail(s, "--shape names '%s', which is not an input of the model (its inputs: %s)",
                    s->shapes[k].name, list.data ? list.data : "none");
            ax_buf_free(&list);
            return false;
        }
    }
    return true;
}

static bool add_input(ox_state *s, const Onnx__ValueInfoProto *vi)
{
    const char *name = vi->name ? vi->name : "";
    if (ox_lookup(s, name) && ox_lookup(s, name)->c) return true;   /* an initializer */
    const Onnx__TypeProto *t = vi->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
        !t->tensor_type->shape) {
        ox_fail(s, "input '%s' is not a tensor of known shape", name);
        return false;
    }
    const Onnx__TypeProto__Tensor *tt = t->tensor_type;
    axrt_dtype dt = tt->elem_type == 1 ? AXRT_F32 : tt->elem_type == 7 ? AXRT_I64 :
                    tt->elem_type == 6 ? AXRT_I32 : AXRT_DTYPE_COUNT;
    if (dt == AXRT_DTYPE_COUNT) {
        ox_fail(s, "unsupported: input '%s' has ONNX element type %d (float32, int32 or int64 only)",
                name, (int)tt->elem_type);
        return false;
    }
    if (tt->shape->n_dim > IR_MAX_RANK) {
        ox_fail(s, "input '%s': rank over %d", name, IR_MAX_RANK);
        return false;
    }
    int id = ir_add(s->g, IR_OP_input, NULL, 0, ax_noloc());
    ir_node *n = ir_at(s->g, id);
    n->attrs = ir_attrs_unset();
    n->name = ax_strdup(s->ctx->arena, name);
    n->dtype = dt;
    n->rank = (int)tt->shape->n_dim;
    if (!input_dims(s, name, tt->shape, n->shape)) return false;
    ir_add_input(s->g, id);
    ox_val *v = ox_define(s, name);
    v->node = id;
    return infer_new_nodes(s) == 0;
}

/* The static dims of a declared value, or -1. */
static int static_dims(const Onnx__ValueInfoProto *vi, int64_t *shape)
{
    const Onnx__TypeProto *t = vi->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
        !t->tensor_type->shape || t->tensor_type->shape->n_dim > IR_MAX_RANK)
        return -1;
    const Onnx__TensorShapeProto *sh = t->tensor_type->shape;
    for (size_t i = 0; i < sh->n_dim; i++) {
        if (sh->dim[i]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || sh->dim[i]->dim_value < 1)
            return -1;
        shape[i] = sh->dim[i]->dim_value;
    }
    return (int)sh->n_dim;
}

int ox_declared_shape(ox_state *s, const char *name, int64_t *shape)
{
    const Onnx__GraphProto *gp = s->graph;
    for (size_t i = 0; gp && i < gp->n_output + gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = i < gp->n_output ? gp->output[i] : gp->value_info[i - gp->n_output];
        if (vi->name && !strcmp(vi->name, name)) return static_dims(vi, shape);
    }
    return -1;
}

/* Lists every node whose op has no handler in one error (docs/onnx.md). */
static bool check_ops(ox_state *s, const Onnx__GraphProto *gp)
{
    ax_buf b = {0};
    int missing = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        bool foreign = n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0;
        if (n->op_type && (foreign ? ox_find_quant_op(n->domain, n->op_type) != NULL : ox_find_op(n->op_type) != NULL))
            continue;
        if (missing++ < 20)
            ax_buf_printf(&b, "%s'%s' (%s%s%s, opset %lld)", missing > 1 ? ", " : "",
                          n->name && *n->name ? n->name : "?", foreign ? n->domain : "",
                          foreign ? "." : "", n->op_type ? n->op_type : "?", (long long)s->opset);
    }
    if (missing)
        ax_error(s->ctx, ax_noloc(), "unsupported ONNX operators in %d node%s: %.*s%s", missing,
                 missing > 1 ? "s" : "", (int)b.len, b.data, missing > 20 ? ", ..." : "");
    ax_buf_free(&b);
    return missing == 0;
}

static bool import_node(ox_state *s, const Onnx__NodeProto *n)
{
    s->node = n;
    if (n->n_output < 1 || n->n_input > 1000 || n->n_output > IR_SRC_ROOM) {
        ox_fail(s, "a node needs 1 to %d outputs and at most 1000 inputs", IR_SRC_ROOM);
        return false;
    }
    for (size_t i = 0; i < n->n_input; i++)
        if (n->input[i][0] && !ox_lookup(s, n->input[i])) {
            ox_fail(s, "input '%s' is not defined before this node (by an earlier node, an "
                    "initializer or a graph input)", n->input[i]);
            return false;
        }
    int errors = s->ctx->errors;
    bool ok = ox_find_op(n->op_type)(s) && s->ctx->errors == errors;
    if (!ok && s->ctx->errors == errors)   /* a handler that found a required input absent */
        ox_fail(s, "a required input is empty ('') or missing (%zu inputs given)", n->n_input);
    for (size_t i = 0; ok && i < n->n_output; i++)   /* one that nothing reads may stay undefined */
        if (n->output[i][0] && !ox_lookup(s, n->output[i]) && ox_value_used(s, n->output[i])) {
            ox_unsupported(s, "this output of the node");
            ok = false;
        }
    s->node = NULL;
    return ok;
}

/* The graph outputs, in NCHW, each a node of its own. */
static bool add_outputs(ox_state *s, const Onnx__GraphProto *gp)
{
    if (gp->n_output == 0 || gp->n_output > IR_SRC_ROOM) {
        ox_fail(s, "the graph has %zu outputs (1 to %d)", gp->n_output, IR_SRC_ROOM);
        return false;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        ox_val *v = ox_lookup(s, name);
        if (!v) {
            ox_fail(s, "output '%s' is computed by no node", name);
            return false;
        }
        int id = ox_node(s, v);
        if (id == IR_NONE) return false;
        const ir_node *n = ir_at(s->g, id);
        if (ir_ops[n->op].kind == IR_SOURCE || ir_is_output(s->g, id)) {   /* a copy of its own */
            ir_attrs a = ir_attrs_unset();
            a.nperm = n->rank;
            for (int k = 0; k < n->rank; k++) a.perm[k] = k;
            id = ox_add(s, IR_OP_transpose, &id, 1, &a);
            if (id == IR_NONE) return false;
        }
        ir_add_output(s->g, id, ax_strdup(s->ctx->arena, name));
    }
    return true;
}

/* The slot of name in the set of names read (hashed as the value table). */
static const char **used_slot(ox_state *s, const char *name)
{
    size_t i = hash_name(name) & (s->read_cap - 1);
    while (s->read_names[i] && strcmp(s->read_names[i], name) != 0) i = (i + 1) & (s->read_cap - 1);
    return &s->read_names[i];
}

/* The set of every node input and graph output name of gp, built once so
 * that ox_value_used is a lookup, not a scan of the graph per call. */
static void collect_used(ox_state *s, const Onnx__GraphProto *gp)
{
    size_t n = gp->n_output;
    for (size_t i = 0; i < gp->n_node; i++) n += gp->node[i]->n_input;
    s->read_cap = 16;
    while (s->read_cap < 2 * n + 2) s->read_cap *= 2;
    s->read_names = calloc(s->read_cap, sizeof *s->read_names);
    if (!s->read_names) ax_die("out of memory");
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++) *used_slot(s, gp->node[i]->input[k]) = gp->node[i]->input[k];
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name) *used_slot(s, gp->output[i]->name) = gp->output[i]->name;
}

bool ox_value_used(ox_state *s, const char *name)
{
    return s->read_names && *used_slot(s, name) != NULL;
}

static bool import_graph(ox_state *s, const Onnx__GraphProto *gp)
{
    if (gp->n_node > OX_MAX_NODES || gp->n_initializer > OX_MAX_NODES) {
        ox_fail(s, "the graph has more than %d nodes or initializers", OX_MAX_NODES);
        return false;
    }
    if (!check_ops(s, gp)) return false;
    s->graph = gp;
    collect_used(s, gp);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        ox_const *c = ox_tensor(s, gp->initializer[i]);
        if (!c) return false;
        ox_define(s, gp->initializer[i]->name ? gp->initializer[i]->name : "")->c = c;
    }
    if (!shapes_name_inputs(s, gp)) return false;
    for (size_t i = 0; i < gp->n_input; i++)
        if (!add_input(s, gp->input[i])) return false;
    for (size_t i = 0; i < gp->n_node; i++)
        if (!import_node(s, gp->node[i])) return false;
    return add_outputs(s, gp);
}

static int64_t default_opset(const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain;
        if (!d || !*d || !strcmp(d, "ai.onnx")) return m->opset_import[i]->version;
    }
    return 1;
}

/* ---- nesting bound ------------------------------------------------------- */

/* protobuf-c unpacks a submessage by recursion: a GraphProto in an
 * attribute of a node of a GraphProto ... 3,000 deep overflows the stack.
 * Before unpacking, the wire format is scanned along the message fields of
 * onnx.proto that can nest (graphs in attributes, functions, training info,
 * sequence/map/optional types); past OX_MAX_NESTING levels it is refused.
 * The scan recurses at most that deep itself and reads each byte once. */
#define OX_MAX_NESTING 64

typedef enum {
    PB_MODEL, PB_GRAPH, PB_NODE, PB_ATTR, PB_TENSOR, PB_SPARSE, PB_VALUE_INFO, PB_TYPE,
    PB_TYPE_ELEM1, PB_TYPE_ELEM2, PB_FUNCTION, PB_TRAINING, PB_LEAF
} pb_kind;

/* The message kind of field number f of a message of kind k (PB_LEAF: a
 * message that nests nothing further, or not a message). */
static pb_kind pb_field_kind(pb_kind k, uint64_t f)
{
    switch (k) {
    case PB_MODEL: return f == 7 ? PB_GRAPH : f == 25 ? PB_FUNCTION : f == 20 ? PB_TRAINING : PB_LEAF;
    case PB_GRAPH: return f == 1 ? PB_NODE : f == 5 ? PB_TENSOR : f == 15 ? PB_SPARSE
                        : f == 11 || f == 12 || f == 13 ? PB_VALUE_INFO : PB_LEAF;
    case PB_NODE: return f == 5 ? PB_ATTR : PB_LEAF;
    case PB_ATTR: return f == 5 || f == 10 ? PB_TENSOR : f == 6 || f == 11 ? PB_GRAPH
                       : f == 22 || f == 23 ? PB_SPARSE : f == 14 || f == 15 ? PB_TYPE : PB_LEAF;
    case PB_SPARSE: return f == 1 || f == 2 ? PB_TENSOR : PB_LEAF;
    case PB_VALUE_INFO: return f == 2 ? PB_TYPE : PB_LEAF;
    case PB_TYPE: return f == 4 || f == 9 ? PB_TYPE_ELEM1 : f == 5 ? PB_TYPE_ELEM2 : PB_LEAF;
    case PB_TYPE_ELEM1: return f == 1 ? PB_TYPE : PB_LEAF;   /* sequence, optional: elem_type */
    case PB_TYPE_ELEM2: return f == 2 ? PB_TYPE : PB_LEAF;   /* map: value_type */
    case PB_FUNCTION: return f == 4 ? PB_NODE : f == 11 ? PB_ATTR : f == 12 ? PB_VALUE_INFO : PB_LEAF;
    case PB_TRAINING: return f == 1 || f == 2 ? PB_GRAPH : PB_LEAF;
    default: return PB_LEAF;
    }
}

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The deepest nesting of the message of kind k in [p, end), depth levels
 * above it; stops (returning more than OX_MAX_NESTING) once past the bound.
 * Malformed bytes end the scan: protobuf-c reports them. */
static int pb_depth(const uint8_t *p, const uint8_t *end, pb_kind k, int depth)
{
    int deepest = depth;
    while (p < end && deepest <= OX_MAX_NESTING) {
        uint64_t key, v;
        if (!pb_varint(&p, end, &key)) break;
        switch (key & 7) {
        case 0: if (!pb_varint(&p, end, &v)) return deepest; break;
        case 1: if (end - p < 8) return deepest; p += 8; break;
        case 5: if (end - p < 4) return deepest; p += 4; break;
        case 2: {
            if (!pb_varint(&p, end, &v) || v > (uint64_t)(end - p)) return deepest;
            pb_kind sub = pb_field_kind(k, key >> 3);
            if (sub != PB_LEAF) {
                int d = pb_depth(p, p + v, sub, depth + 1);
                if (d > deepest) deepest = d;
            }
            p += v;
            break;
        }
        default: return deepest;   /* groups: protobuf-c refuses them */
        }
    }
    return deepest;
}

ir_graph *onnx_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len,
                      onnx_infer_fn infer, const onnx_input_shape *shapes, int nshapes)
{
    if (len && pb_depth(bytes, (const uint8_t *)bytes + len, PB_MODEL, 0) > OX_MAX_NESTING) {
        ax_error(ctx, ax_noloc(), "'%s' nests graphs, attributes or types more than %d messages deep "
                 "(refused before parsing)", path, OX_MAX_NESTING);
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, bytes);
    if (!m || !m->graph) {
        ax_error(ctx, ax_noloc(), "'%s' is not a valid ONNX model (truncated or not a ModelProto)",
                 path);
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        return NULL;
    }
    ox_state s = {.ctx = ctx, .infer = infer, .dir = dir_of(ctx->arena, path), .shapes = shapes,
                  .nshapes = nshapes};
    s.opset = default_opset(m);
    s.g = ir_graph_new(ctx, model_name(ctx->arena, path), ax_noloc());
    s.g->wording = &onnx_wording;
    int errors = ctx->errors;
    if (s.opset < 1 || s.opset > OX_MAX_OPSET)
        ax_error(ctx, ax_noloc(), "'%s' uses ONNX opset %lld, which is unsupported: axc reads opsets up to %d", path,
                 (long long)s.opset, OX_MAX_OPSET);
    else
        import_graph(&s, m->graph);
    free(s.vals);
    free(s.read_names);
    onnx__model_proto__free_unpacked(m, NULL);
    if (ctx->errors > errors) {
        ir_graph_free_nodes(s.g);
        return NULL;
    }
    return s.g;
}

#endif
