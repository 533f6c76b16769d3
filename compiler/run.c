/* run.c — `axc run`: compile one model, build its generated C into a shared
 * object with $CC (or evaluate it with the reference interpreter), feed it
 * .npy inputs (or deterministic ones from --seed), write .npy outputs or
 * print them, and optionally time it (--bench). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "axrt_gpu.h"
#include "cg_target.h"
#include "driver.h"
#include "ir_interp.h"
#include "tensorfile.h"
#include "weights.h"

/* One heap buffer per graph input and output (arrays in the context arena). */
typedef struct run_io {
    void **in;
    void **out;
} run_io;

typedef struct runner {
    const ir_graph *g;
    const axrt_model *model;  /* compiled; NULL with --interp */
    void *arena;
    axc_built built;          /* the compiled library (none with --interp, --jit) */
    cg_jit *jit;              /* --jit */
} runner;

const char *axc_home(ax_arena *a)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = 0;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) return NULL;
        *slash = 0;
    }
    const char *home = ax_strdup(a, exe[0] ? exe : "/");
    /* A copied or moved axc has no runtime beside it: say so here rather
     * than let the C compiler fail on a missing axrt.h. */
    if (access(ax_sprintf(a, "%s/include/axrt.h", home), R_OK) ||
        access(ax_sprintf(a, "%s/lib/libaxrt.a", home), R_OK))
        return NULL;
    return home;
}

/* ---- inputs -------------------------------------------------------------- */

/* An output's name as a file name inside --output-dir: an ONNX name may hold
 * '/' or start with '.' ("../x"), which must not leave the directory. */
static const char *file_name(ax_arena *a, const char *name)
{
    char *f = ax_strdup(a, name && *name ? name : "output");
    for (char *c = f; *c; c++)
        if (*c == '/' || *c == '\\') *c = '_';
    if (f[0] == '.') f[0] = '_';
    return f;
}

/* Smallest Embedding vocabulary fed by input node id (indices stay valid). */
static int64_t index_limit(const ir_graph *g, int id)
{
    int64_t limit = 10;
    for (int i = 0; i < g->nnodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (!n->dead && n->op == IR_OP_embedding && n->src[0] == id) {
            int64_t vocab = g->nodes[n->src[1]].shape[0];
            if (vocab < limit) limit = vocab;
        }
    }
    return limit;
}

/* Deterministic input: uniform [-1, 1) floats, or valid indices. */
static void *fill_input(const ir_graph *g, int id, uint64_t seed)
{
    const ir_node *n = &g->nodes[id];
    size_t count = (size_t)ir_numel(n);
    double *vals = malloc(count * sizeof *vals);
    void *data = malloc(ir_nbytes(n) ? ir_nbytes(n) : 1);
    if (!vals || !data) ax_out_of_memory(0);
    uint64_t s = seed ^ 0xA0761D6478BD642Full;
    for (const char *p = n->name; *p; p++) s = (s ^ (unsigned char)*p) * 0x100000001B3ull;
    bool is_int = n->dtype == AXRT_I8 || n->dtype == AXRT_I32 || n->dtype == AXRT_I64;
    int64_t limit = is_int ? index_limit(g, id) : 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t r = ax_splitmix64(&s);
        vals[i] = is_int ? (double)(r % (uint64_t)limit) : (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    }
    tf_convert(data, n->dtype, vals, AXRT_F64, count);
    free(vals);
    return data;
}


/* Whether got is want's 4-D image with its axes in order (batch, and want's
 * dims at positions a, b, c): [N, C, H, W] for an NHWC want is 3, 1, 2. */
static bool image_permuted(const int64_t *want, const int64_t *got, int a, int b, int c)
{
    return got[0] == want[0] && got[1] == want[a] && got[2] == want[b] && got[3] == want[c];
}

/* For a 4-D input given in the other image layout: a sentence naming both. */
static const char *layout_hint(const ir_node *n, const tf_tensor *t)
{
    if (n->rank != 4 || t->rank != 4) return "";
    if (image_permuted(n->shape, t->shape, 3, 1, 2))
        return " (the model takes NHWC images, batch x height x width x channels; the file holds NCHW, "
               "PyTorch's layout: transpose it with .permute(0, 2, 3, 1))";
    if (image_permuted(n->shape, t->shape, 2, 3, 1))
        return " (the model takes NCHW images, batch x channels x height x width; the file holds NHWC: "
               "transpose it with .permute(0, 3, 1, 2))";
    return "";
}

/* Reads --input FILE for input node id; checks shape and kind; converts.
 * An unreadable file is an I/O error (*rc = 2), a wrong one an input error. */
static void *read_input(ax_ctx *ctx, const ir_graph *g, int id, const char *path, int *rc)
{
    const ir_node *n = &g->nodes[id];
    size_t len;
    char err[256];
    *rc = AXC_EINPUT;
    /* the .npy can be no larger than its header and 8 bytes an element */
    size_t max = ((size_t)1 << 20) + 8 * (size_t)ir_numel(n);
    uint8_t *buf = (uint8_t *)ax_read_file_max(ctx->arena, path, max, &len);
    if (!buf && errno == EFBIG) {
        axc_fail("cannot read '%s': larger than %zu bytes, the most a .npy for input '%s' can take", path, max,
                 n->name);
        *rc = AXC_EUSAGE;
        return NULL;
    }
    if (!buf) { axc_fail("cannot read '%s': %s", path, strerror(errno)); *rc = AXC_EUSAGE; return NULL; }
    tf_tensor t;
    if (tf_npy_parse(buf, len, &t, err, sizeof err)) { axc_fail("%s: %s", path, err); return NULL; }
    char want[128], got[128];
    ir_shape_str(n->shape, n->rank, want, sizeof want);
    ir_shape_str(t.shape, t.rank, got, sizeof got);
    if (strcmp(want, got)) {
        axc_fail("input '%s' expects %s%s but %s holds %s%s%s", n->name, ir_dtype_name(n->dtype), want,
                 path, ir_dtype_name(t.dtype), got, layout_hint(n, &t));
        return NULL;
    }
    if (ir_dtype_is_float(t.dtype) != ir_dtype_is_float(n->dtype)) {
        axc_fail("input '%s' expects %s values but %s holds %s", n->name, ir_dtype_name(n->dtype), path,
                 ir_dtype_name(t.dtype));
        return NULL;
    }
    void *data = malloc(ir_nbytes(n) ? ir_nbytes(n) : 1);
    if (!data) ax_out_of_memory(0);
    tf_convert(data, n->dtype, t.data, t.dtype, (size_t)ir_numel(n));
    return data;
}

static int prepare_inputs(ax_ctx *ctx, const axc_opts *o, const ir_graph *g, run_io *io)
{
    for (int k = 0; k < o->ninputs; k++) {
        int found = 0;
        const char **names = ax_alloc(ctx->arena, sizeof *names * (size_t)(g->ninputs + 1));
        for (int i = 0; i < g->ninputs; i++) {
            names[i] = g->nodes[g->inputs[i]].name;
            found |= !strcmp(names[i], o->inputs[k].name);
        }
        if (!found) {
            const char *s = ax_suggest(o->inputs[k].name, names, g->ninputs);
            ax_buf list = {0};
            for (int i = 0; i < g->ninputs; i++) ax_buf_printf(&list, "%s%s", i ? ", " : "", names[i]);
            axc_fail("--input %s: model '%s' has no input of that name (its inputs: %s%s%s%s)",
                     o->inputs[k].name, g->name, list.data, s ? "; did you mean '" : "", s ? s : "",
                     s ? "'?" : "");
            ax_buf_free(&list);
            return AXC_EUSAGE;
        }
    }
    for (int i = 0; i < g->ninputs; i++) {
        int id = g->inputs[i];
        const char *path = NULL;
        for (int k = 0; k < o->ninputs; k++)
            if (!strcmp(o->inputs[k].name, g->nodes[id].name)) path = o->inputs[k].path;
        int rc = AXC_OK;
        io->in[i] = path ? read_input(ctx, g, id, path, &rc) : fill_input(g, id, o->seed);
        if (!io->in[i]) return rc;
    }
    return AXC_OK;
}

/* ---- building and loading the generated code ----------------------------- */

/* Runs argv (no shell); returns its exit status, or -1 if it could not start. */
static int spawn(char **argv)
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "axc: error: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    ax_cleanup_child(pid);   /* a fatal signal stops it before removing its directory */
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) { ax_cleanup_child(0); return -1; }
    ax_cleanup_child(0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Splits the compiler command ("ccache gcc") into argv words. */
static int split_words(char *s, char **argv, int max)
{
    int n = 0;
    for (char *w = strtok(s, " \t"); w && n < max; w = strtok(NULL, " \t")) argv[n++] = w;
    return n;
}

/* The C compiler command: --cc, else $CC, else cc. */
const char *axc_cc_command(const axc_opts *o)
{
    const char *cc = o->cc ? o->cc : getenv("CC");
    return cc && *cc ? cc : "cc";
}

/* What axc_compile_shared passes besides the files (part of the cache key). */
#define RUN_CFLAGS AXC_RUN_CFLAGS
#define RUN_CFLAGS_BLAS RUN_CFLAGS " -lopenblas"
#define RUN_CFLAGS_GPU RUN_CFLAGS " -laxrt_gpu -ldl"

int axc_compile_shared(ax_ctx *ctx, const axc_opts *o, const char *dir, const char *home, bool gpu)
{
    ax_arena *a = ctx->arena;
    char *words = ax_strdup(a, axc_cc_command(o));
    char *argv[32];
    int n = split_words(words, argv, 16);
    const char *rest[] = {"-std=c99", "-O2", "-fPIC", "-shared", "-o", ax_sprintf(a, "%s/model.so", dir),
                          ax_sprintf(a, "%s/model.c", dir), ax_sprintf(a, "-I%s/include", home),
                          /* the runtime's host part, for --threads and the bench line */
                          "-Wl,-u,axrt_set_threads", ax_sprintf(a, "%s/lib/libaxrt.a", home),
                          "-lm", "-lpthread", NULL};
    for (int i = 0; rest[i]; i++) argv[n++] = (char *)rest[i];
    if (gpu) { /* the runtime's GPU part, which opens the driver with dlopen */
        argv[n++] = ax_sprintf(a, "%s/lib/libaxrt_gpu.a", home);
        argv[n++] = "-ldl";
    }
    if (o->blas) argv[n++] = "-lopenblas"; /* --blas=openblas: cblas_sgemm */
    argv[n] = NULL;
    int st = spawn(argv);
    if (st == 0) return AXC_OK;
    if (o->blas) {
        axc_fail("building the generated code with --blas=openblas failed (status %d): "
                 "is OpenBLAS installed (cblas.h and -lopenblas, Debian: libopenblas-dev)?", st);
        return AXC_EUSAGE;
    }
    axc_fail("building the generated code with '%s' failed (status %d)", argv[0], st);
    return AXC_EUSAGE;
}

static int stage_sources(ax_ctx *ctx, const axc_opts *o, ir_graph *g, const char *dir)
{
    ax_buf c = {0}, h = {0};
    ir_graph *models[1] = {g};
    cg_request req = {.models = models, .nmodels = 1, .header_name = "model.h",
                      .source_name = axc_source_name(ctx->arena, o), .profile = o->profile || o->dump_dir,
                      .blas = o->blas};
    const cg_target *target = cg_target_get(g->target->id);
    const ir_target_id id = target->facts.id;
    char why[512];
    if (cg_target_runs_on_gpu(target) &&
        axrt_gpu_probe(target->run == CG_RUN_CC_CUDA ? AXRT_GPU_CUDA : AXRT_GPU_HIP, why, sizeof why)) {
        axc_fail("axc run --target=%s: %s", ir_targets[id].name, why);
        return AXC_EUSAGE;
    }
    /* C, or the GPU targets' host C (the llvm target runs through the JIT) */
    if (!target->emit) ax_die("axc run: the %s target has no printer", ir_targets[id].name);
    if (cg_target_check(g)) return AXC_EINPUT;
    int rc = target->emit(&req, &c, &h) ? AXC_EINPUT : AXC_OK;
    if (!rc && (ax_write_file_atomic(ax_sprintf(ctx->arena, "%s/model.c", dir), c.data, c.len) ||
                ax_write_file_atomic(ax_sprintf(ctx->arena, "%s/model.h", dir), h.data, h.len))) {
        axc_fail("cannot write into '%s': %s", dir, strerror(errno));
        rc = AXC_EUSAGE;
    }
    ax_buf_free(&c);
    ax_buf_free(&h);
    return rc;
}

/* The GPU targets: the model's init once here, so that a compiler or
 * driver failure is reported with its message (the descriptor's run then
 * starts its own context, from the compiled-kernel cache). */
static int start_gpu(ax_ctx *ctx, ir_graph *g, runner *r)
{
    axrt_gpu *(*init)(char *, size_t) = NULL;
    void (*done)(axrt_gpu *) = NULL;
    void *pi = dlsym(r->built.dl, ax_sprintf(ctx->arena, "%s_init", g->name));
    void *pf = dlsym(r->built.dl, ax_sprintf(ctx->arena, "%s_free", g->name));
    memcpy(&init, &pi, sizeof pi);
    memcpy(&done, &pf, sizeof pf);
    char why[8192] = "";
    axrt_gpu *gpu = init ? init(why, sizeof why) : NULL;
    if (!gpu) {
        axc_fail("axc run --target=%s: %s", ir_targets[g->target->id].name, why);
        return AXC_EUSAGE;
    }
    if (done) done(gpu);
    return AXC_OK;
}

/* ---- generated code built and loaded (axc_built; driver.h) ---------------- */

int axc_built_open(ax_ctx *ctx, const char *what, axc_built *b)
{
    *b = (axc_built){.lock = -1};
    const char *tmp = getenv("TMPDIR");
    b->dir = ax_sprintf(ctx->arena, "%s/axc-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", what);
    if (!mkdtemp(b->dir)) {
        axc_fail("cannot create a temporary directory: %s", strerror(errno));
        b->dir = NULL;
        return AXC_EUSAGE;
    }
    b->cleanup[0] = ax_cleanup_add(b->dir, true);
    const char *files[] = {"model.c", "model.h", "model.so"};
    for (int i = 0; i < 3; i++) b->cleanup[i + 1] = ax_cleanup_add(ax_sprintf(ctx->arena, "%s/%s", b->dir, files[i]), false);
    return AXC_OK;
}

int axc_built_load(ax_ctx *ctx, const axc_opts *o, const char *home, const char *flags, bool gpu, axc_built *b)
{
    /* a cached build of the same code with the same compiler skips the C compiler */
    b->cached = axc_run_cache_entry(ctx->arena, axc_cc_command(o), flags, b->dir, home);
    int fd = -1, rc = AXC_OK;
    const char *entry = b->cached ? axc_run_cache_open(ctx->arena, b->cached, &fd) : NULL;
    if (b->cached && !entry) { /* the same code may be building in another axc: wait, look again */
        b->lock = axc_run_cache_lock(ctx->arena, b->cached);
        if (b->lock >= 0) entry = axc_run_cache_open(ctx->arena, b->cached, &fd);
    }
    if (entry) { /* checked: ours, writable by no one else, intact */
        b->dl = dlopen(entry, RTLD_NOW | RTLD_LOCAL);
        b->hit = b->dl != NULL;
        /* kept open while loaded: dlopen of a name already loaded returns that
           library, so a second entry must not reuse this /proc/self/fd name */
        if (b->hit) b->entry_fd = fd;
        else close(fd);
        if (!b->hit) axc_run_cache_drop(b->cached, ax_sprintf(ctx->arena, "it does not load (%s)", dlerror()));
    }
    if (!b->hit) {
        rc = axc_compile_shared(ctx, o, b->dir, home, gpu);
        if (!rc) b->dl = dlopen(ax_sprintf(ctx->arena, "%s/model.so", b->dir), RTLD_NOW | RTLD_LOCAL);
    }
    if (!rc && !b->dl) { axc_fail("cannot load the generated code: %s", dlerror()); rc = AXC_EUSAGE; }
    if (rc) axc_built_finish(ctx, b, false);
    return rc;
}

void axc_built_finish(ax_ctx *ctx, axc_built *b, bool ok)
{
    if (!b->cached) return;
    const bool store = ok && !b->hit;
    if (store) axc_run_cache_store(ctx->arena, ax_sprintf(ctx->arena, "%s/model.so", b->dir), b->cached);
    axc_run_cache_unlock(ctx->arena, b->cached, b->lock, store);
    b->cached = NULL, b->lock = -1;
}

void axc_built_close(ax_ctx *ctx, axc_built *b)
{
    if (b->dl) {
        /* the pool's workers run code of the library: joined before it goes */
        int (*set_threads)(int) = (int (*)(int))dlsym(b->dl, "axrt_set_threads");
        if (set_threads) set_threads(1);
        dlclose(b->dl);
        b->dl = NULL;
        if (b->hit) close(b->entry_fd);
        b->hit = false;
    }
    if (b->dir) {
        const char *files[] = {"model.c", "model.h", "model.so"};
        for (int i = 0; i < 3; i++) unlink(ax_sprintf(ctx->arena, "%s/%s", b->dir, files[i]));
        rmdir(b->dir);
        for (int i = 0; i < 4; i++) ax_cleanup_drop(b->cleanup[i]);
        b->dir = NULL;
    }
}

static int load_compiled(ax_ctx *ctx, const axc_opts *o, ir_graph *g, runner *r)
{
    const bool gpu = cg_target_runs_on_gpu(cg_target_get(g->target->id));
    const char *home = axc_home(ctx->arena);
    if (!home) { axc_fail("cannot locate the axc runtime (include/ and lib/ beside bin/axc)"); return AXC_EUSAGE; }
    int rc = axc_built_open(ctx, "run", &r->built);
    if (!rc) rc = stage_sources(ctx, o, g, r->built.dir);
    if (!rc) rc = axc_built_load(ctx, o, home, gpu ? RUN_CFLAGS_GPU : o->blas ? RUN_CFLAGS_BLAS : RUN_CFLAGS, gpu, &r->built);
    if (rc) return rc;
    if (!(r->model = dlsym(r->built.dl, ax_sprintf(ctx->arena, "%s_model", g->name)))) {
        axc_fail("generated code lacks '%s_model'", g->name);
        rc = AXC_EUSAGE;
    }
    if (!rc && gpu) rc = start_gpu(ctx, g, r);
    /* only a build that loads and has the model goes into the cache */
    axc_built_finish(ctx, &r->built, !rc);
    if (rc) return rc;
    int (*set_threads)(int) = (int (*)(int))dlsym(r->built.dl, "axrt_set_threads");
    if (o->threads && set_threads) set_threads(o->threads);
    size_t bytes = (r->model->arena_bytes + 63) / 64 * 64;
    r->arena = aligned_alloc(64, bytes ? bytes : 64);
    if (!r->arena) ax_out_of_memory(0);
    return AXC_OK;
}

#ifdef AXC_HAVE_LLVM
/* --blas=openblas under the JIT: OpenBLAS loaded for good with RTLD_GLOBAL,
 * where the JIT's process-symbol search finds cblas_sgemm; AXC_OPENBLAS
 * names another library (one exporting cblas_sgemm with int dimensions).
 * 0, or 1 after saying why not. */
static int load_openblas(void)
{
    const char *name = getenv("AXC_OPENBLAS");
    if (!name || !*name) name = "libopenblas.so.0";
    if (dlopen(name, RTLD_NOW | RTLD_GLOBAL)) return 0;
    axc_fail("--blas=openblas: the JIT cannot load OpenBLAS '%s' (%s); install it (Debian: libopenblas0) "
             "or name the library in AXC_OPENBLAS", name, dlerror());
    return 1;
}
#endif

/* --jit: the model compiled in-process by LLVM's ORC JIT, no C compiler. */
static int load_jit(ax_ctx *ctx, const axc_opts *o, ir_graph *g, runner *r)
{
#ifndef AXC_HAVE_LLVM
    (void)ctx, (void)o, (void)g, (void)r;
    axc_fail("the %s target %s; use %s", "llvm", cg_target_get(IR_TARGET_llvm)->missing,
             "axc run without --jit (it builds the generated C with $CC)");
    return AXC_EUSAGE;
#else
    if (o->blas && load_openblas()) return AXC_EUSAGE;
    r->model = cg_llvm_jit(g, o->profile || o->dump_dir, o->blas, &r->jit);
    if (!r->model) return AXC_EINPUT;
    size_t bytes = (r->model->arena_bytes + 63) / 64 * 64;
    r->arena = aligned_alloc(64, bytes ? bytes : 64);
    if (!r->arena) ax_die("out of memory");
    return AXC_OK;
#endif
}

/* A global of the loaded code (the profile's), from the library or the JIT. */
static void *runner_symbol(void *runner_, const char *name)
{
    const runner *r = runner_;
#ifdef AXC_HAVE_LLVM
    if (r->jit) return cg_llvm_jit_symbol(r->jit, name);
#endif
    return r->built.dl ? dlsym(r->built.dl, name) : NULL;
}

static void runner_close(ax_ctx *ctx, runner *r)
{
#ifdef AXC_HAVE_LLVM
    cg_llvm_jit_free(r->jit);
#endif
    axc_built_close(ctx, &r->built);
    free(r->arena);
}

static int run_once(const runner *r, run_io *io)
{
    if (r->model) return r->model->run((const void *const *)io->in, io->out, r->arena);
    return ir_interp_run(r->g, (const void *const *)io->in, io->out);
}

/* ---- timing ---------------------------------------------------------------- */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* On stderr (stdout keeps the one timing line): the instruction set and
 * thread count the runtime's kernels used, or the interpreter. */
static void print_kernels(const runner *r)
{
    const char *(*isa)(void) = r->built.dl ? (const char *(*)(void))dlsym(r->built.dl, "axrt_isa_name") : NULL;
    int (*threads)(void) = r->built.dl ? (int (*)(void))dlsym(r->built.dl, "axrt_threads") : NULL;
    if (!r->model)
        fprintf(stderr, "%s: reference interpreter\n", r->g->name);
    else
        fprintf(stderr, "%s: kernels %s, %d thread(s)\n", r->g->name, isa ? isa() : "unknown",
                threads ? threads() : 1);
}

/* The GPU targets time on the device: NAME_bench (cg_gpu.c) records events
 * around each forward on the staged inputs, copies excluded.  Returns 0,
 * or -1 after saying why (the generated NAME_gpu_error). */
static int bench_device(const runner *r, run_io *io, long warm, long runs, double *t)
{
    char sym[300];
    snprintf(sym, sizeof sym, "%s_bench", r->g->name);
    int (*timed)(const void *const *, long, long, double *) = NULL;
    void *p = dlsym(r->built.dl, sym);
    memcpy(&timed, &p, sizeof p);
    if (timed && timed((const void *const *)io->in, warm, runs, t) == 0) return 0;
    snprintf(sym, sizeof sym, "%s_gpu_error", r->g->name);
    const char *why = dlsym(r->built.dl, sym);
    axc_fail("axc run --target=%s: %s", ir_targets[r->g->target->id].name,
             why && *why ? why : "--bench: the generated code has no device timing");
    return -1;
}

static bool on_gpu(const runner *r)
{
    return r->model && cg_target_runs_on_gpu(cg_target_get(r->g->target->id));
}

/* Why a run failed: the GPU runtime's words (NAME_gpu_error), else the one
 * failure the C target and the interpreter have. */
static const char *run_failure(const runner *r)
{
    char sym[300];
    snprintf(sym, sizeof sym, "%s_gpu_error", r->g->name);
    const char *why = on_gpu(r) ? dlsym(r->built.dl, sym) : NULL;
    return why && *why ? why : "an Embedding index outside [0, vocab)";
}

/* Warm-up (a tenth of the runs, 1 to 10), then N timed runs; prints
 * "NAME: min X us, median Y us, max Z us over N runs" (on a GPU target the
 * device time between events, after one host run for the outputs). */
static int bench(const runner *r, run_io *io, long runs)
{
    long warm = runs / 10 < 1 ? 1 : runs / 10 > 10 ? 10 : runs / 10;
    for (long i = 0; i < warm; i++)
        if (run_once(r, io)) return -1;
    double *t = malloc((size_t)runs * sizeof *t);
    if (!t) ax_out_of_memory((size_t)runs * sizeof *t);
    ax_progress bar;
    ax_progress_start(&bar, "benchmark runs", runs);
    for (long i = 0; i < runs && !on_gpu(r); i++) {
        double t0 = now_us();
        int st = run_once(r, io);
        t[i] = now_us() - t0;
        if (st) { free(t); ax_progress_end(&bar); return -1; }
        ax_progress_step(&bar, i + 1);
    }
    ax_progress_end(&bar);
    if (on_gpu(r) && bench_device(r, io, warm, runs, t)) { free(t); return -1; }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double median = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
    printf("%s: min %.2f us, median %.2f us, max %.2f us over %ld runs%s\n", r->g->name, t[0], median,
           t[runs - 1], runs, on_gpu(r) ? " (device time between events, copies excluded)" : "");
    print_kernels(r);
    free(t);
    return 0;
}

/* ---- outputs ----------------------------------------------------------------- */

static tf_tensor output_tensor(const ir_graph *g, int k, const void *data)
{
    const ir_node *n = &g->nodes[g->outputs[k]];
    tf_tensor t = {.name = g->output_names[k], .dtype = n->dtype, .rank = n->rank, .data = data,
                   .nbytes = ir_nbytes(n)};
    memcpy(t.shape, n->shape, sizeof t.shape);
    return t;
}

/* t as a .npy file holds it: .npy has no bfloat16, so a BFloat16 output
 * (a model whose first input is declared BFloat16) is widened to float32,
 * exactly. */
static tf_tensor npy_tensor(ax_arena *arena, tf_tensor t)
{
    if (t.dtype != AXRT_BF16) return t;
    size_t count = t.nbytes / 2;
    float *wide = ax_alloc(arena, count * sizeof *wide + 1);
    tf_convert(wide, AXRT_F32, t.data, AXRT_BF16, count);
    t.dtype = AXRT_F32, t.data = (const uint8_t *)wide, t.nbytes = count * sizeof *wide;
    return t;
}

/* Without --output/--output-dir: a readable listing on stdout. */
static void print_outputs(const ir_graph *g, const run_io *io)
{
    for (int k = 0; k < g->noutputs; k++) {
        tf_tensor t = output_tensor(g, k, io->out[k]);
        char shape[128];
        ir_shape_str(t.shape, t.rank, shape, sizeof shape);
        printf("%s: %s%s\n ", t.name, ir_dtype_name(t.dtype), shape);
        size_t count = t.nbytes / axrt_dtype_size(t.dtype), shown = count < 64 ? count : 64;
        double *v = malloc((shown ? shown : 1) * sizeof *v);
        if (!v) ax_out_of_memory(0);
        tf_convert(v, AXRT_F64, t.data, t.dtype, shown);
        for (size_t i = 0; i < shown; i++) printf(" %.6g", v[i]);
        printf("%s\n", shown < count ? " ..." : "");
        free(v);
    }
}

static int write_outputs(ax_ctx *ctx, const axc_opts *o, const ir_graph *g, const run_io *io)
{
    if (!o->run_output && !o->run_output_dir) { print_outputs(g, io); return AXC_OK; }
    if (o->run_output && g->noutputs != 1) {
        axc_fail("--output needs a single-output model; '%s' has %d outputs (use --output-dir)", g->name, g->noutputs);
        return AXC_EUSAGE;
    }
    if (o->run_output_dir && mkdir(o->run_output_dir, 0777) && errno != EEXIST) {
        axc_fail("cannot create '%s': %s", o->run_output_dir, strerror(errno));
        return AXC_EUSAGE;
    }
    axc_output *outs = ax_alloc(ctx->arena, sizeof *outs * ((size_t)g->noutputs + 1));
    int nouts = 0;
    if (o->save_weights) outs[nouts++] = (axc_output){"--save-weights", o->save_weights};
    for (int k = 0; k < g->noutputs; k++)
        outs[nouts++] = o->run_output ? (axc_output){"--output", o->run_output}
                                      : (axc_output){"--output-dir", ax_sprintf(ctx->arena, "%s/%s.npy",
                                                     o->run_output_dir, file_name(ctx->arena, g->output_names[k]))};
    int rc = axc_check_outputs(o, outs, nouts);
    if (rc) return rc;
    ax_outset set = {0};
    for (int k = 0; k < g->noutputs; k++) {
        tf_tensor t = npy_tensor(ctx->arena, output_tensor(g, k, io->out[k]));
        ax_buf b = {0};
        tf_npy_write(&b, &t);
        const char *path = outs[nouts - g->noutputs + k].path;
        int bad = ax_stage(&set, path, b.data, b.len);
        ax_buf_free(&b);
        if (bad) { axc_fail("cannot write '%s': %s", path, strerror(errno)); ax_abort(&set); return AXC_EUSAGE; }
    }
    if (ax_commit(&set)) { axc_fail("cannot write outputs: %s", strerror(errno)); return AXC_EUSAGE; }
    return AXC_OK;
}

static void alloc_outputs(const ir_graph *g, run_io *io)
{
    for (int k = 0; k < g->noutputs; k++) {
        size_t bytes = ir_nbytes(&g->nodes[g->outputs[k]]);
        io->out[k] = calloc(1, bytes ? bytes : 1);
        if (!io->out[k]) ax_out_of_memory(0);
    }
}

/* --profile: the first run was the warm-up; then N runs (--bench N, else
 * 20) with the per-layer counters reset, and the table. */
static int profile_runs(const runner *r, run_io *io, const axc_profile *p, long runs)
{
    axc_profile_reset(p);
    ax_progress bar;
    ax_progress_start(&bar, "profiled runs", runs);
    double t0 = now_us(), clock_us = 0;
    for (long i = 0; i < runs; i++) {
        if (run_once(r, io)) { ax_progress_end(&bar); return -1; }
        double t1 = now_us();
        ax_progress_step(&bar, i + 1);
        clock_us += now_us() - t1;  /* the progress line's own time stays out of the total */
    }
    ax_progress_end(&bar);
    axc_profile_print(p, r->g->name, (now_us() - t0 - clock_us) / (double)runs);
    return 0;
}

static int execute(ax_ctx *ctx, const axc_opts *o, ir_graph *g, run_io *io)
{
    runner r = {.g = g, .built = {.cleanup = {-1, -1, -1, -1}, .lock = -1}};
    axc_profile prof = {0};
    /* --jit, and a target whose row says so (llvm), run in-process through LLVM's ORC JIT */
    const bool jit = o->jit || cg_target_get(g->target->id)->run == CG_RUN_JIT;
    int rc = o->interp ? AXC_OK : jit ? load_jit(ctx, o, g, &r) : load_compiled(ctx, o, g, &r);
    if (!rc && (o->profile || o->dump_dir)) rc = axc_profile_attach(ctx, runner_symbol, &r, g, &prof);
    if (!rc && o->dump_dir) rc = axc_profile_dump_begin(&prof, o->dump_dir);
    if (!rc && run_once(&r, io)) {
        axc_fail("model '%s' failed at run time: %s", g->name, run_failure(&r));
        rc = AXC_EINPUT;
    }
    if (o->dump_dir && prof.hook && axc_profile_dump_end(&prof) && !rc) rc = AXC_EUSAGE;
    if (!rc && o->profile && profile_runs(&r, io, &prof, o->bench_runs ? o->bench_runs : 20))
        rc = AXC_EINPUT;
    else if (!rc && !o->profile && o->bench_runs && bench(&r, io, o->bench_runs)) rc = AXC_EINPUT;
    runner_close(ctx, &r);
    return rc;
}

int axc_run(ax_ctx *ctx, const axc_opts *o)
{
    ir_graph *models[AXC_MAX_MODELS];
    int n = 0;
    axc_output outs[2];
    int nouts = 0;
    if (o->run_output) outs[nouts++] = (axc_output){"--output", o->run_output};
    if (o->save_weights) outs[nouts++] = (axc_output){"--save-weights", o->save_weights};
    int rc = axc_check_outputs(o, outs, nouts);
    if (!rc) rc = axc_build_models(ctx, o, models, &n);
    if (!rc && n != 1) {
        axc_fail("'axc run' runs one model; %s has %d (choose one with --model)", o->input, n);
        rc = AXC_EUSAGE;
    }
    if (rc) { axc_free_models(models, n); return rc; }
    ir_graph *g = models[0];
    run_io io = {ax_alloc(ctx->arena, sizeof *io.in * (size_t)(g->ninputs + 1)),
                 ax_alloc(ctx->arena, sizeof *io.out * (size_t)(g->noutputs + 1))};
    rc = prepare_inputs(ctx, o, g, &io);
    if (!rc) {
        alloc_outputs(g, &io);
        rc = execute(ctx, o, g, &io);
    }
    /* with --bench and no output option, the timing line is the whole output */
    if (!rc && (!o->bench_runs || o->run_output || o->run_output_dir)) rc = write_outputs(ctx, o, g, &io);
    if (!rc && o->save_weights) rc = axc_save_weights(o, g);
    for (int i = 0; i < g->ninputs; i++) free(io.in[i]);
    for (int i = 0; i < g->noutputs; i++) free(io.out[i]);
    axc_free_models(models, n);
    return rc;
}
