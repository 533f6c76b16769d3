/* test_tensorfile.c — safetensors / .npy readers and writers, and dtype
 * conversion (io/tensorfile.h).
 *
 * Group "formats" needs nothing but the library: round trips and one test
 * per rejection class with its exact message.  Group "references" runs
 * tests/fixtures/make_fixtures.py (NumPy + PyTorch) into a temporary
 * directory and checks the parsers and tf_convert against what it wrote.
 * The script is found through $AXC_ROOT (tests/run.sh sets it) or the
 * current directory; the interpreter is $PYTHON or /usr/bin/python3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfile.h"

/* ---- helpers ---------------------------------------------------------------- */

static size_t dtype_size(axrt_dtype d)
{
    static const size_t sizes[AXRT_DTYPE_COUNT] = {4, 8, 2, 2, 1, 4, 8};
    return sizes[d];
}

/* A safetensors file: u64 header length, header text as given, then
 * data_len bytes of data. */
static uint8_t *make_st(const char *header, size_t header_len, size_t data_len, size_t *len)
{
    *len = 8 + header_len + data_len;
    uint8_t *buf = calloc(1, *len);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)header_len >> (8 * i));
    memcpy(buf + 8, header, header_len);
    return buf;
}

static void expect_st_bytes_error(const uint8_t *buf, size_t len, const char *message)
{
    ax_arena *a = ax_arena_new();
    tf_tensor *t = NULL;
    int n = -1;
    char err[512] = "";
    assert_int_equal(tf_safetensors_parse(a, buf, len, &t, &n, err, sizeof err), -1);
    assert_string_equal(err, message);
    ax_arena_free(a);
}

static void expect_st_error(const char *header, size_t data_len, const char *message)
{
    size_t len;
    uint8_t *buf = make_st(header, strlen(header), data_len, &len);
    expect_st_bytes_error(buf, len, message);
    free(buf);
}

/* A .npy file: version major.0 prefix, header text, data_len zero bytes. */
static uint8_t *make_npy(int major, const char *header, size_t data_len, size_t *len)
{
    size_t h = strlen(header), width = major == 1 ? 2 : 4;
    *len = 8 + width + h + data_len;
    uint8_t *buf = calloc(1, *len);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    for (size_t i = 0; i < width; i++)
        buf[8 + i] = (uint8_t)(h >> (8 * i));
    memcpy(buf + 8 + width, header, h);
    return buf;
}

static void expect_npy_bytes_error(const uint8_t *buf, size_t len, const char *message)
{
    tf_tensor t;
    char err[512] = "";
    assert_int_equal(tf_npy_parse(buf, len, &t, err, sizeof err), -1);
    assert_string_equal(err, message);
}

static void expect_npy_error(const char *header, size_t data_len, const char *message)
{
    size_t len;
    uint8_t *buf = make_npy(1, header, data_len, &len);
    expect_npy_bytes_error(buf, len, message);
    free(buf);
}

/* Deterministic bytes for round trips. */
static uint8_t *pattern(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 37 + seed * 11) % 251);
    return p;
}

/* ---- round trips ------------------------------------------------------------ */

static void test_safetensors_round_trip(void **state)
{
    (void)state;
    enum { N = AXRT_DTYPE_COUNT * 4 };
    static const int64_t dims[3] = {2, 3, 1};
    tf_tensor in[N];
    char names[N][32];
    for (int d = 0; d < AXRT_DTYPE_COUNT; d++) {
        for (int rank = 0; rank < 4; rank++) {
            tf_tensor *t = &in[d * 4 + rank];
            memset(t, 0, sizeof *t);
            snprintf(names[d * 4 + rank], sizeof names[0], "%s.rank%d", tf_dtype_to_st((axrt_dtype)d), rank);
            t->name = names[d * 4 + rank];
            t->dtype = (axrt_dtype)d;
            t->rank = rank;
            memcpy(t->shape, dims, sizeof dims);
            t->nbytes = dtype_size(t->dtype) * (rank > 0 ? 2 : 1) * (rank > 1 ? 3 : 1);
            t->data = pattern(t->nbytes, (unsigned)(d * 4 + rank));
        }
    }
    ax_buf file = {0};
    tf_safetensors_write(&file, in, N);
    uint64_t header_len = 0;
    memcpy(&header_len, file.data, 8);
    assert_int_equal(header_len % 8, 0);

    ax_arena *a = ax_arena_new();
    tf_tensor *out;
    int n;
    char err[256];
    assert_int_equal(tf_safetensors_parse(a, (const uint8_t *)file.data, file.len, &out, &n, err, sizeof err), 0);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++) {
        assert_string_equal(out[i].name, in[i].name);
        assert_int_equal(out[i].dtype, in[i].dtype);
        assert_int_equal(out[i].rank, in[i].rank);
        assert_memory_equal(out[i].shape, in[i].shape, sizeof(int64_t) * (size_t)in[i].rank);
        assert_int_equal(out[i].nbytes, in[i].nbytes);
        assert_memory_equal(out[i].data, in[i].data, in[i].nbytes);
        free((void *)in[i].data);
    }
    ax_arena_free(a);
    ax_buf_free(&file);
}

static void test_npy_round_trip(void **state)
{
    (void)state;
    static const int64_t dims[3] = {4, 1, 3};
    for (int d = 0; d < AXRT_DTYPE_COUNT; d++) {
        if (d == AXRT_BF16)
            continue; /* .npy has no bfloat16 */
        for (int rank = 0; rank < 4; rank++) {
            tf_tensor in = {.dtype = (axrt_dtype)d, .rank = rank};
            memcpy(in.shape, dims, sizeof dims);
            in.nbytes = dtype_size(in.dtype) * (rank > 0 ? 4 : 1) * (rank > 2 ? 3 : 1);
            in.data = pattern(in.nbytes, (unsigned)rank);
            ax_buf file = {0};
            tf_npy_write(&file, &in);
            tf_tensor out;
            char err[256] = "";
            assert_int_equal(tf_npy_parse((const uint8_t *)file.data, file.len, &out, err, sizeof err), 0);
            assert_int_equal(out.dtype, in.dtype);
            assert_int_equal(out.rank, rank);
            assert_memory_equal(out.shape, in.shape, sizeof(int64_t) * (size_t)rank);
            assert_int_equal(out.nbytes, in.nbytes);
            assert_memory_equal(out.data, in.data, in.nbytes);
            assert_int_equal((out.data - (const uint8_t *)file.data) % 64, 0);
            assert_int_equal(file.data[out.data - (const uint8_t *)file.data - 1], '\n');
            free((void *)in.data);
            ax_buf_free(&file);
        }
    }
}

static void test_dtype_names(void **state)
{
    (void)state;
    for (int d = 0; d < AXRT_DTYPE_COUNT; d++) {
        axrt_dtype back;
        assert_true(tf_dtype_from_st(tf_dtype_to_st((axrt_dtype)d), &back));
        assert_int_equal(back, d);
    }
    axrt_dtype x;
    assert_false(tf_dtype_from_st("f32", &x));
    assert_false(tf_dtype_from_st("U8", &x));
    assert_null(tf_dtype_to_st(AXRT_DTYPE_COUNT));
}

static void test_safetensors_accepts(void **state)
{
    (void)state;
    /* metadata ignored, padding, overlapping and out-of-order ranges in bounds */
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"I8\",\"shape\":[2],"
                    "\"data_offsets\":[2,4]},\"a\":{\"data_offsets\":[0,4],\"shape\":[],\"dtype\":\"F32\"},"
                    "\"z\":{\"dtype\":\"F64\",\"shape\":[0,5],\"data_offsets\":[4,4]}}    ";
    size_t len;
    uint8_t *buf = make_st(h, strlen(h), 4, &len);
    buf[8 + strlen(h) + 2] = 7;
    ax_arena *a = ax_arena_new();
    tf_tensor *t;
    int n;
    char err[256] = "";
    assert_int_equal(tf_safetensors_parse(a, buf, len, &t, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(t[0].name, "b");
    assert_int_equal(t[0].data[0], 7);
    assert_string_equal(t[1].name, "a");
    assert_int_equal(t[1].rank, 0);
    assert_int_equal(t[1].nbytes, 4);
    assert_int_equal(t[2].nbytes, 0);
    ax_arena_free(a);
    free(buf);
}

static void test_npy_accepts(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = make_npy(2, "{ \"shape\" : ( 2 ,3L ) , 'fortran_order':False,'descr':'|i1' ,  }  \n", 6, &len);
    tf_tensor t;
    char err[256] = "";
    assert_int_equal(tf_npy_parse(buf, len, &t, err, sizeof err), 0);
    assert_int_equal(t.dtype, AXRT_I8);
    assert_int_equal(t.rank, 2);
    assert_int_equal(t.shape[1], 3);
    free(buf);
    buf = make_npy(3, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}", 8, &len);
    assert_int_equal(tf_npy_parse(buf, len, &t, err, sizeof err), 0);
    assert_int_equal(t.rank, 0);
    assert_int_equal(t.nbytes, 8);
    free(buf);
}

/* ---- safetensors rejections -------------------------------------------------- */

#define ENTRY(body) "{\"w\":{" body "}}"
#define OK_SHAPE "\"shape\":[2,2]"

static void test_st_reject_length(void **state)
{
    (void)state;
    uint8_t tiny[3] = {0};
    expect_st_bytes_error(tiny, 3, "file is too short for a safetensors header (3 bytes)");
    size_t len;
    uint8_t *buf = make_st("{}", 2, 0, &len);
    buf[0] = 100;
    expect_st_bytes_error(buf, len, "header length 100 exceeds the file size (2 bytes after the length field)");
    buf[0] = 0;
    buf[3] = 200; /* 200 << 24 */
    expect_st_bytes_error(buf, len, "header length 3355443200 exceeds the limit of 104857600 bytes");
    free(buf);
}

static void test_st_reject_json(void **state)
{
    (void)state;
    expect_st_error("{\"a\":", 0, "header is not valid JSON: unexpected end of header (5 bytes)");
    expect_st_error("{\"a\":{}} x", 0, "header is not valid JSON: unexpected character at byte 9");
    expect_st_error("{'a':{}}", 0, "header is not valid JSON: single-quoted string at byte 1");
    expect_st_error(ENTRY("\"shape\":[[2]]"), 0, "header is not valid JSON: nesting too deep at byte 16");
    size_t len;
    uint8_t *buf = make_st("{}\0     ", 8, 0, &len);
    expect_st_bytes_error(buf, len, "header is not valid JSON: trailing data at byte 2");
    free(buf);
    expect_st_error("[1,2]", 0, "header is not a JSON object");
}

static void test_st_reject_entry(void **state)
{
    (void)state;
    expect_st_error("{\"w\":[1]}", 0, "tensor 'w': header entry is not an object");
    expect_st_error(ENTRY(OK_SHAPE ",\"data_offsets\":[0,16]"), 16, "tensor 'w': missing field 'dtype'");
    expect_st_error(ENTRY("\"dtype\":\"F32\",\"data_offsets\":[0,16]"), 16, "tensor 'w': missing field 'shape'");
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE), 16, "tensor 'w': missing field 'data_offsets'");
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[0,16],\"x\":1"), 16,
                    "tensor 'w': unknown field 'x'");
    expect_st_error(ENTRY("\"dtype\":\"F32\",\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[0,16]"), 16,
                    "tensor 'w': duplicate field in header entry");
}

static void test_st_reject_dtype(void **state)
{
    (void)state;
    expect_st_error(ENTRY("\"dtype\":4," OK_SHAPE ",\"data_offsets\":[0,4]"), 4,
                    "tensor 'w': field 'dtype' is not a string");
    expect_st_error(ENTRY("\"dtype\":\"U8\"," OK_SHAPE ",\"data_offsets\":[0,4]"), 4,
                    "tensor 'w': unsupported dtype 'U8' (supported: F32 F64 F16 BF16 I8 I32 I64)");
}

static void test_st_reject_shape(void **state)
{
    (void)state;
    expect_st_error(ENTRY("\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]"), 4,
                    "tensor 'w': field 'shape' is not an array");
    expect_st_error(ENTRY("\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,4]"), 4,
                    "tensor 'w': shape[1] is not an integer");
    expect_st_error(ENTRY("\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,4]"), 4,
                    "tensor 'w': shape[1] is negative (-3)");
    expect_st_error(ENTRY("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]"), 4,
                    "tensor 'w': rank 9 exceeds the maximum of 8");
    expect_st_error(ENTRY("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,0]"), 0,
                    "tensor 'w': F32 [4294967296, 4294967296, 4] is too large (size overflows)");
}

static void test_st_reject_offsets(void **state)
{
    (void)state;
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[0]"), 16,
                    "tensor 'w': field 'data_offsets' is not an array of two integers");
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[0,\"16\"]"), 16,
                    "tensor 'w': field 'data_offsets' is not an array of two integers");
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[-4,12]"), 16,
                    "tensor 'w': data_offsets [-4, 12] are negative");
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[16,0]"), 16,
                    "tensor 'w': data_offsets [16, 0] end before they begin");
    expect_st_error("{\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[10],\"data_offsets\":[0,40]}}", 32,
                    "tensor 'fc.weight': data_offsets [0, 40] exceed the data section (32 bytes)");
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[0,12]"), 16,
                    "tensor 'w': data_offsets [0, 12] hold 12 bytes but F32 [2, 2] needs 16");
    expect_st_error(ENTRY("\"dtype\":\"F32\"," OK_SHAPE ",\"data_offsets\":[0,99999999999999999999]"), 16,
                    "tensor 'w': data_offsets [0, 9223372036854775807] exceed the data section (16 bytes)");
}

static void test_st_reject_names(void **state)
{
    (void)state;
    expect_st_error("{\"w\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[0,1]},"
                    "\"\\u0077\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1,
                    "duplicate tensor name 'w'");
    expect_st_error("{\"a\\u0000b\\n\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1,
                    "tensor 'a\\x00b\\x0a': name contains a NUL byte");
}

static void test_st_reject_metadata(void **state)
{
    (void)state;
    expect_st_error("{\"__metadata__\":[1]}", 0, "__metadata__ is not an object of strings");
    expect_st_error("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ value 'k' is not a string");
}

/* TF_MAX_TENSORS + 1 entries besides the metadata: rejected by count
 * alone, before the entries are looked at. */
static void test_st_reject_too_many(void **state)
{
    (void)state;
    ax_buf h = {0};
    ax_buf_puts(&h, "{\"__metadata__\":{}");
    for (long i = 0; i <= TF_MAX_TENSORS; i++)
        ax_buf_printf(&h, ",\"%lx\":0", i);
    ax_buf_puts(&h, "}");
    size_t len;
    uint8_t *buf = make_st(h.data, h.len, 0, &len);
    expect_st_bytes_error(buf, len, "header has 1000001 tensors, more than the limit of 1000000");
    free(buf);
    ax_buf_free(&h);
}

/* ---- .npy rejections ------------------------------------------------------------ */

#define NPY_F4_23 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

static void test_npy_reject_prefix(void **state)
{
    (void)state;
    expect_npy_bytes_error((const uint8_t *)"\x93NUMPY\x01", 7, "file is too short for a .npy header (7 bytes)");
    expect_npy_bytes_error((const uint8_t *)"\x93NUMPZ\x01\x00\x00\x00", 10, "not a .npy file (bad magic)");
    size_t len;
    uint8_t *buf = make_npy(1, NPY_F4_23, 24, &len);
    buf[6] = 4;
    expect_npy_bytes_error(buf, len, "unsupported .npy version 4.0");
    buf[6] = 1;
    buf[9] = 1; /* header length 256 + 59 */
    expect_npy_bytes_error(buf, 80, "header length 315 exceeds the file size (80 bytes)");
    free(buf);
}

static void test_npy_reject_dtype(void **state)
{
    (void)state;
    expect_npy_error("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
                     "big-endian data ('>f4') is not supported");
    expect_npy_error("{'descr': '<i1', 'fortran_order': False, 'shape': (2,), }", 2,
                     "unsupported dtype '<i1' (supported: <f4 <f8 <f2 <i4 <i8 |i1)");
    expect_npy_error("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", 2,
                     "unsupported dtype '|u1' (supported: <f4 <f8 <f2 <i4 <i8 |i1)");
    expect_npy_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
                     "malformed .npy header at byte 10: expected a quoted string");
}

static void test_npy_reject_layout(void **state)
{
    (void)state;
    expect_npy_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
                     "Fortran-order arrays are not supported; save with np.ascontiguousarray");
    expect_npy_error("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", 24,
                     "malformed .npy header at byte 34: expected True or False");
}

static void test_npy_reject_dict(void **state)
{
    (void)state;
    expect_npy_error("{'descr': '<f4', 'shape': (2, 3), }", 24, "missing key 'fortran_order' in .npy header");
    expect_npy_error("{'descr': '<f4', 'descr': '<f4', }", 24, "duplicate key 'descr' in .npy header");
    expect_npy_error("{'descr': '<f4', 'order': 'C', }", 24, "unexpected key 'order' in .npy header");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24,
                     "malformed .npy header at byte 56: expected ',' or '}'");
    expect_npy_error(NPY_F4_23 " x", 24, "malformed .npy header at byte 60: expected only spaces after the dict");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24,
                     "malformed .npy header at byte 53: expected ',' or ')' in the shape");
}

static void test_npy_reject_shape(void **state)
{
    (void)state;
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
                     "rank exceeds the maximum of 8");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 4,
                     "malformed .npy header at byte 54: expected a non-negative integer in the shape");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 4,
                     "dimension 0 of the shape is too large");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 4,
                     "<f4 [4611686018427387904, 4] is too large (size overflows)");
}

static void test_npy_reject_size(void **state)
{
    (void)state;
    expect_npy_error(NPY_F4_23, 20, "data holds 20 bytes but <f4 [2, 3] needs 24");
    expect_npy_error(NPY_F4_23, 28, "data holds 28 bytes but <f4 [2, 3] needs 24");
}

/* ---- references from NumPy / PyTorch ------------------------------------------ */

static char fixture_dir[256];

static int make_fixtures(void **state)
{
    (void)state;
    const char *root = getenv("AXC_ROOT") ? getenv("AXC_ROOT") : ".";
    const char *python = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(fixture_dir, sizeof fixture_dir, "%s/axc_tensorfile_XXXXXX", tmp);
    if (!mkdtemp(fixture_dir))
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/fixtures/make_fixtures.py' '%s'", python, root, fixture_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "fixture script failed: %s\n", cmd);
        return -1;
    }
    return 0;
}

static int remove_fixtures(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fixture_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint8_t *read_fixture(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open fixture %s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(*len + 1);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

/* value(k) of make_fixtures.py, checked through tf_convert to F64. */
static void expect_values(const tf_tensor *t, size_t numel, const char *what)
{
    double *v = malloc(numel * sizeof *v + 1);
    tf_convert(v, AXRT_F64, t->data, t->dtype, numel);
    bool is_float = t->dtype <= AXRT_BF16;
    for (size_t k = 0; k < numel; k++) {
        double want = (double)((int64_t)((7 * k) % 23) - 11) / (is_float ? 4.0 : 1.0);
        if (v[k] != want)
            fail_msg("%s: element %zu is %g, numpy/torch wrote %g", what, k, v[k], want);
    }
    free(v);
}

static void test_npy_from_numpy(void **state)
{
    (void)state;
    static const char *codes[] = {"f4", "f8", "f2", "i4", "i8", "i1"};
    static const axrt_dtype types[] = {AXRT_F32, AXRT_F64, AXRT_F16, AXRT_I32, AXRT_I64, AXRT_I8};
    static const int64_t shapes[4][3] = {{0}, {5}, {2, 3}, {2, 3, 4}};
    static const size_t numels[4] = {1, 5, 6, 24};
    for (int c = 0; c < 6; c++) {
        for (int rank = 0; rank < 4; rank++) {
            char name[64], err[256] = "";
            snprintf(name, sizeof name, "npy_%s_r%d.npy", codes[c], rank);
            size_t len;
            uint8_t *buf = read_fixture(name, &len);
            tf_tensor t;
            if (tf_npy_parse(buf, len, &t, err, sizeof err))
                fail_msg("%s: %s", name, err);
            assert_int_equal(t.dtype, types[c]);
            assert_int_equal(t.rank, rank);
            assert_memory_equal(t.shape, shapes[rank], sizeof(int64_t) * (size_t)rank);
            expect_values(&t, numels[rank], name);
            ax_buf again = {0};
            tf_npy_write(&again, &t);
            assert_int_equal(again.len, len);
            assert_memory_equal(again.data, buf, len); /* byte-identical to np.save */
            ax_buf_free(&again);
            free(buf);
        }
    }
}

static void test_npy_versions_and_rejects_from_numpy(void **state)
{
    (void)state;
    static const char *ok[] = {"npy_v2.npy", "npy_v3.npy"};
    for (int i = 0; i < 2; i++) {
        size_t len;
        uint8_t *buf = read_fixture(ok[i], &len);
        tf_tensor t;
        char err[256] = "";
        if (tf_npy_parse(buf, len, &t, err, sizeof err))
            fail_msg("%s: %s", ok[i], err);
        assert_int_equal(t.rank, 2);
        expect_values(&t, 6, ok[i]);
        free(buf);
    }
    static const char *bad[][2] = {
        {"npy_be.npy", "big-endian data ('>f4') is not supported"},
        {"npy_fortran.npy", "Fortran-order arrays are not supported; save with np.ascontiguousarray"},
        {"npy_u2.npy", "unsupported dtype '<u2' (supported: <f4 <f8 <f2 <i4 <i8 |i1)"},
    };
    for (int i = 0; i < 3; i++) {
        size_t len;
        uint8_t *buf = read_fixture(bad[i][0], &len);
        expect_npy_bytes_error(buf, len, bad[i][1]);
        free(buf);
    }
}

static void test_safetensors_from_torch(void **state)
{
    (void)state;
    static const struct { const char *name; axrt_dtype dtype; int rank; int64_t shape[3]; } want[] = {
        {"fc.weight", AXRT_F32, 2, {2, 3}},       {"fc.bias", AXRT_F64, 1, {5}},
        {"conv.weight", AXRT_F16, 3, {2, 3, 4}},  {"ln.weight", AXRT_BF16, 2, {3, 2}},
        {"q.scale", AXRT_I8, 1, {4}},              {"count", AXRT_I32, 0, {0}},
        {"idx", AXRT_I64, 2, {1, 3}},              {"odd \"name\"\\\t\xc3\xa9", AXRT_F32, 2, {0, 2}},
    };
    size_t len;
    uint8_t *buf = read_fixture("st_torch.safetensors", &len);
    ax_arena *a = ax_arena_new();
    tf_tensor *t;
    int n;
    char err[256] = "";
    if (tf_safetensors_parse(a, buf, len, &t, &n, err, sizeof err))
        fail_msg("st_torch.safetensors: %s", err);
    assert_int_equal(n, 8);
    for (int i = 0; i < n; i++) {
        assert_string_equal(t[i].name, want[i].name);
        assert_int_equal(t[i].dtype, want[i].dtype);
        assert_int_equal(t[i].rank, want[i].rank);
        assert_memory_equal(t[i].shape, want[i].shape, sizeof(int64_t) * (size_t)want[i].rank);
        expect_values(&t[i], t[i].nbytes / dtype_size(t[i].dtype), t[i].name);
    }
    ax_buf again = {0};
    tf_safetensors_write(&again, t, n);
    assert_int_equal(again.len, len);
    assert_memory_equal(again.data, buf, len); /* byte-identical to the reference writer */
    ax_buf_free(&again);
    ax_arena_free(a);
    free(buf);
}

static const char *const ST_NAMES[AXRT_DTYPE_COUNT] = {"F32", "F64", "F16", "BF16", "I8", "I32", "I64"};

static bool is_nan_bits(const uint8_t *p, axrt_dtype t)
{
    uint16_t h;
    if (t == AXRT_F32) {
        float f;
        memcpy(&f, p, 4);
        return isnan(f);
    }
    if (t == AXRT_F64) {
        double d;
        memcpy(&d, p, 8);
        return isnan(d);
    }
    memcpy(&h, p, 2);
    return t == AXRT_F16 ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff)
         : t == AXRT_BF16 ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : false;
}

/* Converts fixture src (src_t) to dst_t and compares with fixture ref
 * bit for bit; a NaN reference only needs a NaN. */
static void expect_conversion(const char *src_name, axrt_dtype src_t, const char *ref_name, axrt_dtype dst_t)
{
    size_t slen, rlen, ds = dtype_size(dst_t);
    uint8_t *src = read_fixture(src_name, &slen), *ref = read_fixture(ref_name, &rlen);
    size_t n = slen / dtype_size(src_t);
    assert_int_equal(rlen, n * ds);
    uint8_t *got = malloc(rlen + 1);
    tf_convert(got, dst_t, src, src_t, n);
    for (size_t i = 0; i < n; i++) {
        if (is_nan_bits(ref + i * ds, dst_t) && is_nan_bits(got + i * ds, dst_t))
            continue;
        if (memcmp(got + i * ds, ref + i * ds, ds) != 0) {
            uint64_t s = 0, g = 0, r = 0;
            memcpy(&s, src + i * dtype_size(src_t), dtype_size(src_t));
            memcpy(&g, got + i * ds, ds);
            memcpy(&r, ref + i * ds, ds);
            fail_msg("%s -> %s element %zu: source bits 0x%llx gave 0x%llx, reference 0x%llx", src_name,
                     ref_name, i, (unsigned long long)s, (unsigned long long)g, (unsigned long long)r);
        }
    }
    free(got);
    free(src);
    free(ref);
}

static void test_convert_all_pairs(void **state)
{
    (void)state;
    for (int s = 0; s < AXRT_DTYPE_COUNT; s++) {
        for (int d = 0; d < AXRT_DTYPE_COUNT; d++) {
            char src[32], ref[32];
            snprintf(src, sizeof src, "pair_%s.bin", ST_NAMES[s]);
            snprintf(ref, sizeof ref, "pair_%s_%s.bin", ST_NAMES[s], ST_NAMES[d]);
            expect_conversion(src, (axrt_dtype)s, ref, (axrt_dtype)d);
        }
    }
}

static void test_convert_widening_all_patterns(void **state)
{
    (void)state;
    expect_conversion("conv_all16.bin", AXRT_F16, "conv_f16all_f32.bin", AXRT_F32);
    expect_conversion("conv_all16.bin", AXRT_BF16, "conv_bf16all_f32.bin", AXRT_F32);
}

static void test_convert_narrowing_floats(void **state)
{
    (void)state;
    expect_conversion("conv_f32.bin", AXRT_F32, "conv_f32_f16.bin", AXRT_F16);
    expect_conversion("conv_f32.bin", AXRT_F32, "conv_f32_bf16.bin", AXRT_BF16);
    expect_conversion("conv_f64.bin", AXRT_F64, "conv_f64_f16.bin", AXRT_F16);
    expect_conversion("conv_f64.bin", AXRT_F64, "conv_f64_bf16.bin", AXRT_BF16);
    expect_conversion("conv_f64.bin", AXRT_F64, "conv_f64_f32.bin", AXRT_F32);
}

static void test_convert_float_to_int_saturates(void **state)
{
    (void)state;
    expect_conversion("conv_f32.bin", AXRT_F32, "conv_f32_i32.bin", AXRT_I32);
    expect_conversion("conv_f64.bin", AXRT_F64, "conv_f64_i8.bin", AXRT_I8);
    expect_conversion("conv_f64.bin", AXRT_F64, "conv_f64_i32.bin", AXRT_I32);
    expect_conversion("conv_f64.bin", AXRT_F64, "conv_f64_i64.bin", AXRT_I64);
}

static void test_convert_int_to_small_floats(void **state)
{
    (void)state;
    expect_conversion("conv_i64.bin", AXRT_I64, "conv_i64_f16.bin", AXRT_F16);
    expect_conversion("conv_i64.bin", AXRT_I64, "conv_i64_bf16.bin", AXRT_BF16);
    expect_conversion("conv_i64.bin", AXRT_I64, "conv_i64_f32.bin", AXRT_F32);
    expect_conversion("conv_i64.bin", AXRT_I64, "conv_i64_i8.bin", AXRT_I8);
}

/* tf_convert reads and writes through unaligned pointers. */
static void test_convert_unaligned(void **state)
{
    (void)state;
    uint8_t src[1 + 3 * 8], dst[1 + 3 * 2];
    double v[3] = {1.5, -2.0, 65504.0};
    memcpy(src + 1, v, sizeof v);
    tf_convert(dst + 1, AXRT_F16, src + 1, AXRT_F64, 3);
    uint16_t h[3];
    memcpy(h, dst + 1, sizeof h);
    assert_int_equal(h[0], 0x3e00);
    assert_int_equal(h[1], 0xc000);
    assert_int_equal(h[2], 0x7bff);
}

int main(void)
{
    const struct CMUnitTest formats[] = {
        cmocka_unit_test(test_safetensors_round_trip),
        cmocka_unit_test(test_npy_round_trip),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_safetensors_accepts),
        cmocka_unit_test(test_npy_accepts),
        cmocka_unit_test(test_st_reject_length),
        cmocka_unit_test(test_st_reject_json),
        cmocka_unit_test(test_st_reject_entry),
        cmocka_unit_test(test_st_reject_dtype),
        cmocka_unit_test(test_st_reject_shape),
        cmocka_unit_test(test_st_reject_offsets),
        cmocka_unit_test(test_st_reject_names),
        cmocka_unit_test(test_st_reject_metadata),
        cmocka_unit_test(test_st_reject_too_many),
        cmocka_unit_test(test_npy_reject_prefix),
        cmocka_unit_test(test_npy_reject_dtype),
        cmocka_unit_test(test_npy_reject_layout),
        cmocka_unit_test(test_npy_reject_dict),
        cmocka_unit_test(test_npy_reject_shape),
        cmocka_unit_test(test_npy_reject_size),
        cmocka_unit_test(test_convert_unaligned),
    };
    const struct CMUnitTest references[] = {
        cmocka_unit_test(test_npy_from_numpy),
        cmocka_unit_test(test_npy_versions_and_rejects_from_numpy),
        cmocka_unit_test(test_safetensors_from_torch),
        cmocka_unit_test(test_convert_all_pairs),
        cmocka_unit_test(test_convert_widening_all_patterns),
        cmocka_unit_test(test_convert_narrowing_floats),
        cmocka_unit_test(test_convert_float_to_int_saturates),
        cmocka_unit_test(test_convert_int_to_small_floats),
    };
    int failed = cmocka_run_group_tests_name("formats", formats, NULL, NULL);
    failed += cmocka_run_group_tests_name("references", references, make_fixtures, remove_fixtures);
    return failed;
}
