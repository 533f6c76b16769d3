/* test_interp.c — the reference interpreter against PyTorch.
 *
 * tests/unit/interp_ref.py (run once, through $PYTHON, at group setup) prints
 * random inputs, parameters and torch's float64 results; each test builds the
 * same graph by hand (shapes, attrs and dtypes set directly, as pass_shape and
 * pass_dtype would), runs ir_interp_run and compares.  The script is found
 * through $AXC_ROOT (set by tests/run.sh) or else relative to the working
 * directory (the repository root under make). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_interp.h"

/* ---- references --------------------------------------------------------- */

typedef struct ref_tensor {
    char *name;
    int rank;
    int64_t shape[IR_MAX_RANK];
    int64_t numel;
    double *data;
} ref_tensor;

typedef struct ref_table {
    ref_tensor *tensors;
    int count, cap;
} ref_table;

/* Parses one line "NAME RANK DIM... VALUE..." into table; false if malformed. */
static bool parse_ref_line(ref_table *table, char *line)
{
    char *save = NULL, *name = strtok_r(line, " \n", &save);
    char *tok = name ? strtok_r(NULL, " \n", &save) : NULL;
    if (!tok || atoi(tok) < 0 || atoi(tok) > IR_MAX_RANK)
        return false;
    ref_tensor t = {strdup(name), atoi(tok), {0}, 1, NULL};
    for (int d = 0; d < t.rank; d++) {
        if (!(tok = strtok_r(NULL, " \n", &save)))
            return false;
        t.numel *= t.shape[d] = atoll(tok);
    }
    t.data = malloc((size_t)t.numel * sizeof *t.data);
    for (int64_t i = 0; i < t.numel; i++) {
        if (!(tok = strtok_r(NULL, " \n", &save)))
            return false;
        t.data[i] = strtod(tok, NULL);
    }
    if (table->count == table->cap) {
        table->cap = table->cap ? 2 * table->cap : 64;
        table->tensors = realloc(table->tensors, (size_t)table->cap * sizeof t);
    }
    table->tensors[table->count++] = t;
    return true;
}

static int load_refs(void **state)
{
    const char *python = getenv("PYTHON"), *root = getenv("AXC_ROOT");
    char command[4096];
    snprintf(command, sizeof command, "\"%s\" \"%s%stests/unit/interp_ref.py\"",
             python ? python : "/usr/bin/python3", root ? root : "", root ? "/" : "");
    FILE *pipe = popen(command, "r");
    if (!pipe)
        return -1;
    ref_table *table = calloc(1, sizeof *table);
    size_t size = 1 << 20;
    char *line = malloc(size);
    bool ok = true;
    while (ok && fgets(line, (int)size, pipe))
        ok = parse_ref_line(table, line);
    free(line);
    *state = table;
    return pclose(pipe) == 0 && ok && table->count > 0 ? 0 : -1;
}

static int free_refs(void **state)
{
    ref_table *table = *state;
    for (int i = 0; table && i < table->count; i++) {
        free(table->tensors[i].name);
        free(table->tensors[i].data);
    }
    if (table)
        free(table->tensors);
    free(table);
    return 0;
}

static const ref_tensor *ref(void **state, const char *name)
{
    const ref_table *table = *state;
    for (int i = 0; i < table->count; i++)
        if (strcmp(table->tensors[i].name, name) == 0)
            return &table->tensors[i];
    fail_msg("no reference tensor %s", name);
    return NULL;
}

/* |got - want| <= tol * (1 + |want|) everywhere (tol 0: bitwise equal values). */
static void expect_close(const double *got, const ref_tensor *want, double tol)
{
    for (int64_t i = 0; i < want->numel; i++) {
        double w = want->data[i];
        bool same = got[i] == w || fabs(got[i] - w) <= tol * (1 + fabs(w));
        if (!same)
            fail_msg("%s[%lld]: got %.17g, want %.17g", want->name, (long long)i, got[i], w);
    }
}

/* ---- graphs built by hand ---------------------------------------------- */

typedef struct test_graph {
    ax_ctx *ctx;
    ir_graph *g;
    const void *inputs[IR_SRC_ROOM];
} test_graph;

static test_graph tg_new(void)
{
    test_graph t = {ax_ctx_new(), NULL, {NULL}};
    t.g = ir_graph_new(t.ctx, "test", ax_noloc());
    t.g->dtype = AXRT_F64;
    return t;
}

static void tg_free(test_graph *t)
{
    ir_graph_free_nodes(t->g);
    ax_ctx_free(t->ctx);
}

/* A node of op with dtype and shape; attrs are ir_add's defaults. */
static int tg_node(test_graph *t, ir_op op, const int *src, int nsrc, axrt_dtype dtype,
                   int rank, const int64_t *shape)
{
    int id = ir_add(t->g, op, src, nsrc, ax_noloc());
    ir_node *n = ir_at(t->g, id);
    n->dtype = dtype;
    n->rank = rank;
    if (rank > 0)
        memcpy(n->shape, shape, (size_t)rank * sizeof *shape);
    return id;
}

/* A Float64 node shaped like reference r. */
static int tg_op(test_graph *t, ir_op op, const int *src, int nsrc, const ref_tensor *r)
{
    return tg_node(t, op, src, nsrc, AXRT_F64, r->rank, r->shape);
}

static int tg_input_typed(test_graph *t, axrt_dtype dtype, const ref_tensor *r, const void *data)
{
    int id = tg_node(t, IR_OP_input, NULL, 0, dtype, r->rank, r->shape);
    t->inputs[t->g->ninputs] = data;
    ir_add_input(t->g, id);
    return id;
}

static int tg_input(test_graph *t, const ref_tensor *r)
{
    return tg_input_typed(t, AXRT_F64, r, r->data);
}

static int tg_param(test_graph *t, const ref_tensor *r)
{
    int id = tg_op(t, IR_OP_param, NULL, 0, r);
    ir_at(t->g, id)->data = r->data;
    ir_at(t->g, id)->name = r->name;
    return id;
}

static int tg_scalar(test_graph *t, double value)
{
    int id = tg_node(t, IR_OP_scalar, NULL, 0, AXRT_F64, 0, NULL);
    ir_at(t->g, id)->attrs.scalar = value;
    return id;
}

static void tg_output(test_graph *t, int id)
{
    ir_add_output(t->g, id, NULL);
}

/* Runs t with node id as its only (Float64) output; compares with want. */
static void tg_expect(test_graph *t, int id, const ref_tensor *want, double tol)
{
    tg_output(t, id);
    double *got = calloc((size_t)want->numel, sizeof *got);
    void *outputs[1] = {got};
    assert_int_equal(ir_interp_run(t->g, t->inputs, outputs), 0);
    expect_close(got, want, tol);
    free(got);
}

#define TOL 1e-12

/* ---- elementwise -------------------------------------------------------- */

static void test_unary_ops(void **state)
{
    static const struct {
        ir_op op;
        const char *name;
        bool positive_input;
        double alpha;
    } cases[] = {
        {IR_OP_relu, "relu", false, 0},     {IR_OP_relu6, "relu6", false, 0},
        {IR_OP_sigmoid, "sigmoid", false, 0}, {IR_OP_tanh, "tanh", false, 0},
        {IR_OP_swish, "swish", false, 0},   {IR_OP_gelu, "gelu", false, 0},
        {IR_OP_gelu_tanh, "gelu_tanh", false, 0}, {IR_OP_softplus, "softplus", false, 0},
        {IR_OP_elu, "elu", false, 0.7},     {IR_OP_leaky_relu, "leaky_relu", false, 0.05},
        {IR_OP_exp, "exp", false, 0},       {IR_OP_log, "log", true, 0},
        {IR_OP_sqrt, "sqrt", true, 0},      {IR_OP_abs, "abs", false, 0},
        {IR_OP_neg, "neg", false, 0},       {IR_OP_erf, "erf", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "unary.%s", cases[i].name);
        test_graph t = tg_new();
        int x = tg_input(&t, ref(state, cases[i].positive_input ? "unary.xpos" : "unary.x"));
        int y = tg_op(&t, cases[i].op, &x, 1, ref(state, name));
        ir_at(t.g, y)->attrs.alpha = cases[i].alpha;
        tg_expect(&t, y, ref(state, name), TOL);
        tg_free(&t);
    }
}

/* Special values compared exactly: NaN where torch gives NaN, the sign of
 * a zero result as torch gives it, infinities as they are. */
static void test_unary_special_values(void **state)
{
    static const struct {
        ir_op op;
        const char *name;
        double alpha;
    } cases[] = {
        {IR_OP_relu, "relu", 0},       {IR_OP_relu6, "relu6", 0},     {IR_OP_sigmoid, "sigmoid", 0},
        {IR_OP_tanh, "tanh", 0},       {IR_OP_swish, "swish", 0},     {IR_OP_gelu, "gelu", 0},
        {IR_OP_gelu_tanh, "gelu_tanh", 0}, {IR_OP_softplus, "softplus", 0}, {IR_OP_elu, "elu", 0.7},
        {IR_OP_leaky_relu, "leaky_relu", 0.05}, {IR_OP_exp, "exp", 0}, {IR_OP_log, "log", 0},
        {IR_OP_sqrt, "sqrt", 0},       {IR_OP_abs, "abs", 0},         {IR_OP_neg, "neg", 0},
        {IR_OP_erf, "erf", 0},
    };
    const ref_tensor *x = ref(state, "unary_special.x");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "unary_special.%s", cases[i].name);
        const ref_tensor *want = ref(state, name);
        test_graph t = tg_new();
        int in = tg_input(&t, x);
        int y = tg_op(&t, cases[i].op, &in, 1, want);
        ir_at(t.g, y)->attrs.alpha = cases[i].alpha;
        double got[16];
        assert_true(want->numel <= 16);
        void *outputs[1] = {got};
        tg_output(&t, y);
        assert_int_equal(ir_interp_run(t.g, t.inputs, outputs), 0);
        for (int64_t k = 0; k < want->numel; k++) {
            double w = want->data[k], g = got[k];
            bool same = isnan(w) ? isnan(g) : g == w && signbit(g) == signbit(w);
            if (!same)
                fail_msg("%s(%.17g): got %.17g, torch gives %.17g", cases[i].name, x->data[k], g, w);
        }
        tg_free(&t);
    }
}

static void test_binary_broadcast(void **state)
{
    static const ir_op ops[] = {IR_OP_add, IR_OP_sub, IR_OP_mul, IR_OP_div};
    static const char *const names[] = {"binary.add", "binary.sub", "binary.mul", "binary.div"};
    test_graph t = tg_new();
    int ab[2] = {tg_input(&t, ref(state, "binary.a")), tg_input(&t, ref(state, "binary.b"))};
    double *got[4];
    void *outputs[4];
    for (int i = 0; i < 4; i++) {
        tg_output(&t, tg_op(&t, ops[i], ab, 2, ref(state, names[i])));
        outputs[i] = got[i] = calloc((size_t)ref(state, names[i])->numel, sizeof(double));
    }
    assert_int_equal(ir_interp_run(t.g, t.inputs, outputs), 0);
    for (int i = 0; i < 4; i++) {
        expect_close(got[i], ref(state, names[i]), TOL);
        free(got[i]);
    }
    tg_free(&t);
}

/* Rank-0 scalars broadcast from either side. */
static void test_binary_scalar(void **state)
{
    static const struct {
        ir_op op;
        double scalar;
        bool scalar_first;
        const char *name;
    } cases[] = {
        {IR_OP_add, 1.5, false, "binary.x_plus_1.5"},
        {IR_OP_mul, 2.0, true, "binary.2_times_x"},
        {IR_OP_div, 8.0, false, "binary.x_over_8"},
        {IR_OP_sub, 5.0, true, "binary.5_minus_x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_graph t = tg_new();
        int x = tg_input(&t, ref(state, "binary.a")), s = tg_scalar(&t, cases[i].scalar);
        int src[2] = {cases[i].scalar_first ? s : x, cases[i].scalar_first ? x : s};
        tg_expect(&t, tg_op(&t, cases[i].op, src, 2, ref(state, cases[i].name)),
                  ref(state, cases[i].name), TOL);
        tg_free(&t);
    }
}

/* ---- dtypes -------------------------------------------------------------- */

/* Float64 input cast to dtype, that node the output; returns the raw output. */
static void *run_cast(void **state, axrt_dtype dtype, size_t elem_size)
{
    const ref_tensor *x = ref(state, "cast.x");
    test_graph t = tg_new();
    int in = tg_input(&t, x);
    tg_output(&t, tg_node(&t, IR_OP_cast, &in, 1, dtype, x->rank, x->shape));
    void *out = calloc((size_t)x->numel, elem_size);
    void *outputs[1] = {out};
    assert_int_equal(ir_interp_run(t.g, t.inputs, outputs), 0);
    tg_free(&t);
    return out;
}

static void test_cast_to_float_types(void **state)
{
    const ref_tensor *f32 = ref(state, "cast.f32"), *f16 = ref(state, "cast.f16_bits");
    const ref_tensor *bf16 = ref(state, "cast.bf16_bits"), *i32 = ref(state, "cast.i32");
    float *got_f32 = run_cast(state, AXRT_F32, sizeof(float));
    uint16_t *got_f16 = run_cast(state, AXRT_F16, sizeof(uint16_t));
    uint16_t *got_bf16 = run_cast(state, AXRT_BF16, sizeof(uint16_t));
    int32_t *got_i32 = run_cast(state, AXRT_I32, sizeof(int32_t));
    for (int64_t i = 0; i < f32->numel; i++) {
        assert_true(got_f32[i] == (float)f32->data[i]);
        assert_int_equal(got_f16[i], (uint16_t)(int16_t)f16->data[i]);
        assert_int_equal(got_bf16[i], (uint16_t)(int16_t)bf16->data[i]);
        assert_int_equal(got_i32[i], (int32_t)i32->data[i]);
    }
    free(got_f32), free(got_f16), free(got_bf16), free(got_i32);
}

/* Float64 input -> cast -> Float32 compute: the cast rounds through float. */
static void test_cast_rounds_before_compute(void **state)
{
    const ref_tensor *x = ref(state, "cast.x"), *want = ref(state, "cast.f32_times_3");
    test_graph t = tg_new();
    int in = tg_input(&t, x);
    int src[2] = {tg_node(&t, IR_OP_cast, &in, 1, AXRT_F32, x->rank, x->shape), 0};
    src[1] = tg_scalar(&t, 3.0);
    tg_output(&t, tg_node(&t, IR_OP_mul, src, 2, AXRT_F32, x->rank, x->shape));
    float *got = calloc((size_t)x->numel, sizeof *got);
    void *outputs[1] = {got};
    assert_int_equal(ir_interp_run(t.g, t.inputs, outputs), 0);
    for (int64_t i = 0; i < x->numel; i++)
        assert_true(got[i] == (float)want->data[i]);
    free(got);
    tg_free(&t);
}

/* An input of dtype holding data, cast to Float64: must equal want exactly. */
static void expect_widened(void **state, axrt_dtype dtype, const void *data, const char *want)
{
    const ref_tensor *w = ref(state, want);
    test_graph t = tg_new();
    int in = tg_input_typed(&t, dtype, w, data);
    tg_expect(&t, tg_op(&t, IR_OP_cast, &in, 1, w), w, 0);
    tg_free(&t);
}

static void test_inputs_widen_exactly(void **state)
{
    const ref_tensor *f16 = ref(state, "cast.f16_bits"), *bf16 = ref(state, "cast.bf16_bits");
    const ref_tensor *f32 = ref(state, "cast.in_f32"), *i8 = ref(state, "cast.in_i8");
    const ref_tensor *i64 = ref(state, "cast.in_i64");
    uint16_t f16_bits[64], bf16_bits[64];
    float f32_data[64];
    int8_t i8_data[8];
    int64_t i64_data[8];
    for (int64_t i = 0; i < f16->numel; i++) {
        f16_bits[i] = (uint16_t)(int16_t)f16->data[i];
        bf16_bits[i] = (uint16_t)(int16_t)bf16->data[i];
        f32_data[i] = (float)f32->data[i];
    }
    for (int64_t i = 0; i < i8->numel; i++)
        i8_data[i] = (int8_t)i8->data[i];
    for (int64_t i = 0; i < i64->numel; i++)
        i64_data[i] = (int64_t)i64->data[i];
    expect_widened(state, AXRT_F16, f16_bits, "cast.in_f16");
    expect_widened(state, AXRT_BF16, bf16_bits, "cast.in_bf16");
    expect_widened(state, AXRT_F32, f32_data, "cast.in_f32");
    expect_widened(state, AXRT_I8, i8_data, "cast.in_i8");
    expect_widened(state, AXRT_I64, i64_data, "cast.in_i64");
}

/* ---- reductions, softmax, data movement ---------------------------------- */

/* x (Float64 input named case.x... given) -> op(axis) compared with want. */
static void expect_axis_op(void **state, const char *input, ir_op op, int axis, const char *want)
{
    test_graph t = tg_new();
    int x = tg_input(&t, ref(state, input));
    int y = tg_op(&t, op, &x, 1, ref(state, want));
    ir_at(t.g, y)->attrs.axis = axis;
    tg_expect(&t, y, ref(state, want), TOL);
    tg_free(&t);
}

static void test_reductions(void **state)
{
    expect_axis_op(state, "reduce.x", IR_OP_sum, 1, "reduce.sum1");
    expect_axis_op(state, "reduce.x", IR_OP_mean, 2, "reduce.mean2");
    expect_axis_op(state, "reduce.x", IR_OP_maximum, 0, "reduce.maximum0");
}

static void test_softmax(void **state)
{
    expect_axis_op(state, "reduce.x", IR_OP_softmax, 1, "reduce.softmax1");
    expect_axis_op(state, "reduce.x", IR_OP_log_softmax, 2, "reduce.log_softmax2");
}

static void test_reshape_transpose(void **state)
{
    test_graph t = tg_new();
    int x = tg_input(&t, ref(state, "shape.x"));
    tg_expect(&t, tg_op(&t, IR_OP_reshape, &x, 1, ref(state, "shape.reshape")),
              ref(state, "shape.reshape"), 0);
    tg_free(&t);

    t = tg_new();
    x = tg_input(&t, ref(state, "shape.x"));
    int y = tg_op(&t, IR_OP_transpose, &x, 1, ref(state, "shape.transpose"));
    ir_attrs *at = &ir_at(t.g, y)->attrs;
    at->nperm = 3, at->perm[0] = 2, at->perm[1] = 0, at->perm[2] = 1;
    tg_expect(&t, y, ref(state, "shape.transpose"), 0);
    tg_free(&t);
}

static void test_concat_three(void **state)
{
    test_graph t = tg_new();
    int src[3] = {tg_input(&t, ref(state, "shape.a")), tg_input(&t, ref(state, "shape.b")),
                  tg_input(&t, ref(state, "shape.c"))};
    int y = tg_op(&t, IR_OP_concat, src, 3, ref(state, "shape.concat"));
    ir_at(t.g, y)->attrs.axis = 1;
    tg_expect(&t, y, ref(state, "shape.concat"), 0);
    tg_free(&t);
}

/* ---- linear algebra ------------------------------------------------------- */

static void test_matmul(void **state)
{
    static const char *const cases[] = {"matmul_batched", "matmul_vec_mat", "matmul_mat_vec",
                                        "matmul_dot"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char a[64], b[64], y[64];
        snprintf(a, sizeof a, "%s.a", cases[i]);
        snprintf(b, sizeof b, "%s.b", cases[i]);
        snprintf(y, sizeof y, "%s.y", cases[i]);
        test_graph t = tg_new();
        int src[2] = {tg_input(&t, ref(state, a)), tg_input(&t, ref(state, b))};
        tg_expect(&t, tg_op(&t, IR_OP_matmul, src, 2, ref(state, y)), ref(state, y), TOL);
        tg_free(&t);
    }
}

static void test_dense(void **state)
{
    test_graph t = tg_new();
    int src[3] = {tg_input(&t, ref(state, "dense.x")), tg_param(&t, ref(state, "dense.w")),
                  tg_param(&t, ref(state, "dense.b"))};
    tg_expect(&t, tg_op(&t, IR_OP_dense, src, 3, ref(state, "dense.y")), ref(state, "dense.y"),
              TOL);
    tg_free(&t);
}

/* No bias operand; gelu fused as the epilogue. */
static void test_dense_nobias_gelu_epilogue(void **state)
{
    test_graph t = tg_new();
    int src[3] = {tg_input(&t, ref(state, "dense.x")), tg_param(&t, ref(state, "dense.w")),
                  IR_NONE};
    int y = tg_op(&t, IR_OP_dense, src, 3, ref(state, "dense.y_nobias_gelu"));
    ir_at(t.g, y)->attrs.act = IR_OP_gelu;
    tg_expect(&t, y, ref(state, "dense.y_nobias_gelu"), TOL);
    tg_free(&t);
}

/* ---- normalisation --------------------------------------------------------- */

static void test_layernorm(void **state)
{
    test_graph t = tg_new();
    int src[3] = {tg_input(&t, ref(state, "layernorm.x")), tg_param(&t, ref(state, "layernorm.w")),
                  tg_param(&t, ref(state, "layernorm.b"))};
    int y = tg_op(&t, IR_OP_layernorm, src, 3, ref(state, "layernorm.y"));
    ir_at(t.g, y)->attrs.eps = 1e-5;
    tg_expect(&t, y, ref(state, "layernorm.y"), TOL);
    tg_free(&t);
}

static void test_batchnorm_relu_epilogue(void **state)
{
    static const char *const params[] = {"batchnorm.w", "batchnorm.b", "batchnorm.mean",
                                         "batchnorm.var"};
    test_graph t = tg_new();
    int src[5] = {tg_input(&t, ref(state, "batchnorm.x"))};
    for (int i = 0; i < 4; i++)
        src[i + 1] = tg_param(&t, ref(state, params[i]));
    int y = tg_op(&t, IR_OP_batchnorm, src, 5, ref(state, "batchnorm.y_relu"));
    ir_at(t.g, y)->attrs.eps = 1e-3;
    ir_at(t.g, y)->attrs.act = IR_OP_relu;
    tg_expect(&t, y, ref(state, "batchnorm.y_relu"), TOL);
    tg_free(&t);
}

/* ---- convolution and pooling ------------------------------------------------ */

static void set_window(ir_attrs *at, int kh, int kw, int sh, int sw, const int pad[4])
{
    at->kernel[0] = kh, at->kernel[1] = kw;
    at->stride[0] = sh, at->stride[1] = sw;
    memcpy(at->pad, pad, sizeof at->pad);
}

/* stride (2,1), dilation (1,2), pad top 1 left 0 bottom 2 right 1, groups 2. */
static void test_conv_strided_dilated_grouped(void **state)
{
    static const int pad[4] = {1, 0, 2, 1};
    test_graph t = tg_new();
    int src[3] = {tg_input(&t, ref(state, "conv.x")), tg_param(&t, ref(state, "conv.w")),
                  tg_param(&t, ref(state, "conv.b"))};
    int y = tg_op(&t, IR_OP_conv, src, 3, ref(state, "conv.y"));
    ir_attrs *at = &ir_at(t.g, y)->attrs;
    set_window(at, 3, 2, 2, 1, pad);
    at->dilation[0] = 1, at->dilation[1] = 2, at->groups = 2;
    tg_expect(&t, y, ref(state, "conv.y"), TOL);
    tg_free(&t);
}

static void test_depthwise_conv_nobias_relu6(void **state)
{
    static const int pad[4] = {1, 1, 1, 1};
    test_graph t = tg_new();
    int src[3] = {tg_input(&t, ref(state, "dwconv.x")), tg_param(&t, ref(state, "dwconv.w")),
                  IR_NONE};
    int y = tg_op(&t, IR_OP_conv, src, 3, ref(state, "dwconv.y_relu6"));
    ir_attrs *at = &ir_at(t.g, y)->attrs;
    set_window(at, 3, 3, 1, 1, pad);
    at->groups = 3, at->act = IR_OP_relu6;
    tg_expect(&t, y, ref(state, "dwconv.y_relu6"), TOL);
    tg_free(&t);
}

static void expect_pool(void **state, ir_op op, int k, const int pad[4], const char *want)
{
    test_graph t = tg_new();
    int x = tg_input(&t, ref(state, "pool.x"));
    int y = tg_op(&t, op, &x, 1, ref(state, want));
    set_window(&ir_at(t.g, y)->attrs, k, k, 2, 2, pad);
    tg_expect(&t, y, ref(state, want), TOL);
    tg_free(&t);
}

/* Windows overhanging the edges: -inf padding for max, zeros counted for mean. */
static void test_pools(void **state)
{
    static const int all_sides[4] = {1, 1, 1, 1}, bottom_right[4] = {0, 0, 1, 1};
    expect_pool(state, IR_OP_maxpool, 3, all_sides, "pool.max");
    expect_pool(state, IR_OP_meanpool, 3, all_sides, "pool.mean");
    expect_pool(state, IR_OP_maxpool, 2, bottom_right, "pool.max_asym");
    expect_pool(state, IR_OP_meanpool, 2, bottom_right, "pool.mean_asym");
}

static void test_globalmeanpool(void **state)
{
    test_graph t = tg_new();
    int x = tg_input(&t, ref(state, "gpool.x"));
    tg_expect(&t, tg_op(&t, IR_OP_globalmeanpool, &x, 1, ref(state, "gpool.y")),
              ref(state, "gpool.y"), TOL);
    tg_free(&t);
}

/* ---- attention --------------------------------------------------------------- */

/* Param named case.suffix, or IR_NONE when the reference has no such tensor. */
static int optional_param(void **state, test_graph *t, const char *name)
{
    const ref_table *table = *state;
    for (int i = 0; i < table->count; i++)
        if (strcmp(table->tensors[i].name, name) == 0)
            return tg_param(t, &table->tensors[i]);
    return IR_NONE;
}

static void expect_mha(void **state, const char *c, bool self_attention, int heads, bool causal)
{
    static const char *const params[4] = {"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                          "out_proj.bias"};
    char name[96];
    test_graph t = tg_new();
    int src[8];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "%s.%c", c, "qkv"[i]);
        src[i] = self_attention && i > 0 ? src[0] : tg_input(&t, ref(state, name));
    }
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%s", c, params[i]);
        src[3 + i] = optional_param(state, &t, name);
    }
    snprintf(name, sizeof name, "%s.y", c);
    src[7] = IR_NONE; /* no key mask */
    int y = tg_op(&t, IR_OP_mha, src, 8, ref(state, name));
    ir_at(t.g, y)->attrs.heads = heads;
    ir_at(t.g, y)->attrs.causal = causal;
    tg_expect(&t, y, ref(state, name), TOL);
    tg_free(&t);
}

/* Query length 3, key length 5, causal: query i sees keys 0..i. */
static void test_mha_causal_cross(void **state)
{
    expect_mha(state, "mha_causal", false, 2, true);
}

static void test_mha_self_nobias(void **state)
{
    expect_mha(state, "mha_self", true, 3, false);
}

/* ---- embedding ----------------------------------------------------------------- */

/* Embedding with indices of dtype idx_dtype (idx holds them); returns the status. */
static int run_embedding(void **state, axrt_dtype idx_dtype, const void *idx, double *got)
{
    const ref_tensor *w = ref(state, "embedding.w"), *want = ref(state, "embedding.y");
    test_graph t = tg_new();
    int src[2] = {tg_input_typed(&t, idx_dtype, ref(state, "embedding.idx"), idx),
                  tg_param(&t, w)};
    tg_output(&t, tg_op(&t, IR_OP_embedding, src, 2, want));
    void *outputs[1] = {got};
    int status = ir_interp_run(t.g, t.inputs, outputs);
    tg_free(&t);
    return status;
}

static void test_embedding_index_types(void **state)
{
    const ref_tensor *idx = ref(state, "embedding.idx"), *want = ref(state, "embedding.y");
    int64_t i64[6];
    int32_t i32[6];
    int8_t i8[6];
    for (int i = 0; i < 6; i++)
        i64[i] = i32[i] = i8[i] = (int8_t)idx->data[i];
    double *got = calloc((size_t)want->numel, sizeof *got);
    assert_int_equal(run_embedding(state, AXRT_I64, i64, got), 0);
    expect_close(got, want, 0);
    memset(got, 0, (size_t)want->numel * sizeof *got);
    assert_int_equal(run_embedding(state, AXRT_I32, i32, got), 0);
    expect_close(got, want, 0);
    memset(got, 0, (size_t)want->numel * sizeof *got);
    assert_int_equal(run_embedding(state, AXRT_I8, i8, got), 0);
    expect_close(got, want, 0);
    free(got);
}

static void test_embedding_out_of_range_fails(void **state)
{
    int64_t past_end[6] = {0, 1, 2, 3, 4, 7}, negative[6] = {0, -1, 2, 3, 4, 5};
    double got[6 * 4];
    assert_int_equal(run_embedding(state, AXRT_I64, past_end, got), -1);
    assert_int_equal(run_embedding(state, AXRT_I64, negative, got), -1);
}

/* Dead nodes are never evaluated, and neither is a node whose only reader
 * is dead: both would fail here, being embeddings with out-of-range indices. */
static void test_dead_nodes_skipped(void **state)
{
    const ref_tensor *w = ref(state, "embedding.w"), *want = ref(state, "embedding.y");
    int64_t bad[6] = {9, 9, 9, 9, 9, 9};
    test_graph t = tg_new();
    int src[2] = {tg_input_typed(&t, AXRT_I64, ref(state, "embedding.idx"), bad),
                  tg_param(&t, w)};
    int dead = tg_op(&t, IR_OP_embedding, src, 2, want);
    int read_only_by_dead = tg_op(&t, IR_OP_embedding, src, 2, want);
    int dead_reader = tg_op(&t, IR_OP_relu, &read_only_by_dead, 1, want);
    ir_at(t.g, dead)->dead = ir_at(t.g, dead_reader)->dead = true;
    tg_expect(&t, tg_op(&t, IR_OP_reshape, &src[1], 1, w), w, 0);
    tg_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_ops),
        cmocka_unit_test(test_unary_special_values),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_binary_scalar),
        cmocka_unit_test(test_cast_to_float_types),
        cmocka_unit_test(test_cast_rounds_before_compute),
        cmocka_unit_test(test_inputs_widen_exactly),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_reshape_transpose),
        cmocka_unit_test(test_concat_three),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_dense_nobias_gelu_epilogue),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_batchnorm_relu_epilogue),
        cmocka_unit_test(test_conv_strided_dilated_grouped),
        cmocka_unit_test(test_depthwise_conv_nobias_relu6),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_globalmeanpool),
        cmocka_unit_test(test_mha_causal_cross),
        cmocka_unit_test(test_mha_self_nobias),
        cmocka_unit_test(test_embedding_index_types),
        cmocka_unit_test(test_embedding_out_of_range_fails),
        cmocka_unit_test(test_dead_nodes_skipped),
    };
    return cmocka_run_group_tests(tests, load_refs, free_refs);
}
