/* test_codegen.c — the portable C backend and the runtime kernels, end to end.
 *
 * Each case builds a small graph by hand (ir_add), runs pass_shape,
 * pass_dtype and pass_memplan, fills inputs and parameters with fixed
 * pseudo-random values, emits C with cg_c_emit and then:
 *   - compiles it with gcc and clang (-std=c99 -Wall -Wextra -Wpedantic
 *     -Werror) and g++ (-x c++ -Werror), the three at once;
 *   - links gcc's object with the build's libaxrt.a (else the runtime
 *     sources, compiled once by the group setup) into a shared object,
 *     dlopens it and calls <name>_model.run;
 *   - compares every output with PyTorch, which a small Python driver
 *     (one process for all cases, started by the group setup) computes from
 *     the same inputs and parameters with the torch expression the case gives.
 * Environment: AXC_ROOT (repository root, default "."), AXC_BUILD (the
 * build whose lib/libaxrt.a is linked; optional), PYTHON (default
 * /usr/bin/python3), CC/CLANG/CXX compilers (default gcc, clang, g++). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cg_target.h"
#include "passes.h"

/* ---- building graphs ------------------------------------------------------ */

typedef struct model {
    ax_ctx *ctx;
    ir_graph *g;
    uint32_t rng;
    double input_scale;               /* inputs are uniform in [-scale, scale] */
    void *input_data[IR_SRC_ROOM];     /* preset input values, else random */
} model;

static double next_uniform(model *m)
{
    m->rng = m->rng * 1664525u + 1013904223u;
    return (double)(m->rng >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

static model model_new(const char *name, axrt_dtype dtype)
{
    model m = {0};
    m.ctx = ax_ctx_new();
    m.g = ir_graph_new(m.ctx, name, ax_noloc());
    m.g->target = &cg_target_get(IR_TARGET_c)->facts;
    m.g->dtype = dtype;
    m.rng = 12345;
    m.input_scale = 2.0;
    return m;
}

static void set_shape(ir_node *n, int rank, const int64_t *shape)
{
    n->rank = rank;
    memcpy(n->shape, shape, (size_t)rank * sizeof *shape);
}

static int input(model *m, const char *name, axrt_dtype dtype, int rank, const int64_t *shape)
{
    int id = ir_add(m->g, IR_OP_input, NULL, 0, ax_noloc());
    ir_node *n = ir_at(m->g, id);
    n->name = name;
    n->dtype = dtype;
    set_shape(n, rank, shape);
    ir_add_input(m->g, id);
    return id;
}

/* A parameter of the model dtype, uniform in [lo, hi]. */
static int param_in(model *m, const char *name, int rank, const int64_t *shape, double lo, double hi)
{
    int id = ir_add(m->g, IR_OP_param, NULL, 0, ax_noloc());
    ir_node *n = ir_at(m->g, id);
    n->name = name;
    n->dtype = m->g->dtype;
    set_shape(n, rank, shape);
    size_t count = (size_t)ir_numel(n);
    n->data = ax_alloc(m->ctx->arena, count * axrt_dtype_size(n->dtype));
    for (size_t i = 0; i < count; i++) {
        double v = lo + (next_uniform(m) + 1.0) / 2.0 * (hi - lo);
        if (n->dtype == AXRT_F64)
            ((double *)n->data)[i] = v;
        else
            ((float *)n->data)[i] = (float)v;
    }
    return id;
}

static int param(model *m, const char *name, int rank, const int64_t *shape)
{
    return param_in(m, name, rank, shape, -1.0, 1.0);
}

static int scalar(model *m, double value)
{
    int id = ir_add(m->g, IR_OP_scalar, NULL, 0, ax_noloc());
    ir_at(m->g, id)->attrs.scalar = value;
    ir_at(m->g, id)->dtype = m->g->dtype;
    return id;
}

static int op(model *m, ir_op o, int nsrc, const int *src)
{
    return ir_add(m->g, o, src, nsrc, ax_noloc());
}

static ir_attrs *attrs(model *m, int id) { return &ir_at(m->g, id)->attrs; }

static void output(model *m, const char *name, int id)
{
    ir_add_output(m->g, id, name);
}

/* ---- files and processes -------------------------------------------------- */

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void *read_file(const char *dir, const char *name, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("missing %s (did the PyTorch reference fail?)", path);
    void *data = malloc(len);
    assert_int_equal(fread(data, 1, len, f), len);
    fclose(f);
    return data;
}

static int shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int shell(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        print_message("command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* ---- the PyTorch reference ------------------------------------------------ */

/* One Python process for the whole group (PyTorch starts once, not once
 * per case): for each case directory read on stdin, it reads the manifest
 * (inputs and params by index, with names, dtypes and shapes), binds inputs
 * by name and params in dict P, runs the case's code, writes each named
 * output as raw little-endian values, and answers "ok" (or "error", the
 * traceback on stderr) on stdout. */
static const char reference_driver[] =
    "import sys, traceback, numpy as np, torch, torch.nn.functional as F\n"
    "types = {'F32': np.float32, 'F64': np.float64, 'F16': np.float16, 'I32': np.int32,\n"
    "         'I64': np.int64}\n"
    "def case(d):\n"
    "    env = {'torch': torch, 'F': F, 'np': np, 'P': {}}\n"
    "    outs = []\n"
    "    for line in open(d + '/manifest'):\n"
    "        kind, file, name, dtype, *dims = line.split()\n"
    "        if kind == 'out':\n"
    "            outs.append((file, name, dtype)); continue\n"
    "        a = np.fromfile(d + '/' + file, dtype=types[dtype]).reshape([int(x) for x in dims])\n"
    "        t = torch.from_numpy(a)\n"
    "        if kind == 'param': env['P'][name] = t\n"
    "        else: env[name] = t\n"
    "    exec(open(d + '/case.py').read(), env)\n"
    "    for file, name, dtype in outs:\n"
    "        v = torch.as_tensor(env[name]).detach().numpy().astype(types[dtype])\n"
    "        np.ascontiguousarray(v).tofile(d + '/' + file)\n"
    "for line in sys.stdin:\n"
    "    try:\n"
    "        case(line.rstrip('\\n'))\n"
    "        print('ok', flush=True)\n"
    "    except Exception:\n"
    "        traceback.print_exc()\n"
    "        print('error', flush=True)\n";

/* The reference process: its stdin (case directories) and stdout (answers). */
static FILE *reference_in, *reference_out;
static pid_t reference_pid;

static int start_reference(const char *dir)
{
    write_file(dir, "driver.py", reference_driver, strlen(reference_driver));
    char script[512];
    snprintf(script, sizeof script, "%s/driver.py", dir);
    int to[2], from[2];
    if (pipe(to) || pipe(from))
        return -1;
    reference_pid = fork();
    if (reference_pid < 0)
        return -1;
    if (reference_pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]), close(to[1]), close(from[0]), close(from[1]);
        const char *python = env_or("PYTHON", "/usr/bin/python3");
        execl(python, python, script, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    signal(SIGPIPE, SIG_IGN); /* a reference process that died fails the case, not the binary */
    fcntl(to[1], F_SETFD, FD_CLOEXEC); /* the compilers the cases start do not hold them */
    fcntl(from[0], F_SETFD, FD_CLOEXEC);
    reference_in = fdopen(to[1], "w");
    reference_out = fdopen(from[0], "r");
    return reference_in && reference_out ? 0 : -1;
}

static void stop_reference(void)
{
    if (reference_in)
        fclose(reference_in); /* end of input: the loop ends */
    if (reference_out)
        fclose(reference_out);
    if (reference_pid > 0)
        waitpid(reference_pid, NULL, 0);
}

static const char *const dtype_tag[AXRT_DTYPE_COUNT] = {"F32", "F64", "F16", "BF16", "I8", "I32", "I64"};

static void manifest_line(ax_buf *b, const char *kind, const char *file, const char *name,
                          const ir_node *n)
{
    ax_buf_printf(b, "%s %s %s %s", kind, file, name, dtype_tag[n->dtype]);
    for (int d = 0; d < n->rank; d++)
        ax_buf_printf(b, " %lld", (long long)n->shape[d]);
    ax_buf_puts(b, "\n");
}

static void fill_inputs(model *m, void **data)
{
    for (int i = 0; i < m->g->ninputs; i++) {
        const ir_node *n = ir_at(m->g, m->g->inputs[i]);
        size_t count = (size_t)ir_numel(n);
        data[i] = calloc(count ? count : 1, 8);
        if (m->input_data[i]) {
            memcpy(data[i], m->input_data[i], count * axrt_dtype_size(n->dtype));
            continue;
        }
        for (size_t k = 0; k < count; k++) {
            double v = next_uniform(m) * m->input_scale;
            if (n->dtype == AXRT_F64)
                ((double *)data[i])[k] = v;
            else
                ((float *)data[i])[k] = (float)v;
        }
    }
}

/* Writes inputs, params and the case code; runs torch. */
static void torch_reference(model *m, const char *dir, void **inputs, const char *code)
{
    ax_buf manifest = {0};
    char file[64];
    for (int i = 0; i < m->g->ninputs; i++) {
        const ir_node *n = ir_at(m->g, m->g->inputs[i]);
        snprintf(file, sizeof file, "in%d.bin", i);
        write_file(dir, file, inputs[i], ir_nbytes(n));
        manifest_line(&manifest, "in", file, n->name, n);
    }
    for (int id = 0; id < m->g->nnodes; id++) {
        const ir_node *n = ir_at(m->g, id);
        if (n->op != IR_OP_param)
            continue;
        snprintf(file, sizeof file, "p%d.bin", id);
        write_file(dir, file, n->data, ir_nbytes(n));
        manifest_line(&manifest, "param", file, n->name, n);
    }
    for (int i = 0; i < m->g->noutputs; i++) {
        snprintf(file, sizeof file, "expected%d.bin", i);
        manifest_line(&manifest, "out", file, m->g->output_names[i], ir_at(m->g, m->g->outputs[i]));
    }
    write_file(dir, "manifest", manifest.data, manifest.len);
    write_file(dir, "case.py", code, strlen(code));
    ax_buf_free(&manifest);
    char answer[64] = "";
    if (!reference_in || fprintf(reference_in, "%s\n", dir) < 0 || fflush(reference_in) ||
        !fgets(answer, sizeof answer, reference_out))
        fail_msg("the PyTorch reference process is gone (see its stderr above)");
    if (strcmp(answer, "ok\n"))
        fail_msg("the PyTorch reference failed for %s (traceback above)", dir);
}

/* ---- generating, compiling, loading ---------------------------------------- */

typedef struct built {
    char dir[256];
    void *so;
    const axrt_model *desc;
} built;

static void plan(model *m)
{
    assert_int_equal(pass_shape(m->g), 0);
    assert_int_equal(pass_dtype(m->g, ELTYPE_CONVERT), 0);
    assert_int_equal(pass_memplan(m->g), 0);
}

/* The group setup starts the PyTorch reference process and picks the
 * runtime every case's shared object links: the build's own libaxrt.a
 * (-fPIC; $AXC_BUILD/lib, as tests/run.sh sets it) when there is one, so
 * that no run compiles the runtime again; else its sources, compiled once
 * (-O1 -fPIC) into runtime_dir. */
static char runtime_dir[256];
static char runtime_link[4200];

static int compile_runtime(void **state)
{
    (void)state;
    char root[4096];
    snprintf(runtime_dir, sizeof runtime_dir, "%s/axc_codegen_rt_XXXXXX", env_or("TMPDIR", "/tmp"));
    if (!mkdtemp(runtime_dir) || !realpath(env_or("AXC_ROOT", "."), root))
        return -1;
    if (start_reference(runtime_dir))
        return -1;
    const char *build = getenv("AXC_BUILD");
    if (build && *build) {
        snprintf(runtime_link, sizeof runtime_link, "%s/lib/libaxrt.a", build);
        if (access(runtime_link, R_OK) == 0)
            return 0;
    }
    snprintf(runtime_link, sizeof runtime_link, "%s/*.o", runtime_dir);
    return shell("cd %s && %s -std=c99 -O1 -fPIC -I%s/runtime -c %s/runtime/*.c", runtime_dir,
                 env_or("CC", "gcc"), root, root);
}

static int remove_runtime(void **state)
{
    (void)state;
    stop_reference();
    return shell("rm -rf %s", runtime_dir);
}

/* Emits the model and checks the three strict compiles, run at once: gcc and
 * clang as C99, g++ as C++.  gcc's object (-O1 -fPIC) is the one linked.
 * Under make test-asan (AXC_TEST_SANITIZED=1) clang and g++ are left out:
 * no code of ours runs in them, and make test compiles the same C with them. */
static void emit_and_compile(model *m, built *b)
{
    ax_buf c = {0}, h = {0};
    ir_graph *models[1] = {m->g};
    char name[128];
    cg_request req = {.models = models, .nmodels = 1, .source_name = "test.ax"};
    snprintf(name, sizeof name, "%s.h", m->g->name);
    req.header_name = name;
    assert_int_equal(cg_c_emit(&req, &c, &h), 0);
    write_file(b->dir, name, h.data, h.len);
    snprintf(name, sizeof name, "%s.c", m->g->name);
    write_file(b->dir, name, c.data, c.len);
    ax_buf_free(&c);
    ax_buf_free(&h);
    char root[4096];
    assert_non_null(realpath(env_or("AXC_ROOT", "."), root)); /* the compiles run elsewhere */
    const char *strict = "-std=c99 -Wall -Wextra -Wpedantic -Werror";
    const bool sanitized = !strcmp(env_or("AXC_TEST_SANITIZED", ""), "1");
    assert_int_equal(shell("cd %s && { %s %s -O1 -fPIC -I%s/runtime -c %s -o gcc.o & gcc=$!; "
                           "%s %s -I%s/runtime -c %s -o clang.o & clang=$!; "
                           "%s -Wall -Wextra -Werror -x c++ -I%s/runtime -c %s -o cxx.o & cxx=$!; "
                           "wait $gcc && wait $clang && wait $cxx; }",
                           b->dir, env_or("CC", "gcc"), strict, root, name,
                           sanitized ? "true" : env_or("CLANG", "clang"), strict, root, name,
                           sanitized ? "true" : env_or("CXX", "g++"), root, name), 0);
    assert_int_equal(shell("cd %s && %s -shared gcc.o %s -o model.so -lm -lpthread", b->dir,
                           env_or("CC", "gcc"), runtime_link), 0);
}

static built build(model *m)
{
    built b = {{0}, NULL, NULL};
    snprintf(b.dir, sizeof b.dir, "%s/axc_codegen_XXXXXX", env_or("TMPDIR", "/tmp"));
    assert_non_null(mkdtemp(b.dir));
    plan(m);
    emit_and_compile(m, &b);
    char path[300], symbol[160];
    snprintf(path, sizeof path, "%s/model.so", b.dir);
    b.so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!b.so)
        fail_msg("dlopen: %s", dlerror());
    snprintf(symbol, sizeof symbol, "%s_model", m->g->name);
    b.desc = dlsym(b.so, symbol);
    assert_non_null(b.desc);
    return b;
}

static void release(model *m, built *b)
{
    dlclose(b->so);
    shell("rm -rf %s", b->dir);
    ir_graph_free_nodes(m->g);
    ax_ctx_free(m->ctx);
}

/* ---- comparing ------------------------------------------------------------- */

static double value_at(const void *data, axrt_dtype dtype, size_t i)
{
    return dtype == AXRT_F64 ? ((const double *)data)[i] : ((const float *)data)[i];
}

static void compare_output(const char *name, const void *got, const void *want, axrt_dtype dtype,
                           size_t count)
{
    const double tol = dtype == AXRT_F64 ? 1e-10 : 2e-5;
    int bad = 0;
    for (size_t i = 0; i < count; i++) {
        double g = value_at(got, dtype, i), w = value_at(want, dtype, i);
        bool both_nan = isnan(g) && isnan(w);
        bool same_inf = isinf(g) && isinf(w) && (g > 0) == (w > 0);
        if (both_nan || same_inf || fabs(g - w) <= tol + tol * fabs(w))
            continue;
        if (bad++ < 5)
            print_message("%s[%zu]: got %.9g, PyTorch %.9g\n", name, i, g, w);
    }
    if (bad)
        fail_msg("%s: %d of %zu values differ from PyTorch", name, bad, count);
}

/* The whole round trip: plan, emit, compile, run, compare with the torch
 * code, which sees inputs by name and params in P and must bind every
 * output name.  Runs twice: with a caller arena and with NULL. */
static void check_against_torch(model *m, const char *torch_code)
{
    built b = build(m);
    void *inputs[IR_SRC_ROOM], *outputs[IR_SRC_ROOM];
    fill_inputs(m, inputs);
    torch_reference(m, b.dir, inputs, torch_code);
    void *arena = aligned_alloc(64, b.desc->arena_bytes + 64);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < m->g->noutputs; i++)
            outputs[i] = calloc((size_t)ir_numel(ir_at(m->g, m->g->outputs[i])), 8);
        assert_int_equal(b.desc->run((const void *const *)inputs, outputs, pass ? NULL : arena), 0);
        for (int i = 0; i < m->g->noutputs; i++) {
            const ir_node *n = ir_at(m->g, m->g->outputs[i]);
            char file[64];
            snprintf(file, sizeof file, "expected%d.bin", i);
            void *want = read_file(b.dir, file, ir_nbytes(n));
            compare_output(m->g->output_names[i], outputs[i], want, n->dtype, (size_t)ir_numel(n));
            free(want);
            free(outputs[i]);
        }
    }
    free(arena);
    for (int i = 0; i < m->g->ninputs; i++)
        free(inputs[i]);
    release(m, &b);
}

#define SHAPE(...) (const int64_t[]){__VA_ARGS__}
#define NSRC(...) (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)), (const int[]){__VA_ARGS__}

/* ---- cases ------------------------------------------------------------------ */

static void test_mlp(void **state)
{
    (void)state;
    model m = model_new("mlp", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 2, SHAPE(3, 20));
    int w0 = param(&m, "0.weight", 2, SHAPE(16, 20));
    int b0 = param(&m, "0.bias", 1, SHAPE(16));
    int h = op(&m, IR_OP_dense, NSRC(x, w0, b0));
    attrs(&m, h)->act = IR_OP_relu; /* fused epilogue */
    int w1 = param(&m, "1.weight", 2, SHAPE(10, 16));
    int y = op(&m, IR_OP_dense, NSRC(h, w1, IR_NONE));
    int s = op(&m, IR_OP_softmax, NSRC(y));
    attrs(&m, s)->axis = -1;
    output(&m, "out0", s);
    check_against_torch(&m, "out0 = torch.softmax(F.linear(F.relu(F.linear(x, P['0.weight'], "
                            "P['0.bias'])), P['1.weight']), -1)");
}

static void test_unary(void **state)
{
    (void)state;
    static const ir_op ops[] = {IR_OP_relu, IR_OP_relu6, IR_OP_sigmoid, IR_OP_tanh,
                                IR_OP_swish, IR_OP_gelu, IR_OP_gelu_tanh, IR_OP_softplus,
                                IR_OP_elu, IR_OP_leaky_relu, IR_OP_exp, IR_OP_log,
                                IR_OP_sqrt, IR_OP_abs, IR_OP_neg, IR_OP_erf};
    static const char *const names[] = {"y_relu", "y_relu6", "y_sigmoid", "y_tanh", "y_swish",
                                        "y_gelu", "y_gelu_tanh", "y_softplus", "y_elu",
                                        "y_leaky_relu", "y_exp", "y_log", "y_sqrt", "y_abs",
                                        "y_neg", "y_erf"};
    model m = model_new("unary", AXRT_F32);
    m.input_scale = 25.0; /* reaches softplus' linear region and relu6's cap */
    int x = input(&m, "x", AXRT_F32, 2, SHAPE(4, 50));
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        int y = op(&m, ops[i], NSRC(x));
        attrs(&m, y)->alpha = ops[i] == IR_OP_elu ? 0.7 : 0.05;
        output(&m, names[i], y);
    }
    check_against_torch(&m,
                        "y_relu = F.relu(x); y_relu6 = F.relu6(x); y_sigmoid = torch.sigmoid(x)\n"
                        "y_tanh = torch.tanh(x); y_swish = F.silu(x); y_gelu = F.gelu(x)\n"
                        "y_gelu_tanh = F.gelu(x, approximate='tanh'); y_softplus = F.softplus(x)\n"
                        "y_elu = F.elu(x, 0.7); y_leaky_relu = F.leaky_relu(x, 0.05)\n"
                        "y_exp = torch.exp(x); y_log = torch.log(x); y_sqrt = torch.sqrt(x)\n"
                        "y_abs = torch.abs(x); y_neg = -x; y_erf = torch.erf(x)\n");
}

static void test_binary_broadcast(void **state)
{
    (void)state;
    model m = model_new("binary", AXRT_F32);
    int a = input(&m, "a", AXRT_F32, 3, SHAPE(2, 3, 4));
    int b = input(&m, "b", AXRT_F32, 2, SHAPE(3, 1));
    int c = input(&m, "c", AXRT_F32, 3, SHAPE(2, 1, 4));
    int d = input(&m, "d", AXRT_F32, 1, SHAPE(3));
    output(&m, "add_bcast", op(&m, IR_OP_add, NSRC(a, b)));
    output(&m, "sub_scalar", op(&m, IR_OP_sub, NSRC(a, scalar(&m, 0.5))));
    output(&m, "div_scalar_first", op(&m, IR_OP_div, NSRC(scalar(&m, 2.0), a)));
    output(&m, "mul_same", op(&m, IR_OP_mul, NSRC(a, a)));
    output(&m, "div_both", op(&m, IR_OP_div, NSRC(b, c)));
    output(&m, "outer", op(&m, IR_OP_mul, NSRC(b, d)));
    check_against_torch(&m, "add_bcast = a + b; sub_scalar = a - 0.5; div_scalar_first = 2.0 / a\n"
                            "mul_same = a * a; div_both = b / c; outer = b * d\n");
}

static void test_cast_inputs(void **state)
{
    (void)state;
    static const double wide[6] = {0.1, -2.5, 3.25, 1e-3, -7.0, 0.3333333333333333};
    model m = model_new("cast", AXRT_F32);
    int x = input(&m, "x", AXRT_F64, 2, SHAPE(2, 3));
    m.input_data[0] = (void *)wide;
    int w = param(&m, "0.weight", 2, SHAPE(2, 3));
    output(&m, "y", op(&m, IR_OP_dense, NSRC(x, w, IR_NONE)));
    check_against_torch(&m, "y = F.linear(x.float(), P['0.weight'])");
}

static void test_reductions_softmax(void **state)
{
    (void)state;
    static const ir_op ops[] = {IR_OP_sum, IR_OP_mean, IR_OP_maximum, IR_OP_softmax,
                                IR_OP_log_softmax};
    static const char *const names[] = {"s", "mn", "mx", "sm", "lsm"};
    model m = model_new("reduce", AXRT_F32);
    m.input_scale = 30.0; /* softmax must subtract the max to stay finite */
    int x = input(&m, "x", AXRT_F32, 3, SHAPE(2, 5, 3));
    for (int i = 0; i < 5; i++) {
        int y = op(&m, ops[i], NSRC(x));
        attrs(&m, y)->axis = i == 4 ? -1 : 1;
        output(&m, names[i], y);
    }
    check_against_torch(&m, "s = x.sum(1, keepdim=True); mn = x.mean(1, keepdim=True)\n"
                            "mx = x.amax(1, keepdim=True); sm = torch.softmax(x, 1)\n"
                            "lsm = torch.log_softmax(x, -1)\n");
}

static void test_shape_ops(void **state)
{
    (void)state;
    model m = model_new("shapes", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 3, SHAPE(2, 3, 4));
    int z = input(&m, "z", AXRT_F32, 3, SHAPE(2, 2, 4));
    int t = op(&m, IR_OP_transpose, NSRC(x));
    attrs(&m, t)->nperm = 3;
    memcpy(attrs(&m, t)->perm, (int[]){2, 0, 1}, 3 * sizeof(int));
    output(&m, "t", t);
    int c = op(&m, IR_OP_concat, NSRC(x, z, x));
    attrs(&m, c)->axis = 1;
    output(&m, "c", c);
    int r = op(&m, IR_OP_reshape, NSRC(x));
    attrs(&m, r)->nnewshape = 2;
    memcpy(attrs(&m, r)->newshape, SHAPE(4, -1), 2 * sizeof(int64_t));
    int r2 = op(&m, IR_OP_relu, NSRC(r)); /* the reshape lives in the arena */
    output(&m, "r", r2);
    output(&m, "same", x);  /* an output that is an input: copied */
    output(&m, "again", r2); /* the same node twice: copied */
    check_against_torch(&m, "t = x.permute(2, 0, 1); c = torch.cat([x, z, x], 1)\n"
                            "r = F.relu(x.reshape(4, -1)); same = x; again = r\n");
}

static void test_matmul(void **state)
{
    (void)state;
    model m = model_new("matmul", AXRT_F32);
    int a = input(&m, "a", AXRT_F32, 4, SHAPE(2, 1, 3, 4));
    int b = input(&m, "b", AXRT_F32, 3, SHAPE(5, 4, 2));
    int v = input(&m, "v", AXRT_F32, 1, SHAPE(4));
    output(&m, "batched", op(&m, IR_OP_matmul, NSRC(a, b)));
    output(&m, "vec_mat", op(&m, IR_OP_matmul, NSRC(v, b)));
    output(&m, "mat_vec", op(&m, IR_OP_matmul, NSRC(a, v)));
    check_against_torch(&m, "batched = torch.matmul(a, b); vec_mat = torch.matmul(v, b)\n"
                            "mat_vec = torch.matmul(a, v)\n");
}

static void test_norms(void **state)
{
    (void)state;
    model m = model_new("norms", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 3, SHAPE(2, 3, 8));
    int lw = param(&m, "ln.weight", 1, SHAPE(8));
    int lb = param(&m, "ln.bias", 1, SHAPE(8));
    int ln = op(&m, IR_OP_layernorm, NSRC(x, lw, lb));
    attrs(&m, ln)->eps = 1e-5;
    output(&m, "ln", ln);
    int bw = param(&m, "bn.weight", 1, SHAPE(8));
    int bb = param(&m, "bn.bias", 1, SHAPE(8));
    int mean = param(&m, "bn.running_mean", 1, SHAPE(8));
    int var = param_in(&m, "bn.running_var", 1, SHAPE(8), 0.2, 3.0);
    int bn = op(&m, IR_OP_batchnorm, NSRC(x, bw, bb, mean, var));
    attrs(&m, bn)->eps = 1e-3;
    attrs(&m, bn)->act = IR_OP_relu6;
    output(&m, "bn", bn);
    check_against_torch(&m,
                        "ln = F.layer_norm(x, (8,), P['ln.weight'], P['ln.bias'], 1e-5)\n"
                        "bn = F.relu6(F.batch_norm(x.reshape(-1, 8), P['bn.running_mean'],\n"
                        "    P['bn.running_var'], P['bn.weight'], P['bn.bias'], False, 0.0,\n"
                        "    1e-3).reshape(x.shape))\n");
}

static int conv(model *m, int x, const char *prefix, const int64_t *wshape, bool bias)
{
    char *wname = ax_sprintf(m->ctx->arena, "%s.weight", prefix);
    int w = param(m, wname, 4, wshape);
    int b = bias ? param(m, ax_sprintf(m->ctx->arena, "%s.bias", prefix), 1, SHAPE(wshape[0]))
                 : IR_NONE;
    return op(m, IR_OP_conv, NSRC(x, w, b));
}

static void test_conv(void **state)
{
    (void)state;
    model m = model_new("conv", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 4, SHAPE(2, 9, 8, 4));
    int plain = conv(&m, x, "plain", SHAPE(6, 4, 3, 3), true);
    attrs(&m, plain)->pad[0] = attrs(&m, plain)->pad[1] = 1;
    attrs(&m, plain)->pad[2] = attrs(&m, plain)->pad[3] = 1;
    output(&m, "plain", plain);
    int strided = conv(&m, x, "strided", SHAPE(6, 2, 3, 2), false);
    ir_attrs *a = attrs(&m, strided);
    a->stride[0] = 2, a->stride[1] = 3, a->dilation[0] = 2, a->groups = 2;
    a->pad[0] = 1, a->pad[1] = 0, a->pad[2] = 2, a->pad[3] = 1; /* asymmetric */
    output(&m, "strided", strided);
    int dw = conv(&m, x, "dw", SHAPE(8, 1, 3, 3), true);
    attrs(&m, dw)->groups = 4;
    attrs(&m, dw)->pad_same = true;
    output(&m, "dw", dw);
    check_against_torch(&m,
                        "c = lambda t: t.permute(0, 3, 1, 2); h = lambda t: t.permute(0, 2, 3, 1)\n"
                        "plain = h(F.conv2d(c(x), P['plain.weight'], P['plain.bias'], padding=1))\n"
                        "strided = h(F.conv2d(F.pad(c(x), (0, 1, 1, 2)), P['strided.weight'],\n"
                        "    stride=(2, 3), dilation=(2, 1), groups=2))\n"
                        "dw = h(F.conv2d(c(x), P['dw.weight'], P['dw.bias'], padding=1, groups=4))\n");
}

static void test_pools(void **state)
{
    (void)state;
    model m = model_new("pools", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 4, SHAPE(2, 7, 6, 3));
    int mx = op(&m, IR_OP_maxpool, NSRC(x));
    ir_attrs *a = attrs(&m, mx);
    a->kernel[0] = a->kernel[1] = 3, a->stride[0] = a->stride[1] = 2;
    a->pad[0] = a->pad[1] = a->pad[2] = a->pad[3] = 1;
    output(&m, "mx", mx);
    int mn = op(&m, IR_OP_meanpool, NSRC(x));
    a = attrs(&m, mn);
    a->kernel[0] = a->kernel[1] = 3, a->stride[0] = a->stride[1] = 2;
    a->pad[0] = a->pad[1] = a->pad[2] = a->pad[3] = 1;
    output(&m, "mn", mn);
    int mn2 = op(&m, IR_OP_meanpool, NSRC(x));
    a = attrs(&m, mn2);
    a->kernel[0] = a->kernel[1] = 2, a->stride[0] = a->stride[1] = 2;
    output(&m, "mn2", mn2);
    output(&m, "g", op(&m, IR_OP_globalmeanpool, NSRC(x)));
    check_against_torch(&m,
                        "c = lambda t: t.permute(0, 3, 1, 2); h = lambda t: t.permute(0, 2, 3, 1)\n"
                        "mx = h(F.max_pool2d(c(x), 3, 2, 1))\n"
                        "mn = h(F.avg_pool2d(c(x), 3, 2, 1, count_include_pad=True))\n"
                        "mn2 = h(F.avg_pool2d(c(x), 2, 2)); g = x.mean((1, 2))\n");
}

/* torch.nn.MultiheadAttention with the given state, batch_first=True. */
static const char mha_reference[] =
    "def attention(q, k, v, prefix, causal, bias=True):\n"
    "    d = q.shape[-1]\n"
    "    mha = torch.nn.MultiheadAttention(d, 2, bias=bias, batch_first=True)\n"
    "    state = {n[len(prefix) + 1:]: t for n, t in P.items() if n.startswith(prefix + '.')}\n"
    "    mha.load_state_dict(state)\n"
    "    mask = torch.triu(torch.ones(q.shape[1], k.shape[1], dtype=torch.bool), 1) if causal else None\n"
    "    return mha(q, k, v, need_weights=False, attn_mask=mask)[0]\n";

static int mha(model *m, const char *prefix, int q, int k, int v, int64_t d, bool bias)
{
    ax_arena *a = m->ctx->arena;
    int w_in = param(m, ax_sprintf(a, "%s.in_proj_weight", prefix), 2, SHAPE(3 * d, d));
    int b_in = bias ? param(m, ax_sprintf(a, "%s.in_proj_bias", prefix), 1, SHAPE(3 * d)) : IR_NONE;
    int w_out = param(m, ax_sprintf(a, "%s.out_proj.weight", prefix), 2, SHAPE(d, d));
    int b_out = bias ? param(m, ax_sprintf(a, "%s.out_proj.bias", prefix), 1, SHAPE(d)) : IR_NONE;
    int id = op(m, IR_OP_mha, NSRC(q, k, v, w_in, b_in, w_out, b_out, IR_NONE));
    attrs(m, id)->heads = 2;
    return id;
}

static void test_attention(void **state)
{
    (void)state;
    model m = model_new("attn", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 3, SHAPE(2, 5, 8));
    int kv = input(&m, "kv", AXRT_F32, 3, SHAPE(2, 7, 8));
    output(&m, "self", mha(&m, "self", x, x, x, 8, true));
    int causal = mha(&m, "causal", x, x, x, 8, true);
    attrs(&m, causal)->causal = true;
    output(&m, "masked", causal);
    output(&m, "cross", mha(&m, "cross", x, kv, kv, 8, false));
    ax_buf code = {0};
    ax_buf_puts(&code, mha_reference);
    ax_buf_puts(&code, "self = attention(x, x, x, 'self', False)\n"
                       "masked = attention(x, x, x, 'causal', True)\n"
                       "cross = attention(x, kv, kv, 'cross', False, bias=False)\n");
    ax_buf_put(&code, "", 1);
    check_against_torch(&m, code.data);
    ax_buf_free(&code);
}

static void test_embedding(void **state)
{
    (void)state;
    static const int64_t ids64[6] = {0, 4, 9, 4, 1, 2};
    static const int32_t ids32[3] = {3, 0, 9};
    model m = model_new("embed", AXRT_F32);
    int i64 = input(&m, "ids", AXRT_I64, 2, SHAPE(2, 3));
    int i32 = input(&m, "ids32", AXRT_I32, 1, SHAPE(3));
    m.input_data[0] = (void *)ids64;
    m.input_data[1] = (void *)ids32;
    int w = param(&m, "emb.weight", 2, SHAPE(10, 4));
    output(&m, "e", op(&m, IR_OP_embedding, NSRC(i64, w)));
    output(&m, "e32", op(&m, IR_OP_embedding, NSRC(i32, w)));
    check_against_torch(&m, "e = F.embedding(ids, P['emb.weight'])\n"
                            "e32 = F.embedding(ids32.long(), P['emb.weight'])\n");
}

static void test_embedding_out_of_range(void **state)
{
    (void)state;
    static const int64_t bad[2] = {1, 10};
    model m = model_new("embed_bad", AXRT_F32);
    int ids = input(&m, "ids", AXRT_I64, 1, SHAPE(2));
    int w = param(&m, "emb.weight", 2, SHAPE(10, 4));
    output(&m, "e", op(&m, IR_OP_embedding, NSRC(ids, w)));
    built b = build(&m);
    float out[8];
    const void *inputs[1] = {bad};
    void *outputs[1] = {out};
    assert_int_not_equal(b.desc->run(inputs, outputs, NULL), 0);
    release(&m, &b);
}

/* The training graph's backward kernels (ops.def's training-only rows, made
 * by pass_grad), their shapes resolved by hand as pass_grad resolves them
 * (shape: source); PyTorch computes the same gradients with autograd. */
static int resolved(model *m, ir_op o, int nsrc, const int *src, int rank, const int64_t *shape)
{
    int id = op(m, o, nsrc, src);
    set_shape(ir_at(m->g, id), rank, shape);
    return id;
}

static void window(ir_attrs *a, int k, int sh, int sw, int top, int left, int bottom, int right)
{
    a->kernel[0] = a->kernel[1] = k, a->stride[0] = sh, a->stride[1] = sw;
    a->pad[0] = top, a->pad[1] = left, a->pad[2] = bottom, a->pad[3] = right;
}

static void test_backward_kernels(void **state)
{
    (void)state;
    static const int64_t ids[6] = {0, 4, 9, 4, 1, 2};
    model m = model_new("backward", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 4, SHAPE(2, 7, 6, 4));
    int dy = input(&m, "dy", AXRT_F32, 4, SHAPE(2, 4, 2, 6));
    int dp = input(&m, "dp", AXRT_F32, 4, SHAPE(2, 4, 3, 4));
    int ds = input(&m, "ds", AXRT_F32, 4, SHAPE(2, 3, 2, 4));
    int i64 = input(&m, "ids", AXRT_I64, 2, SHAPE(2, 3));
    int de = input(&m, "de", AXRT_F32, 2, SHAPE(6, 4));
    m.input_data[4] = (void *)ids;
    int dw = resolved(&m, IR_OP_conv_grad_weight, NSRC(dy, x), 4, SHAPE(6, 2, 3, 3));
    window(attrs(&m, dw), 3, 2, 3, 1, 0, 1, 1);
    attrs(&m, dw)->groups = 2;
    output(&m, "dw", dw);
    int mx = resolved(&m, IR_OP_pool_grad, NSRC(dp, x), 4, SHAPE(2, 7, 6, 4));
    window(attrs(&m, mx), 3, 2, 2, 1, 1, 1, 1);
    attrs(&m, mx)->of_op = IR_OP_maxpool;
    output(&m, "mx", mx);
    int mn = resolved(&m, IR_OP_pool_grad, NSRC(dp, x), 4, SHAPE(2, 7, 6, 4));
    window(attrs(&m, mn), 3, 2, 2, 1, 1, 1, 1);
    attrs(&m, mn)->of_op = IR_OP_meanpool, attrs(&m, mn)->exclude_pad = true;
    output(&m, "mn", mn);
    int sg = resolved(&m, IR_OP_slice_grad, NSRC(ds), 4, SHAPE(2, 7, 6, 4));
    ir_attrs *a = attrs(&m, sg);
    const int64_t begin[4] = {0, 1, 0, 0}, end[4] = {2, 7, 6, 4}, step[4] = {1, 2, 3, 1};
    memcpy(a->begin, begin, sizeof begin), memcpy(a->end, end, sizeof end), memcpy(a->step, step, sizeof step);
    a->nslice = 4;
    output(&m, "sg", sg);
    output(&m, "eg", resolved(&m, IR_OP_embedding_grad, NSRC(i64, de), 2, SHAPE(10, 4)));
    check_against_torch(&m,
                        "c = lambda t: t.permute(0, 3, 1, 2); h = lambda t: t.permute(0, 2, 3, 1)\n"
                        "dw = torch.nn.grad.conv2d_weight(F.pad(c(x), (0, 1, 1, 1)), (6, 2, 3, 3), c(dy),\n"
                        "    stride=(2, 3), groups=2)\n"
                        "def pool_grad(f):\n"
                        "    xx = c(x).clone().requires_grad_()\n"
                        "    f(xx).backward(c(dp))\n"
                        "    return h(xx.grad)\n"
                        "mx = pool_grad(lambda t: F.max_pool2d(t, 3, 2, 1))\n"
                        "mn = pool_grad(lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False))\n"
                        "sg = torch.zeros(2, 7, 6, 4); sg[:, 1:7:2, 0:6:3, :] = ds\n"
                        "eg = torch.zeros(10, 4).index_add_(0, ids.reshape(-1), de)\n");
}

static void test_float64_model(void **state)
{
    (void)state;
    model m = model_new("wide", AXRT_F64);
    int x = input(&m, "x", AXRT_F64, 2, SHAPE(4, 6));
    int w = param(&m, "0.weight", 2, SHAPE(5, 6));
    int b = param(&m, "0.bias", 1, SHAPE(5));
    int d = op(&m, IR_OP_dense, NSRC(x, w, b));
    int g = op(&m, IR_OP_gelu, NSRC(d));
    int s = op(&m, IR_OP_log_softmax, NSRC(op(&m, IR_OP_mul, NSRC(g, scalar(&m, 3.0)))));
    attrs(&m, s)->axis = -1;
    output(&m, "y", s);
    check_against_torch(&m, "y = torch.log_softmax(F.gelu(F.linear(x, P['0.weight'], "
                            "P['0.bias'])) * 3.0, -1)");
}

/* The emitted text itself: header contract and parameter representation. */
static void test_emitted_text(void **state)
{
    (void)state;
    model m = model_new("mlp", AXRT_F32);
    int x = input(&m, "x", AXRT_F32, 2, SHAPE(1, 4));
    int w = param(&m, "0.weight", 2, SHAPE(2, 4));
    output(&m, "out0", op(&m, IR_OP_dense, NSRC(x, w, IR_NONE)));
    plan(&m);
    ((float *)ir_at(m.g, w)->data)[0] = 1.0f; /* 0x3f800000 little-endian */
    ax_buf c = {0}, h = {0};
    ir_graph *models[1] = {m.g};
    cg_request req = {.models = models, .nmodels = 1, .header_name = "mlp.h", .source_name = "mlp.ax"};
    assert_int_equal(cg_c_emit(&req, &c, &h), 0);
    ax_buf_put(&c, "", 1);
    ax_buf_put(&h, "", 1);
    assert_non_null(strstr(h.data, "#define MLP_ARENA_BYTES ((size_t)"));
    assert_non_null(strstr(h.data, "int mlp_forward(const float *x, float *out0, void *arena);"));
    assert_non_null(strstr(h.data, "extern const axrt_model mlp_model;"));
    assert_non_null(strstr(h.data, "extern \"C\""));
    assert_non_null(strstr(c.data, "#include \"mlp.h\""));
    assert_non_null(strstr(c.data, "unsigned char bytes[32 + 1]; float values[8]; } mlp_p"));
    assert_non_null(strstr(c.data, "\"\\x00\\x00\\x80\\x3f"));
    assert_null(strstr(c.data, "malloc"));
    ax_buf_free(&c);
    ax_buf_free(&h);
    ir_graph_free_nodes(m.g);
    ax_ctx_free(m.ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emitted_text),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_cast_inputs),
        cmocka_unit_test(test_reductions_softmax),
        cmocka_unit_test(test_shape_ops),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_embedding_out_of_range),
        cmocka_unit_test(test_backward_kernels),
        cmocka_unit_test(test_float64_model),
    };
    return cmocka_run_group_tests(tests, compile_runtime, remove_runtime);
}
