/* tensorfile.c — safetensors and .npy readers/writers (docs/cli.md#files) and
 * element conversion between the seven axc dtypes.
 *
 * Every input is treated as hostile: each length and offset is checked
 * against the buffer before use, every size product is checked for
 * overflow, and the first problem is reported as one line that names the
 * tensor and the numbers involved.  Parsed tensors point into the caller's
 * buffer; nothing is copied except names. */
#include "tensorfile.h"

#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes -------------------------------------------------------------- */

typedef struct dtype_info {
    const char *st;  /* safetensors spelling */
    const char *npy; /* .npy descr */
    size_t size;
} dtype_info;

static const dtype_info DTYPES[AXRT_DTYPE_COUNT] = {
#define DTYPE_CODES(E, name, short_name, ctype, bytes, st, npy, is_float) [AXRT_##E] = {st, npy, bytes},
    AXRT_DTYPES(DTYPE_CODES)
#undef DTYPE_CODES
};

bool tf_dtype_from_st(const char *s, axrt_dtype *out)
{
    for (int d = 0; d < AXRT_DTYPE_COUNT; d++) {
        if (strcmp(s, DTYPES[d].st) == 0) {
            *out = (axrt_dtype)d;
            return true;
        }
    }
    return false;
}

const char *tf_dtype_to_st(axrt_dtype d)
{
    return (unsigned)d < AXRT_DTYPE_COUNT ? DTYPES[d].st : NULL;
}

/* ---- messages ------------------------------------------------------------ */

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

enum { SHOWN_MAX = 64, SHOWN_BUF = SHOWN_MAX * 4 + 4 };

/* Copies s[0..len) into out for a one-line message: bytes outside printable
 * ASCII (and the quote) become \xNN, and long names are cut with "...". */
static const char *shown(const char *s, size_t len, char out[SHOWN_BUF])
{
    size_t o = 0;
    for (size_t i = 0; i < len && i < SHOWN_MAX; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
    }
    if (len > SHOWN_MAX) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

/* "[2, 3]" (rank 0: "[]"); always fits: 8 dims of at most 20 digits. */
static const char *shape_text(const int64_t *shape, int rank, char out[200])
{
    size_t o = 0;
    out[o++] = '[';
    for (int i = 0; i < rank; i++)
        o += (size_t)snprintf(out + o, 200 - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    snprintf(out + o, 200 - o, "]");
    return out;
}

/* numel(shape) * itemsize, or false when it does not fit in size_t. */
static bool checked_nbytes(const int64_t *shape, int rank, size_t itemsize, size_t *out)
{
    size_t n = itemsize;
    for (int i = 0; i < rank; i++) {
        uint64_t d = (uint64_t)shape[i];
        if (d != 0 && n > SIZE_MAX / d)
            return false;
        n *= (size_t)d;
    }
    *out = n;
    return true;
}

static uint64_t read_le(const uint8_t *p, int nbytes)
{
    uint64_t v = 0;
    for (int i = nbytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_le(ax_buf *out, uint64_t v, int nbytes)
{
    uint8_t b[8];
    for (int i = 0; i < nbytes; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    ax_buf_put(out, b, (size_t)nbytes);
}

/* ---- safetensors: top-level key scan ------------------------------------- *
 * json-c keeps the last of duplicate keys and cuts keys at a NUL, so the
 * header text is also scanned by hand to see every top-level key as written
 * and how many fields each entry object has.  The scan is bounds-safe on any
 * text, so it runs first to count entries before json-c builds a tree. */

typedef struct st_key {
    size_t begin, end;  /* the quoted key in the header text */
    int fields;         /* keys in its value when that is an object, else -1 */
    const char *name;   /* decoded (arena) */
    size_t name_len;
    int order;
} st_key;

/* End of the string literal starting at text[i] (index after the closing
 * quote; len when the text ends inside the string). */
static size_t skip_string(const char *text, size_t len, size_t i)
{
    for (i++; i < len && text[i] != '"'; i++)
        if (text[i] == '\\')
            i++;
    return i < len ? i + 1 : len;
}

/* Scans the header; fills keys[0..) when keys != NULL, returns the number
 * of top-level keys (*metadata: how many are spelled "__metadata__"), or -1
 * at a single-quoted string (json-c accepts those, JSON does not) with *bad
 * set to its byte offset. */
static long scan_top_keys(const char *text, size_t len, st_key *keys, size_t *bad, long *metadata)
{
    char stack[8];
    int depth = 0;
    *metadata = 0;
    bool want_key = false;
    long n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\'') {
            *bad = i;
            return -1;
        } else if (c == '"') {
            size_t end = skip_string(text, len, i);
            if (want_key && depth == 1 && keys)
                keys[n] = (st_key){.begin = i, .end = end, .fields = -1};
            if (want_key && depth == 1) {
                n++;
                *metadata += end - i == 14 && memcmp(text + i, "\"__metadata__\"", 14) == 0;
            }
            if (want_key && depth == 2 && keys)
                keys[n - 1].fields++;
            want_key = false;
            i = end - 1;
        } else if ((c == '{' || c == '[') && depth < (int)sizeof stack) {
            stack[depth++] = c;
            want_key = c == '{';
            if (c == '{' && depth == 2 && keys && n > 0)
                keys[n - 1].fields = 0;
        } else if (c == '}' || c == ']') {
            depth -= depth > 0;
        } else if (c == ',') {
            want_key = depth > 0 && stack[depth - 1] == '{';
        }
    }
    return n;
}

/* Parses header[0..len) with json-c (strict, depth 3, UTF-8 checked). */
static json_object *parse_json_header(const char *header, size_t len, char *err, size_t errlen)
{
    struct json_tokener *tok = json_tokener_new_ex(4);
    if (!tok)
        ax_out_of_memory(0);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *root = json_tokener_parse_ex(tok, header, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!root) {
        if (e == json_tokener_continue)
            fail(err, errlen, "header is not valid JSON: unexpected end of header (%zu bytes)", len);
        else
            fail(err, errlen, "header is not valid JSON: %s at byte %zu", json_tokener_error_desc(e), end);
        return NULL;
    }
    for (size_t i = end; i < len; i++) {
        if (header[i] != ' ' && header[i] != '\t' && header[i] != '\n' && header[i] != '\r') {
            json_object_put(root);
            fail(err, errlen, "header is not valid JSON: trailing data at byte %zu", i);
            return NULL;
        }
    }
    if (!json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        fail(err, errlen, "header is not a JSON object");
        return NULL;
    }
    return root;
}

static int compare_keys(const void *pa, const void *pb)
{
    const st_key *a = pa, *b = pb;
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    if (c)
        return c;
    if (a->name_len != b->name_len)
        return a->name_len < b->name_len ? -1 : 1;
    return a->order - b->order;
}

/* Decodes each scanned key (a JSON string literal) into the arena and
 * rejects NUL bytes in names and duplicate names. */
static int decode_keys(ax_arena *a, const char *header, st_key *keys, long n, char *err,
                       size_t errlen)
{
    char sh[SHOWN_BUF];
    struct json_tokener *tok = json_tokener_new_ex(1);
    if (!tok)
        ax_out_of_memory(0);
    for (long i = 0; i < n; i++) {
        json_tokener_reset(tok);
        json_object *s = json_tokener_parse_ex(tok, header + keys[i].begin,
                                               (int)(keys[i].end - keys[i].begin));
        if (!s)
            ax_die("json-c rejected a key it had accepted");
        keys[i].name_len = (size_t)json_object_get_string_len(s);
        char *name = ax_alloc(a, keys[i].name_len + 1); /* not ax_strndup: keeps NULs */
        memcpy(name, json_object_get_string(s), keys[i].name_len);
        keys[i].name = name;
        keys[i].order = (int)i;
        json_object_put(s);
        if (memchr(keys[i].name, '\0', keys[i].name_len)) {
            json_tokener_free(tok);
            return fail(err, errlen, "tensor '%s': name contains a NUL byte",
                        shown(keys[i].name, keys[i].name_len, sh));
        }
    }
    json_tokener_free(tok);
    st_key *sorted = malloc((size_t)n * sizeof *sorted + 1);
    if (!sorted)
        ax_out_of_memory(0);
    memcpy(sorted, keys, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_keys);
    int rc = 0;
    for (long i = 1; i < n && rc == 0; i++) {
        if (sorted[i].name_len == sorted[i - 1].name_len &&
            memcmp(sorted[i].name, sorted[i - 1].name, sorted[i].name_len) == 0)
            rc = fail(err, errlen, "duplicate tensor name '%s'",
                      shown(sorted[i].name, sorted[i].name_len, sh));
    }
    free(sorted);
    return rc;
}

/* ---- safetensors: one header entry --------------------------------------- */

static int check_metadata(json_object *meta, char *err, size_t errlen)
{
    char sh[SHOWN_BUF];
    if (!json_object_is_type(meta, json_type_object))
        return fail(err, errlen, "__metadata__ is not an object of strings");
    json_object_object_foreach(meta, key, value) {
        if (!json_object_is_type(value, json_type_string))
            return fail(err, errlen, "__metadata__ value '%s' is not a string",
                        shown(key, strlen(key), sh));
    }
    return 0;
}

/* Returns field `field` of entry, or NULL with a message when missing. */
static json_object *entry_field(json_object *entry, const char *field, const char *name,
                                char *err, size_t errlen)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(entry, field, &v))
        fail(err, errlen, "tensor '%s': missing field '%s'", name, field);
    return v;
}

static int entry_dtype(json_object *entry, const char *name, tf_tensor *t, char *err,
                       size_t errlen)
{
    char sh[SHOWN_BUF];
    json_object *v = entry_field(entry, "dtype", name, err, errlen);
    if (!v)
        return -1;
    if (!json_object_is_type(v, json_type_string))
        return fail(err, errlen, "tensor '%s': field 'dtype' is not a string", name);
    const char *s = json_object_get_string(v);
    if (!tf_dtype_from_st(s, &t->dtype))
        return fail(err, errlen,
                    "tensor '%s': unsupported dtype '%s' (supported: F32 F64 F16 BF16 I8 I32 I64)",
                    name, shown(s, (size_t)json_object_get_string_len(v), sh));
    return 0;
}

static int entry_shape(json_object *entry, const char *name, tf_tensor *t, char *err,
                       size_t errlen)
{
    json_object *v = entry_field(entry, "shape", name, err, errlen);
    if (!v)
        return -1;
    if (!json_object_is_type(v, json_type_array))
        return fail(err, errlen, "tensor '%s': field 'shape' is not an array", name);
    size_t rank = json_object_array_length(v);
    if (rank > AXRT_MAX_RANK)
        return fail(err, errlen, "tensor '%s': rank %zu exceeds the maximum of %d", name, rank,
                    AXRT_MAX_RANK);
    t->rank = (int)rank;
    for (size_t i = 0; i < rank; i++) {
        json_object *d = json_object_array_get_idx(v, i);
        if (!json_object_is_type(d, json_type_int))
            return fail(err, errlen, "tensor '%s': shape[%zu] is not an integer", name, i);
        t->shape[i] = json_object_get_int64(d);
        if (t->shape[i] < 0)
            return fail(err, errlen, "tensor '%s': shape[%zu] is negative (%lld)", name, i,
                        (long long)t->shape[i]);
    }
    return 0;
}

/* Reads data_offsets and checks them against the data section and the
 * size dtype × shape needs. */
static int entry_offsets(json_object *entry, const char *name, const uint8_t *data,
                         size_t data_len, tf_tensor *t, char *err, size_t errlen)
{
    char st[200];
    json_object *v = entry_field(entry, "data_offsets", name, err, errlen);
    if (!v)
        return -1;
    int64_t off[2];
    bool ok = json_object_is_type(v, json_type_array) && json_object_array_length(v) == 2;
    for (size_t i = 0; ok && i < 2; i++) {
        json_object *o = json_object_array_get_idx(v, i);
        ok = json_object_is_type(o, json_type_int);
        off[i] = ok ? json_object_get_int64(o) : 0;
    }
    if (!ok)
        return fail(err, errlen, "tensor '%s': field 'data_offsets' is not an array of two integers",
                    name);
    long long b = (long long)off[0], e = (long long)off[1];
    if (b < 0 || e < 0)
        return fail(err, errlen, "tensor '%s': data_offsets [%lld, %lld] are negative", name, b, e);
    if (e < b)
        return fail(err, errlen, "tensor '%s': data_offsets [%lld, %lld] end before they begin",
                    name, b, e);
    if ((uint64_t)e > data_len)
        return fail(err, errlen, "tensor '%s': data_offsets [%lld, %lld] exceed the data section (%zu bytes)",
                    name, b, e, data_len);
    size_t need;
    if (!checked_nbytes(t->shape, t->rank, DTYPES[t->dtype].size, &need))
        return fail(err, errlen, "tensor '%s': %s %s is too large (size overflows)", name,
                    DTYPES[t->dtype].st, shape_text(t->shape, t->rank, st));
    if ((uint64_t)(e - b) != need)
        return fail(err, errlen, "tensor '%s': data_offsets [%lld, %lld] hold %lld bytes but %s %s needs %zu",
                    name, b, e, e - b, DTYPES[t->dtype].st, shape_text(t->shape, t->rank, st),
                    need);
    t->data = data + b;
    t->nbytes = need;
    return 0;
}

static int parse_entry(json_object *entry, const st_key *key, const uint8_t *data,
                       size_t data_len, tf_tensor *t, char *err, size_t errlen)
{
    char sh[SHOWN_BUF];
    const char *name = shown(key->name, key->name_len, sh);
    if (!json_object_is_type(entry, json_type_object))
        return fail(err, errlen, "tensor '%s': header entry is not an object", name);
    json_object_object_foreach(entry, field, value) {
        (void)value;
        if (strcmp(field, "dtype") && strcmp(field, "shape") && strcmp(field, "data_offsets")) {
            char fs[SHOWN_BUF];
            return fail(err, errlen, "tensor '%s': unknown field '%s'", name,
                        shown(field, strlen(field), fs));
        }
    }
    if (key->fields != json_object_object_length(entry))
        return fail(err, errlen, "tensor '%s': duplicate field in header entry", name);
    t->name = key->name;
    if (entry_dtype(entry, name, t, err, errlen) || entry_shape(entry, name, t, err, errlen))
        return -1;
    return entry_offsets(entry, name, data, data_len, t, err, errlen);
}

/* ---- safetensors: file ---------------------------------------------------- */

/* Checks the length prefix; on success *header_len is the JSON length. */
static int st_header_len(const uint8_t *buf, size_t len, size_t *header_len, char *err,
                         size_t errlen)
{
    if (len < 8)
        return fail(err, errlen, "file is too short for a safetensors header (%zu bytes)", len);
    uint64_t h = read_le(buf, 8);
    if (h > TF_MAX_HEADER_BYTES)
        return fail(err, errlen, "header length %llu exceeds the limit of %u bytes",
                    (unsigned long long)h, TF_MAX_HEADER_BYTES);
    if (h > len - 8)
        return fail(err, errlen, "header length %llu exceeds the file size (%zu bytes after the length field)",
                    (unsigned long long)h, len - 8);
    *header_len = (size_t)h;
    return 0;
}

/* Counts the top-level keys before json-c parses anything, so that a
 * header with too many entries costs one linear scan. */
static long st_count_keys(const char *header, size_t hlen, char *err, size_t errlen)
{
    size_t bad = 0;
    long metadata;
    long n = scan_top_keys(header, hlen, NULL, &bad, &metadata);
    if (n < 0)
        return fail(err, errlen, "header is not valid JSON: single-quoted string at byte %zu", bad);
    if (n - metadata > TF_MAX_TENSORS)
        return fail(err, errlen, "header has %ld tensors, more than the limit of %d",
                    n - metadata, TF_MAX_TENSORS);
    return n;
}

/* Scans and decodes the n top-level keys; *keys is malloc'ed (caller frees). */
static int st_collect_keys(ax_arena *a, const char *header, size_t hlen, long n, st_key **keys,
                           char *err, size_t errlen)
{
    size_t bad = 0;
    long metadata;
    *keys = malloc((size_t)n * sizeof **keys + 1);
    if (!*keys)
        ax_out_of_memory(0);
    scan_top_keys(header, hlen, *keys, &bad, &metadata);
    return decode_keys(a, header, *keys, n, err, errlen);
}

/* Validates one key's entry (or the metadata) into tensors[*count]. */
static int st_parse_entry(json_object *root, const st_key *key, const uint8_t *data,
                          size_t data_len, tf_tensor *tensors, int *count, char *err,
                          size_t errlen)
{
    json_object *entry = json_object_object_get(root, key->name);
    if (strcmp(key->name, "__metadata__") == 0)
        return check_metadata(entry, err, errlen);
    return parse_entry(entry, key, data, data_len, &tensors[(*count)++], err, errlen);
}

int tf_safetensors_parse(ax_arena *a, const uint8_t *buf, size_t len, tf_tensor **out, int *n,
                         char *err, size_t errlen)
{
    size_t hlen = 0;
    if (st_header_len(buf, len, &hlen, err, errlen))
        return -1;
    const char *header = (const char *)buf + 8;
    long nkeys = st_count_keys(header, hlen, err, errlen);
    if (nkeys < 0)
        return -1;
    json_object *root = parse_json_header(header, hlen, err, errlen);
    if (!root)
        return -1;
    st_key *keys = NULL;
    int rc = st_collect_keys(a, header, hlen, nkeys, &keys, err, errlen);
    tf_tensor *tensors = rc ? NULL : ax_alloc(a, (size_t)(nkeys + 1) * sizeof *tensors);
    int count = 0;
    for (long i = 0; rc == 0 && i < nkeys; i++)
        rc = st_parse_entry(root, &keys[i], buf + 8 + hlen, len - 8 - hlen, tensors, &count, err,
                            errlen);
    free(keys);
    json_object_put(root);
    if (rc)
        return -1;
    *out = tensors;
    *n = count;
    return 0;
}

/* Appends s as a JSON string literal, escaped as serde_json and Python's
 * json module do (short escapes where JSON has them, else \u00XX). */
static void put_json_string(ax_buf *out, const char *s)
{
    ax_buf_puts(out, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f" : NULL;
        if (esc)
            ax_buf_puts(out, esc);
        else if (c < 0x20)
            ax_buf_printf(out, "\\u%04x", c);
        else
            ax_buf_put(out, s, 1);
    }
    ax_buf_puts(out, "\"");
}

void tf_safetensors_write(ax_buf *out, const tf_tensor *t, int n)
{
    ax_buf header = {0};
    size_t offset = 0;
    ax_buf_puts(&header, "{");
    for (int i = 0; i < n; i++) {
        put_json_string(&header, t[i].name);
        ax_buf_printf(&header, ":{\"dtype\":\"%s\",\"shape\":[", tf_dtype_to_st(t[i].dtype));
        for (int d = 0; d < t[i].rank; d++)
            ax_buf_printf(&header, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
        ax_buf_printf(&header, "],\"data_offsets\":[%zu,%zu]}%s", offset, offset + t[i].nbytes,
                      i + 1 < n ? "," : "");
        offset += t[i].nbytes;
    }
    ax_buf_puts(&header, "}");
    while (header.len % 8)
        ax_buf_puts(&header, " ");
    put_le(out, header.len, 8);
    ax_buf_put(out, header.data, header.len);
    for (int i = 0; i < n; i++)
        ax_buf_put(out, t[i].data, t[i].nbytes);
    ax_buf_free(&header);
}

/* ---- .npy: the header dict ------------------------------------------------ *
 * The header is a Python dict literal as written by repr():
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * parsed by hand: keys in any order, each once, trailing comma allowed. */

typedef struct npy_cursor {
    const char *p, *begin, *end;
    char *err;
    size_t errlen;
} npy_cursor;

static void skip_space(npy_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* Skips spaces, then consumes ch if it is next. */
static bool accept(npy_cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static int expected(npy_cursor *c, const char *what)
{
    return fail(c->err, c->errlen, "malformed .npy header at byte %zu: expected %s",
                (size_t)(c->p - c->begin), what);
}

/* A quoted Python string without escapes (all .npy keys and descrs). */
static int parse_py_string(npy_cursor *c, const char **s, size_t *n)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return expected(c, "a quoted string");
    char q = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != q && *c->p != '\\' && *c->p != '\n')
        c->p++;
    if (c->p >= c->end || *c->p != q)
        return expected(c, "the end of the string");
    *s = start;
    *n = (size_t)(c->p++ - start);
    return 0;
}

static bool accept_word(npy_cursor *c, const char *word)
{
    size_t n = strlen(word);
    skip_space(c);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, word, n) == 0) {
        c->p += n;
        return true;
    }
    return false;
}

/* A non-negative decimal (Python 2 files may end it with L). */
static int parse_dim(npy_cursor *c, int index, int64_t *out)
{
    skip_space(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return expected(c, "a non-negative integer in the shape");
    int64_t v = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
        if (v > (INT64_MAX - (*c->p - '0')) / 10)
            return fail(c->err, c->errlen, "dimension %d of the shape is too large", index);
        v = v * 10 + (*c->p - '0');
    }
    if (c->p < c->end && *c->p == 'L')
        c->p++;
    *out = v;
    return 0;
}

/* "(2, 3)", "(5,)" or "()". */
static int parse_shape_tuple(npy_cursor *c, tf_tensor *t)
{
    if (!accept(c, '('))
        return expected(c, "'(' for the shape");
    t->rank = 0;
    while (!accept(c, ')')) {
        if (t->rank == AXRT_MAX_RANK)
            return fail(c->err, c->errlen, "rank exceeds the maximum of %d", AXRT_MAX_RANK);
        if (parse_dim(c, t->rank, &t->shape[t->rank]))
            return -1;
        t->rank++;
        if (!accept(c, ',') && !(skip_space(c), c->p < c->end && *c->p == ')'))
            return expected(c, "',' or ')' in the shape");
    }
    return 0;
}

static int parse_descr(npy_cursor *c, tf_tensor *t)
{
    const char *s;
    size_t n;
    char sh[SHOWN_BUF];
    if (parse_py_string(c, &s, &n))
        return -1;
    for (int d = 0; d < AXRT_DTYPE_COUNT; d++) {
        if (DTYPES[d].npy && strlen(DTYPES[d].npy) == n && memcmp(DTYPES[d].npy, s, n) == 0) {
            t->dtype = (axrt_dtype)d;
            return 0;
        }
    }
    if (n > 0 && s[0] == '>')
        return fail(c->err, c->errlen, "big-endian data ('%s') is not supported", shown(s, n, sh));
    return fail(c->err, c->errlen, "unsupported dtype '%s' (supported: <f4 <f8 <f2 <i4 <i8 |i1)",
                shown(s, n, sh));
}

/* One "key: value" pair; seen[] marks descr, fortran_order, shape. */
static int parse_dict_item(npy_cursor *c, tf_tensor *t, bool seen[3])
{
    static const char *const KEYS[3] = {"descr", "fortran_order", "shape"};
    const char *key;
    size_t n;
    char sh[SHOWN_BUF];
    if (parse_py_string(c, &key, &n))
        return -1;
    int k = 0;
    while (k < 3 && !(strlen(KEYS[k]) == n && memcmp(KEYS[k], key, n) == 0))
        k++;
    if (k == 3)
        return fail(c->err, c->errlen, "unexpected key '%s' in .npy header", shown(key, n, sh));
    if (seen[k])
        return fail(c->err, c->errlen, "duplicate key '%s' in .npy header", KEYS[k]);
    seen[k] = true;
    if (!accept(c, ':'))
        return expected(c, "':'");
    if (k == 0)
        return parse_descr(c, t);
    if (k == 2)
        return parse_shape_tuple(c, t);
    if (accept_word(c, "True"))
        return fail(c->err, c->errlen,
                    "Fortran-order arrays are not supported; save with np.ascontiguousarray");
    return accept_word(c, "False") ? 0 : expected(c, "True or False");
}

static int parse_npy_dict(npy_cursor *c, tf_tensor *t)
{
    static const char *const KEYS[3] = {"descr", "fortran_order", "shape"};
    bool seen[3] = {false, false, false};
    if (!accept(c, '{'))
        return expected(c, "'{'");
    while (!accept(c, '}')) {
        if (parse_dict_item(c, t, seen))
            return -1;
        if (!accept(c, ',') && !(skip_space(c), c->p < c->end && *c->p == '}'))
            return expected(c, "',' or '}'");
    }
    skip_space(c);
    if (c->p != c->end)
        return expected(c, "only spaces after the dict");
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return fail(c->err, c->errlen, "missing key '%s' in .npy header", KEYS[k]);
    return 0;
}

/* ---- .npy: file ----------------------------------------------------------- */

/* Checks magic and version; *data_start = end of the header. */
static int npy_prefix(const uint8_t *buf, size_t len, size_t *header_start, size_t *data_start,
                      char *err, size_t errlen)
{
    if (len < 10)
        return fail(err, errlen, "file is too short for a .npy header (%zu bytes)", len);
    if (memcmp(buf, "\x93NUMPY", 6) != 0)
        return fail(err, errlen, "not a .npy file (bad magic)");
    unsigned major = buf[6], minor = buf[7];
    if (minor != 0 || major < 1 || major > 3)
        return fail(err, errlen, "unsupported .npy version %u.%u", major, minor);
    int width = major == 1 ? 2 : 4;
    if (len < 8 + (size_t)width)
        return fail(err, errlen, "file is too short for a .npy header (%zu bytes)", len);
    uint64_t hlen = read_le(buf + 8, width);
    *header_start = 8 + (size_t)width;
    if (hlen > len - *header_start)
        return fail(err, errlen, "header length %llu exceeds the file size (%zu bytes)",
                    (unsigned long long)hlen, len);
    *data_start = *header_start + (size_t)hlen;
    return 0;
}

int tf_npy_parse_header(const uint8_t *buf, size_t len, size_t file_size, tf_tensor *out, size_t *data_offset,
                        char *err, size_t errlen)
{
    size_t header_start = 0, data_start = 0;
    if (npy_prefix(buf, len, &header_start, &data_start, err, errlen))
        return -1;
    tf_tensor t = {0};
    npy_cursor c = {(const char *)buf + header_start, (const char *)buf + header_start,
                    (const char *)buf + data_start, err, errlen};
    if (parse_npy_dict(&c, &t))
        return -1;
    char st[200];
    size_t need;
    if (!checked_nbytes(t.shape, t.rank, DTYPES[t.dtype].size, &need))
        return fail(err, errlen, "%s %s is too large (size overflows)", DTYPES[t.dtype].npy,
                    shape_text(t.shape, t.rank, st));
    if (file_size < data_start || file_size - data_start != need)
        return fail(err, errlen, "data holds %zu bytes but %s %s needs %zu",
                    file_size < data_start ? 0 : file_size - data_start, DTYPES[t.dtype].npy,
                    shape_text(t.shape, t.rank, st), need);
    t.nbytes = need;
    *out = t;
    *data_offset = data_start;
    return 0;
}

int tf_npy_parse(const uint8_t *buf, size_t len, tf_tensor *out, char *err, size_t errlen)
{
    size_t data_start = 0;
    if (tf_npy_parse_header(buf, len, len, out, &data_start, err, errlen))
        return -1;
    out->data = buf + data_start;
    return 0;
}

/* Writes what numpy 1.24's np.save writes: keys sorted, the spare spaces
 * numpy leaves for growing the first axis in place, then spaces and '\n'
 * so that data starts at a multiple of 64 bytes.  BF16 has no .npy dtype;
 * callers convert it first. */
void tf_npy_write(ax_buf *out, const tf_tensor *t)
{
    enum { ALIGN = 64, GROWTH_AXIS_MAX_DIGITS = 21, PREFIX = 10 };
    if ((unsigned)t->dtype >= AXRT_DTYPE_COUNT || !DTYPES[t->dtype].npy)
        ax_die("tf_npy_write: dtype %d has no .npy spelling", (int)t->dtype);
    const char *descr = DTYPES[t->dtype].npy;
    ax_buf h = {0};
    ax_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int d = 0; d < t->rank; d++)
        ax_buf_printf(&h, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    ax_buf_puts(&h, t->rank == 1 ? ",), }" : "), }");
    if (t->rank > 0) {
        int digits = snprintf(NULL, 0, "%lld", (long long)t->shape[0]);
        for (int i = digits; i < GROWTH_AXIS_MAX_DIGITS; i++)
            ax_buf_puts(&h, " ");
    }
    size_t pad = ALIGN - (PREFIX + h.len + 1) % ALIGN;
    for (size_t i = 0; i < pad; i++)
        ax_buf_puts(&h, " ");
    ax_buf_puts(&h, "\n");
    ax_buf_put(out, "\x93NUMPY\x01\x00", 8);
    put_le(out, h.len, 2);
    ax_buf_put(out, h.data, h.len);
    ax_buf_put(out, t->data, t->nbytes);
    ax_buf_free(&h);
}

/* ---- conversion ----------------------------------------------------------- *
 * Every element goes through a scalar that holds either an exact double
 * (all float sources widen to double exactly) or an exact int64.  Narrowing
 * to F16/BF16 rounds once, directly from that scalar, so there is no double
 * rounding (F64 -> F32 -> BF16 would round twice). */

typedef struct scalar {
    bool is_int;
    int64_t i;
    double f;
} scalar;

typedef struct small_float {
    int mant_bits, bias, max_biased; /* max_biased: the all-ones exponent */
} small_float;

static const small_float HALF = {10, 15, 31};
static const small_float BFLOAT = {7, 127, 255};

/* The value sig × 2^exp2 (sig != 0) in format f, rounded to nearest even,
 * overflowing to infinity, with subnormals.  Returns the bits without sign. */
static uint16_t encode_small(uint64_t sig, int exp2, const small_float *f)
{
    while (!(sig >> 63)) {
        sig <<= 1;
        exp2--;
    }
    int e = exp2 + 63;          /* value in [2^e, 2^(e+1)) */
    int emin = 1 - f->bias;
    int E = e < emin ? emin : e; /* exponent of the result's ulp + mant_bits */
    int shift = E - f->mant_bits - exp2; /* > 0: sig has 64 significant bits */
    uint64_t q, rest, half;
    if (shift >= 64) {
        q = 0;
        rest = shift == 64 ? sig : 1; /* shift > 64: below half an ulp */
        half = shift == 64 ? (uint64_t)1 << 63 : 2;
    } else {
        q = sig >> shift;
        rest = sig & (((uint64_t)1 << shift) - 1);
        half = (uint64_t)1 << (shift - 1);
    }
    if (rest > half || (rest == half && (q & 1)))
        q++;
    if (q >> (f->mant_bits + 1)) {
        q >>= 1;
        E++;
    }
    if (!(q >> f->mant_bits))
        return (uint16_t)q; /* subnormal (or zero) */
    if (E + f->bias >= f->max_biased)
        return (uint16_t)(f->max_biased << f->mant_bits);
    return (uint16_t)(((unsigned)(E + f->bias) << f->mant_bits) | (q & ((1u << f->mant_bits) - 1)));
}

static uint16_t small_from_double(double x, const small_float *f)
{
    uint64_t bits;
    memcpy(&bits, &x, 8);
    uint16_t sign = (uint16_t)((bits >> 63) << 15);
    int biased = (int)(bits >> 52 & 0x7ff);
    uint64_t mant = bits & (((uint64_t)1 << 52) - 1);
    uint16_t inf = (uint16_t)(f->max_biased << f->mant_bits);
    if (biased == 0x7ff) /* inf, or NaN: keep the top payload bits, force quiet */
        return sign | inf |
               (mant ? (uint16_t)(mant >> (52 - f->mant_bits) | 1u << (f->mant_bits - 1)) : 0);
    if (biased == 0 && mant == 0)
        return sign;
    if (biased == 0)
        return sign | encode_small(mant, -1074, f);
    return sign | encode_small(mant | (uint64_t)1 << 52, biased - 1075, f);
}

static uint16_t small_from_int(int64_t v, const small_float *f)
{
    if (v == 0)
        return 0;
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    return (uint16_t)((v < 0 ? 0x8000 : 0) | encode_small(mag, 0, f));
}

static double half_to_double(uint16_t h)
{
    int biased = h >> 10 & 0x1f;
    unsigned mant = h & 0x3ff;
    double mag = biased == 0    ? ldexp(mant, -24)
                 : biased == 31 ? (mant ? NAN : INFINITY)
                                : ldexp(mant | 0x400, biased - 25);
    return h & 0x8000 ? -mag : mag;
}

static double bfloat_to_double(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* float -> int: truncate toward zero, saturate, NaN -> 0. */
static int64_t double_to_int(double x, int64_t lo, int64_t hi)
{
    if (isnan(x))
        return 0;
    if (x >= 9223372036854775808.0)
        return hi;
    if (x < -9223372036854775808.0)
        return lo;
    int64_t v = (int64_t)x;
    return v < lo ? lo : v > hi ? hi : v;
}

static scalar load_scalar(const uint8_t *p, axrt_dtype t)
{
    scalar s = {false, 0, 0};
    float f32;
    uint16_t u16;
    int8_t i8;
    int32_t i32;
    switch (t) {
    case AXRT_F32: memcpy(&f32, p, 4); s.f = f32; break;
    case AXRT_F64: memcpy(&s.f, p, 8); break;
    case AXRT_F16: memcpy(&u16, p, 2); s.f = half_to_double(u16); break;
    case AXRT_BF16: memcpy(&u16, p, 2); s.f = bfloat_to_double(u16); break;
    case AXRT_I8: memcpy(&i8, p, 1); s.is_int = true; s.i = i8; break;
    case AXRT_I32: memcpy(&i32, p, 4); s.is_int = true; s.i = i32; break;
    case AXRT_I64: memcpy(&s.i, p, 8); s.is_int = true; break;
    default: ax_die("tf_convert: bad source dtype %d", (int)t);
    }
    return s;
}

static int64_t scalar_to_int(scalar s, int64_t lo, int64_t hi)
{
    if (!s.is_int)
        return double_to_int(s.f, lo, hi);
    return s.i < lo ? lo : s.i > hi ? hi : s.i;
}

static void store_scalar(uint8_t *p, axrt_dtype t, scalar s)
{
    float f32;
    double f64;
    uint16_t u16;
    int8_t i8;
    int32_t i32;
    int64_t i64;
    switch (t) {
    case AXRT_F32: f32 = s.is_int ? (float)s.i : (float)s.f; memcpy(p, &f32, 4); break;
    case AXRT_F64: f64 = s.is_int ? (double)s.i : s.f; memcpy(p, &f64, 8); break;
    case AXRT_F16:
        u16 = s.is_int ? small_from_int(s.i, &HALF) : small_from_double(s.f, &HALF);
        memcpy(p, &u16, 2);
        break;
    case AXRT_BF16:
        u16 = s.is_int ? small_from_int(s.i, &BFLOAT) : small_from_double(s.f, &BFLOAT);
        memcpy(p, &u16, 2);
        break;
    case AXRT_I8: i8 = (int8_t)scalar_to_int(s, INT8_MIN, INT8_MAX); memcpy(p, &i8, 1); break;
    case AXRT_I32: i32 = (int32_t)scalar_to_int(s, INT32_MIN, INT32_MAX); memcpy(p, &i32, 4); break;
    case AXRT_I64: i64 = scalar_to_int(s, INT64_MIN, INT64_MAX); memcpy(p, &i64, 8); break;
    default: ax_die("tf_convert: bad destination dtype %d", (int)t);
    }
}

void tf_convert(void *dst, axrt_dtype dst_type, const void *src, axrt_dtype src_type, size_t n)
{
    if ((unsigned)dst_type >= AXRT_DTYPE_COUNT || (unsigned)src_type >= AXRT_DTYPE_COUNT)
        ax_die("tf_convert: bad dtype %d -> %d", (int)src_type, (int)dst_type);
    size_t ds = DTYPES[dst_type].size, ss = DTYPES[src_type].size;
    if (dst_type == src_type) {
        memmove(dst, src, n * ds);
        return;
    }
    for (size_t i = 0; i < n; i++)
        store_scalar((uint8_t *)dst + i * ds, dst_type, load_scalar((const uint8_t *)src + i * ss, src_type));
}
