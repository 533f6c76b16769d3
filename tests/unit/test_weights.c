/* test_weights.c — parameter initialisation, save and load (weights.h):
 * the documented init algorithm against values from an independent Python
 * implementation, determinism and per-name independence, Glorot bounds,
 * zeros/ones, save→load round trip, every mismatch class reported in one
 * run (missing, misshapen, unexpected; num_batches_tracked ignored, Hugging
 * Face's position_ids only when it holds 0, 1, ... per row), dtype
 * conversion on load, unreadable and malformed files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensorfile.h"
#include "weights.h"

/* Four source lines so that located diagnostics have a line to print. */
static const char source_text[] = "line one\nline two\nline three\nline four\n";

typedef struct fixture {
    ax_ctx *ctx;
    char *diag;
    size_t diag_len;
    char path[64];   /* a temporary safetensors file */
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fx->ctx = ax_ctx_new();
    fx->ctx->path = "t.ax";
    fx->ctx->src = source_text;
    fx->ctx->src_len = sizeof source_text - 1;
    fx->ctx->diag_out = open_memstream(&fx->diag, &fx->diag_len);
    strcpy(fx->path, "/tmp/axc_test_weights_XXXXXX");
    int fd = mkstemp(fx->path);
    assert_true(fd >= 0);
    close(fd);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    fclose(fx->ctx->diag_out);
    free(fx->diag);
    unlink(fx->path);
    ax_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static const char *diagnostics(fixture *fx)
{
    fflush(fx->ctx->diag_out);
    return fx->diag ? fx->diag : "";
}

/* Appends a param node (Float32 unless the graph says otherwise) on line `line`. */
static int add_param(ir_graph *g, const char *name, ir_param_role role, int rank,
                     const int64_t *shape, int line)
{
    ax_loc loc = {line, 1, 4};
    int id = ir_add(g, IR_OP_param, NULL, 0, loc);
    ir_node *n = ir_at(g, id);
    n->name = name;
    n->role = role;
    n->dtype = g->dtype;
    n->rank = rank;
    memcpy(n->shape, shape, sizeof *shape * (size_t)rank);
    return id;
}

/* A small model: 0.weight [3, 2], 0.bias [3], bn.weight [3], bn.running_var [3]. */
static ir_graph *small_graph(fixture *fx)
{
    ir_graph *g = ir_graph_new(fx->ctx, "m", (ax_loc){1, 1, 1});
    add_param(g, "0.weight", IR_PARAM_GLOROT, 2, (int64_t[]){3, 2}, 1);
    add_param(g, "0.bias", IR_PARAM_ZEROS, 1, (int64_t[]){3}, 2);
    add_param(g, "bn.weight", IR_PARAM_ONES, 1, (int64_t[]){3}, 3);
    add_param(g, "bn.running_var", IR_PARAM_ONES, 1, (int64_t[]){3}, 4);
    return g;
}

static void write_tensors(fixture *fx, const tf_tensor *t, int n)
{
    ax_buf buf = {0};
    tf_safetensors_write(&buf, t, n);
    FILE *f = fopen(fx->path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf.data, 1, buf.len, f), buf.len);
    fclose(f);
    ax_buf_free(&buf);
}

/* ---- init ------------------------------------------------------------------- */

/* Expected values: the algorithm documented in weights.c, reimplemented in
 * Python (FNV-1a of "fc.weight", seed 0xfffff — chosen so that seed XOR
 * hash differs from seed + hash —, splitmix64, Glorot limit
 * sqrt(6 / (2 + 3)) for shape [3, 2]), rounded with numpy.float32. */
static void init_matches_documented_algorithm(void **state)
{
    fixture *fx = *state;
    static const float expected[6] = {-0.688148081f, 1.02556169f, -0.305925727f, 0.107842498f,
                                      0.520847201f, 0.838235497f};
    ir_graph *g = ir_graph_new(fx->ctx, "m", (ax_loc){1, 1, 1});
    int id = add_param(g, "fc.weight", IR_PARAM_GLOROT, 2, (int64_t[]){3, 2}, 1);
    weights_init(g, 0xfffff);
    const float *got = ir_at(g, id)->data;
    for (int i = 0; i < 6; i++) assert_float_equal(got[i], expected[i], 0);
    ir_graph_free_nodes(g);
}

static void init_is_deterministic_and_per_name(void **state)
{
    fixture *fx = *state;
    ir_graph *a = small_graph(fx), *b = ir_graph_new(fx->ctx, "other", (ax_loc){1, 1, 1});
    /* the same parameter alone in another graph, after a different one */
    add_param(b, "extra.weight", IR_PARAM_GLOROT, 2, (int64_t[]){5, 5}, 1);
    int w = add_param(b, "0.weight", IR_PARAM_GLOROT, 2, (int64_t[]){3, 2}, 1);
    weights_init(a, 42);
    weights_init(b, 42);
    assert_memory_equal(ir_at(a, 0)->data, ir_at(b, w)->data, 6 * sizeof(float));
    float first[6];
    memcpy(first, ir_at(a, 0)->data, sizeof first);
    weights_init(a, 42);
    assert_memory_equal(ir_at(a, 0)->data, first, sizeof first);
    weights_init(a, 43);
    assert_memory_not_equal(ir_at(a, 0)->data, first, sizeof first);
    ir_graph_free_nodes(a);
    ir_graph_free_nodes(b);
}

static void init_glorot_bounds_zeros_ones(void **state)
{
    fixture *fx = *state;
    ir_graph *g = small_graph(fx);
    int conv = add_param(g, "conv.weight", IR_PARAM_GLOROT, 4, (int64_t[]){64, 32, 3, 3}, 1);
    weights_init(g, 0);
    double limit = sqrt(6.0 / (32 * 9 + 64 * 9)), max_abs = 0, sum = 0;
    const float *w = ir_at(g, conv)->data;
    int64_t n = 64 * 32 * 9;
    for (int64_t i = 0; i < n; i++) {
        assert_true(fabs(w[i]) <= limit);
        max_abs = fmax(max_abs, fabs(w[i]));
        sum += w[i];
    }
    assert_true(max_abs > 0.99 * limit);
    assert_true(fabs(sum / (double)n) < 0.01 * limit);
    const float *bias = ir_at(g, 1)->data, *ones = ir_at(g, 3)->data;
    for (int i = 0; i < 3; i++) {
        assert_float_equal(bias[i], 0.0f, 0);
        assert_float_equal(ones[i], 1.0f, 0);
    }
    ir_graph_free_nodes(g);
}

static void init_in_half_precision(void **state)
{
    fixture *fx = *state;
    ir_graph *g = ir_graph_new(fx->ctx, "m", (ax_loc){1, 1, 1});
    g->dtype = AXRT_F16;
    int id = add_param(g, "ln.weight", IR_PARAM_ONES, 1, (int64_t[]){4}, 1);
    weights_init(g, 0);
    const uint16_t *h = ir_at(g, id)->data;
    for (int i = 0; i < 4; i++) assert_int_equal(h[i], 0x3c00); /* 1.0 in binary16 */
    ir_graph_free_nodes(g);
}

/* ---- save / load -------------------------------------------------------------- */

static void save_then_load_round_trips(void **state)
{
    fixture *fx = *state;
    ir_graph *a = small_graph(fx), *b = small_graph(fx);
    weights_init(a, 5);
    ax_buf buf = {0};
    weights_save(a, &buf);
    FILE *f = fopen(fx->path, "wb");
    fwrite(buf.data, 1, buf.len, f);
    fclose(f);
    tf_tensor *t;
    int n;
    char err[200];
    assert_int_equal(tf_safetensors_parse(fx->ctx->arena, (const uint8_t *)buf.data, buf.len,
                                          &t, &n, err, sizeof err), 0);
    assert_int_equal(n, 4);
    assert_string_equal(t[0].name, "0.weight"); /* graph order, PyTorch names */
    assert_string_equal(t[3].name, "bn.running_var");
    assert_int_equal(t[0].dtype, AXRT_F32);
    ax_buf_free(&buf);
    assert_int_equal(weights_load(b, fx->path), 0);
    for (int i = 0; i < 4; i++)
        assert_memory_equal(ir_at(a, i)->data, ir_at(b, i)->data, ir_nbytes(ir_at(a, i)));
    assert_string_equal(diagnostics(fx), "");
    ir_graph_free_nodes(a);
    ir_graph_free_nodes(b);
}

static void load_reports_every_mismatch(void **state)
{
    fixture *fx = *state;
    ir_graph *g = small_graph(fx);
    static const float w[6] = {1, 2, 3, 4, 5, 6}, v[3] = {1, 1, 1};
    static const int64_t tracked = 3;
    tf_tensor t[] = {
        {"0.weight", AXRT_F32, 2, {2, 3}, (const uint8_t *)w, sizeof w},
        {"bn.weight", AXRT_F32, 1, {3}, (const uint8_t *)v, sizeof v},
        {"foo", AXRT_F32, 1, {3}, (const uint8_t *)v, sizeof v},
        {"bn.num_batches_tracked", AXRT_I64, 0, {0}, (const uint8_t *)&tracked, sizeof tracked},
        {"bar.weight", AXRT_F32, 1, {3}, (const uint8_t *)v, sizeof v},
    };
    write_tensors(fx, t, 5);
    assert_int_equal(weights_load(g, fx->path), 5);
    const char *d = diagnostics(fx);
    char line[512];
    snprintf(line, sizeof line, "t.ax:1:1: error: tensor '0.weight' in %s has shape [2, 3] but "
             "the model expects [3, 2]", fx->path);
    assert_non_null(strstr(d, line));
    snprintf(line, sizeof line, "t.ax:2:1: error: missing tensor '0.bias' (Float32[3]) in %s",
             fx->path);
    assert_non_null(strstr(d, line));
    snprintf(line, sizeof line, "t.ax:4:1: error: missing tensor 'bn.running_var' "
             "(Float32[3]) in %s", fx->path);
    assert_non_null(strstr(d, line));
    snprintf(line, sizeof line, "t.ax: error: %s: unexpected tensor 'foo' (the model has no "
             "such parameter)", fx->path);
    assert_non_null(strstr(d, line));
    assert_non_null(strstr(d, "unexpected tensor 'bar.weight'"));
    assert_null(strstr(d, "num_batches_tracked"));
    assert_memory_equal(ir_at(g, 2)->data, v, sizeof v); /* the matching one is loaded */
    ir_graph_free_nodes(g);
}

/* An integer position_ids of 0..n-1 rows is ignored; any other content, or
 * a float tensor of that name, is an unexpected tensor. */
static void load_ignores_only_arange_position_ids(void **state)
{
    fixture *fx = *state;
    static const float w[6] = {1, 2, 3, 4, 5, 6}, v[3] = {1, 1, 1};
    static const int64_t arange[2][3] = {{0, 1, 2}, {0, 1, 2}}, other[3] = {0, 2, 1};
    static const int32_t arange32[3] = {0, 1, 2};
    tf_tensor t[] = {
        {"0.weight", AXRT_F32, 2, {3, 2}, (const uint8_t *)w, sizeof w},
        {"0.bias", AXRT_F32, 1, {3}, (const uint8_t *)v, sizeof v},
        {"bn.weight", AXRT_F32, 1, {3}, (const uint8_t *)v, sizeof v},
        {"bn.running_var", AXRT_F32, 1, {3}, (const uint8_t *)v, sizeof v},
        {"embeddings.position_ids", AXRT_I64, 2, {2, 3}, (const uint8_t *)arange, sizeof arange},
        {"position_ids", AXRT_I32, 1, {3}, (const uint8_t *)arange32, sizeof arange32},
        {"b.position_ids", AXRT_I64, 1, {3}, (const uint8_t *)other, sizeof other},
        {"c.position_ids", AXRT_F32, 1, {3}, (const uint8_t *)v, sizeof v},
        {"xposition_ids", AXRT_I32, 1, {3}, (const uint8_t *)arange32, sizeof arange32},
    };
    write_tensors(fx, t, 9);
    ir_graph *g = small_graph(fx);
    assert_int_equal(weights_load(g, fx->path), 3);
    const char *d = diagnostics(fx);
    assert_null(strstr(d, "'embeddings.position_ids'"));
    assert_null(strstr(d, "'position_ids'"));
    assert_non_null(strstr(d, "unexpected tensor 'b.position_ids'"));
    assert_non_null(strstr(d, "unexpected tensor 'c.position_ids'"));
    assert_non_null(strstr(d, "unexpected tensor 'xposition_ids'"));
    ir_graph_free_nodes(g);
}

static void load_converts_f64_to_f32(void **state)
{
    fixture *fx = *state;
    ir_graph *g = ir_graph_new(fx->ctx, "m", (ax_loc){1, 1, 1});
    int id = add_param(g, "fc.weight", IR_PARAM_GLOROT, 2, (int64_t[]){2, 2}, 1);
    static const double d[4] = {0.1, -2.5, 1e-3, 3.0e10};
    tf_tensor t = {"fc.weight", AXRT_F64, 2, {2, 2}, (const uint8_t *)d, sizeof d};
    write_tensors(fx, &t, 1);
    assert_int_equal(weights_load(g, fx->path), 0);
    const float *f = ir_at(g, id)->data;
    for (int i = 0; i < 4; i++) assert_float_equal(f[i], (float)d[i], 0);
    ir_graph_free_nodes(g);
}

static void load_unreadable_and_malformed_files(void **state)
{
    fixture *fx = *state;
    ir_graph *g = small_graph(fx);
    /* an I/O error: no diagnostic, the driver reports it (exit 2) */
    errno = 0;
    assert_int_equal(weights_load(g, "/nonexistent/w.safetensors"), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(diagnostics(fx), "");
    FILE *f = fopen(fx->path, "wb");
    fputs("not a safetensors file", f);
    fclose(f);
    assert_int_equal(weights_load(g, fx->path), 1);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "t.ax: error: %s: ", fx->path);
    assert_non_null(strstr(diagnostics(fx), prefix));
    ir_graph_free_nodes(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(init_matches_documented_algorithm, setup, teardown),
        cmocka_unit_test_setup_teardown(init_is_deterministic_and_per_name, setup, teardown),
        cmocka_unit_test_setup_teardown(init_glorot_bounds_zeros_ones, setup, teardown),
        cmocka_unit_test_setup_teardown(init_in_half_precision, setup, teardown),
        cmocka_unit_test_setup_teardown(save_then_load_round_trips, setup, teardown),
        cmocka_unit_test_setup_teardown(load_reports_every_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(load_ignores_only_arange_position_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(load_converts_f64_to_f32, setup, teardown),
        cmocka_unit_test_setup_teardown(load_unreadable_and_malformed_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
