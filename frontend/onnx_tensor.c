/* onnx_tensor.c — constants known at import (onnx_internal.h ox_const):
 * new ones to fold into, exact integer elements, and TensorProtos read into
 * them within bounds (raw_data, the typed fields, or external data from a
 * file beside the model).  Used by the graph walk (initializers) and the op
 * handlers (Constant, attributes); calls only onnx_build.c's messages. */
#ifdef AXC_ONNX
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

#define OX_MAX_TENSOR_BYTES ((int64_t)1 << 32)

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

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_tensor_left_out;
#endif
