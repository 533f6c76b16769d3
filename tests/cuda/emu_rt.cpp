/* emu_rt.cpp — libaxrt_gpu's API (runtime/gpu/axrt_gpu.h) on the CPU for
 * the tests: the parameter block and the arena in host memory, each launch
 * run block by block through emu.h, the kernels found by name in the table
 * the test appends to the kernel source (axk_table). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "axrt_gpu.h"
#include "emu.h"

thread_local axk_dim3 threadIdx;
axk_dim3 blockIdx;
pthread_barrier_t axk_barrier;
struct axk_entry { const char *name; void *fn; };
extern axk_entry axk_table[];

struct axrt_gpu { const axrt_gpu_model *m; unsigned char *params, *arena; std::vector<void *> fns; };

axrt_gpu *axrt_gpu_init(const axrt_gpu_model *m, char *err, size_t errlen)
{
    axrt_gpu *g = new axrt_gpu;
    g->m = m;
    g->params = (unsigned char *)aligned_alloc(256, (m->param_bytes + 256) / 256 * 256);
    g->arena = (unsigned char *)aligned_alloc(256, (m->arena_bytes + 256) / 256 * 256);
    memcpy(g->params, m->params, m->param_bytes);
    for (int i = 0; i < m->nlaunches; i++) {
        void *f = NULL;
        for (int t = 0; axk_table[t].name; t++)
            if (!strcmp(axk_table[t].name, m->launches[i].kernel)) f = axk_table[t].fn;
        if (!f) { snprintf(err, errlen, "no kernel %s", m->launches[i].kernel); return NULL; }
        g->fns.push_back(f);
    }
    return g;
}

typedef void (*k2)(void *, void *);
typedef void (*k3)(void *, void *, void *);
typedef void (*k4)(void *, void *, void *, void *);
typedef void (*k5)(void *, void *, void *, void *, void *);
typedef void (*k6)(void *, void *, void *, void *, void *, void *);

struct job { void *fn; void **a; int n; unsigned tx; };
static void *thread_main(void *p)
{
    job *j = (job *)p;
    threadIdx.x = j->tx; threadIdx.y = threadIdx.z = 0;
    void **a = j->a;
    switch (j->n) {
    case 3: ((k3)j->fn)(a[0], a[1], a[2]); break;
    case 4: ((k4)j->fn)(a[0], a[1], a[2], a[3]); break;
    case 5: ((k5)j->fn)(a[0], a[1], a[2], a[3], a[4]); break;
    case 6: ((k6)j->fn)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
    default: abort();
    }
    return NULL;
}

int axrt_gpu_forward(axrt_gpu *g, const void *const *io, void *stream)
{
    (void)stream;
    const axrt_gpu_model *m = g->m;
    void *a[8] = {g->arena, g->params};
    const int n = 2 + m->ninputs + m->noutputs;
    if (n > 6) return 1;
    for (int i = 2; i < n; i++) a[i] = (void *)io[i - 2];
    for (int l = 0; l < m->nlaunches; l++) {
        const axrt_gpu_launch *L = &m->launches[l];
        const unsigned bs = L->block[0];
        pthread_barrier_init(&axk_barrier, NULL, bs);
        std::vector<pthread_t> th(bs);
        std::vector<job> jobs(bs);
        for (unsigned z = 0; z < L->grid[2]; z++)
            for (unsigned y = 0; y < L->grid[1]; y++)
                for (unsigned x = 0; x < L->grid[0]; x++) {
                    blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                    for (unsigned t = 0; t < bs; t++) {
                        jobs[t] = job{g->fns[l], a, n, t};
                        pthread_create(&th[t], NULL, thread_main, &jobs[t]);
                    }
                    for (unsigned t = 0; t < bs; t++) pthread_join(th[t], NULL);
                }
        pthread_barrier_destroy(&axk_barrier);
    }
    return 0;
}

int axrt_gpu_forward_host(axrt_gpu *g, const void *const *in, void *const *out)
{
    const void *io[AXRT_GPU_MAX_IO];
    for (int i = 0; i < g->m->ninputs; i++) io[i] = in[i];
    for (int i = 0; i < g->m->noutputs; i++) io[g->m->ninputs + i] = out[i];
    return axrt_gpu_forward(g, io, NULL);
}

const char *axrt_gpu_error(const axrt_gpu *g) { (void)g; return ""; }
void axrt_gpu_free(axrt_gpu *g) { free(g->params); free(g->arena); delete g; }
