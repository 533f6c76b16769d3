/* harness.c — the C side of `make bench`: one process holding every C system
 * (axc, OpenBLAS, oneDNN) for every row, driven line by line on stdin by
 * bench.py so that systems can be interleaved round-robin.  Commands and the
 * one-line replies:
 *   info                      library builds, "openblas ... | oneDNN ..."
 *   isa                       the kernel path libaxrt chose (axrt_isa_name()),
 *                             or why that is unknown
 *   peak                      measured FP32 FMA peak of this core, GFLOP/s
 *   triad                     measured triad bandwidth within L2, GB/s
 *   check ROW SYSTEM          "ok REL", "fail REL" or "n/a REASON": one run
 *                             compared with the reference output
 *   time ROW SYSTEM ITERS     median ns of ITERS timed runs (after one warm-up)
 * Data files: DIR/ROW.weights.safetensors and DIR/ROW.io.safetensors (tensors
 * "x" and "ref"), written by bench.py.  Usage: harness DIR THREADS, with
 * OMP_NUM_THREADS=THREADS (oneDNN's threads) as bench.py sets it; OpenBLAS
 * and, where libaxrt has axrt_set_threads (BENCH_AXRT_SET_THREADS), axc get
 * THREADS here.  axc at more than one thread without it is n/a.
 * BENCH_AXRT_ISA_NAME: axrt.h declares axrt_isa_name() (bench.py looks). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#if defined(BENCH_AXRT_ISA_NAME) || defined(BENCH_AXRT_SET_THREADS)
#include "axrt.h"
#endif

#define TOLERANCE 1e-4

typedef struct row_data {
    char name[8];
    bench_tensors weights, io;
    const float *x, *ref;
    size_t x_count, y_count;
} row_data;

typedef struct prepared {
    const bench_impl *impl;
    const char *setup_error;  /* NULL once set up successfully */
    float *y;
} prepared;

static const char *data_dir;
static int threads = 1;
static row_data rows[16];
static int nrows;
static prepared impls[64];
static int nimpls;

double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- rows and systems --------------------------------------------------- */

static row_data *find_row(const char *name)
{
    for (int i = 0; i < nrows; i++)
        if (!strcmp(rows[i].name, name)) return &rows[i];
    if (nrows == (int)(sizeof rows / sizeof rows[0]) || strlen(name) >= sizeof rows[0].name) return NULL;
    row_data *r = &rows[nrows];
    char path[4096];
    strcpy(r->name, name);
    snprintf(path, sizeof path, "%s/%s.weights.safetensors", data_dir, name);
    if (bench_tensors_load(&r->weights, path)) return NULL;
    snprintf(path, sizeof path, "%s/%s.io.safetensors", data_dir, name);
    if (bench_tensors_load(&r->io, path)) return NULL;
    r->x_count = bench_tensor_count(&r->io, "x");
    r->y_count = bench_tensor_count(&r->io, "ref");
    r->x = bench_tensor(&r->io, "x", r->x_count);
    r->ref = bench_tensor(&r->io, "ref", r->y_count);
    if (!r->x || !r->ref) return NULL;
    return &rows[nrows++];
}

static const bench_impl *find_impl(const char *row, const char *system)
{
    const bench_impl *tables[] = {bench_axc_rows, bench_blas_rows, bench_dnnl_rows};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const bench_impl *i = tables[t]; i->row; i++)
            if (!strcmp(i->row, row) && !strcmp(i->system, system)) return i;
    return NULL;
}

/* The system's implementation of the row, set up on first use; NULL with
 * *why set when there is none or it cannot run. */
static prepared *prepare(const char *row, const char *system, const char **why)
{
    const bench_impl *impl = find_impl(row, system);
    row_data *r = impl ? find_row(row) : NULL;
    *why = !impl ? "not implemented" : !r ? "missing data files" : NULL;
#ifndef BENCH_AXRT_SET_THREADS
    if (!*why && threads > 1 && !strcmp(system, "axc")) *why = "libaxrt has no axrt_set_threads";
#endif
    if (*why) return NULL;
    for (int i = 0; i < nimpls; i++)
        if (impls[i].impl == impl) return (*why = impls[i].setup_error) ? NULL : &impls[i];
    prepared *p = &impls[nimpls++];
    p->impl = impl;
    p->y = bench_floats(r->y_count);
    p->setup_error = impl->setup(&r->weights, r->x, p->y);
    return (*why = p->setup_error) ? NULL : p;
}

/* max |y - ref| / max |ref|; NaN anywhere makes it infinite. */
static double relative_error(const float *y, const float *ref, size_t n)
{
    double err = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)y[i] - (double)ref[i]);
        if (d != d) return INFINITY;
        err = d > err ? d : err;
        scale = fabs((double)ref[i]) > scale ? fabs((double)ref[i]) : scale;
    }
    return scale > 0 ? err / scale : err;
}

static void check(const char *row, const char *system)
{
    const char *why;
    prepared *p = prepare(row, system, &why);
    if (!p) { printf("n/a %s\n", why); return; }
    row_data *r = find_row(row);
    memset(p->y, 0, r->y_count * sizeof *p->y);
    p->impl->run();
    double rel = relative_error(p->y, r->ref, r->y_count);
    printf("%s %.3g\n", rel <= TOLERANCE ? "ok" : "fail", rel);
}

static void time_runs(const char *row, const char *system, long iters)
{
    const char *why;
    prepared *p = prepare(row, system, &why);
    if (!p || iters < 1) { printf("n/a %s\n", p ? "no iterations" : why); return; }
    double *t = malloc((size_t)iters * sizeof *t);
    if (!t) { printf("n/a out of memory\n"); return; }
    p->impl->run();
    for (long i = 0; i < iters; i++) {
        double t0 = bench_now_ns();
        p->impl->run();
        t[i] = bench_now_ns() - t0;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    printf("%.0f\n", iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2);
    free(t);
}

/* Which kernel path libaxrt runs, when it says. */
static const char *axrt_isa(void)
{
#ifdef BENCH_AXRT_ISA_NAME
    return axrt_isa_name();
#else
    return "not reported (this libaxrt has no axrt_isa_name())";
#endif
}

static void dispatch(char *line)
{
    char *cmd = strtok(line, " \t\n"), *row = strtok(NULL, " \t\n"), *system = strtok(NULL, " \t\n");
    char *iters = strtok(NULL, " \t\n");
    if (!cmd) printf("error empty command\n");
    else if (!strcmp(cmd, "info")) printf("%s | %s\n", bench_blas_version(), bench_dnnl_version());
    else if (!strcmp(cmd, "isa")) printf("%s\n", axrt_isa());
    else if (!strcmp(cmd, "peak")) printf("%.1f\n", bench_fma_peak_gflops());
    else if (!strcmp(cmd, "triad")) printf("%.1f\n", bench_triad_gbps());
    else if (!strcmp(cmd, "check") && system) check(row, system);
    else if (!strcmp(cmd, "time") && iters) time_runs(row, system, atol(iters));
    else printf("error unknown command '%s'\n", cmd);
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) < 1) {
        fprintf(stderr, "usage: %s DATA_DIR THREADS (commands on stdin)\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];
    threads = atoi(argv[2]);
    bench_blas_threads(threads);
#ifdef BENCH_AXRT_SET_THREADS
    axrt_set_threads(threads);
#endif
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        dispatch(line);
        fflush(stdout);
    }
    return 0;
}
