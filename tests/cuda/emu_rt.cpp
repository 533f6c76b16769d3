/* emu_rt.cpp — libaxrt_gpu's API (runtime/gpu/axrt_gpu.h) on the CPU for
 * the tests: the parameter block and the arena in host memory, each launch
 * run block by block through emu.h, the kernels found by name in the table
 * the test appends to the kernel source (axk_table).  A block's threads are
 * coroutines (ucontext) of the one OS thread: a thread per GPU thread, as
 * this emulator first had, cost a pthread_create per thread per block and
 * made the cuda suite spend most of its CPU time in the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <vector>
#include "axrt_gpu.h"
#include "emu.h"

axk_dim3 threadIdx;
axk_dim3 blockIdx;
struct axk_entry { const char *name; void *fn; };
extern axk_entry axk_table[];

struct axrt_gpu { const axrt_gpu_model *m; unsigned char *params, *arena; std::vector<void *> fns; };

axrt_gpu *axrt_gpu_init(const axrt_gpu_model *m, char *err, size_t errlen)
{
    axrt_gpu *g = new axrt_gpu;
    g->m = m;
    g->params = (unsigned char *)aligned_alloc(256, (m->param_bytes + 256) / 256 * 256);
    g->arena = (unsigned char *)aligned_alloc(256, (m->arena_bytes + 256) / 256 * 256);
    memset(g->arena, 0xA5, m->arena_bytes); /* uninitialised, as device memory */
    if (m->index_word) memset(g->arena + m->index_word - 1, 0, sizeof(int));
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

/* Every kernel takes 2 + inputs + outputs pointers; called with its own arity. */
template <int N> struct call;
#define AXK_CALL(N, ...)                                                                     \
    template <> struct call<N> {                                                             \
        static void run(void *f, void **a) { ((void (*)(__VA_ARGS__))f)(AXK_ARGS##N); }      \
    };
#define P void *
#define AXK_ARGS3 a[0], a[1], a[2]
#define AXK_ARGS4 AXK_ARGS3, a[3]
#define AXK_ARGS5 AXK_ARGS4, a[4]
#define AXK_ARGS6 AXK_ARGS5, a[5]
#define AXK_ARGS7 AXK_ARGS6, a[6]
#define AXK_ARGS8 AXK_ARGS7, a[7]
#define AXK_ARGS9 AXK_ARGS8, a[8]
#define AXK_ARGS10 AXK_ARGS9, a[9]
AXK_CALL(3, P, P, P)
AXK_CALL(4, P, P, P, P)
AXK_CALL(5, P, P, P, P, P)
AXK_CALL(6, P, P, P, P, P, P)
AXK_CALL(7, P, P, P, P, P, P, P)
AXK_CALL(8, P, P, P, P, P, P, P, P)
AXK_CALL(9, P, P, P, P, P, P, P, P, P)
AXK_CALL(10, P, P, P, P, P, P, P, P, P, P)
#undef P

static void run_kernel(void *fn, void **a, int n)
{
    switch (n) {
    case 3: call<3>::run(fn, a); break;
    case 4: call<4>::run(fn, a); break;
    case 5: call<5>::run(fn, a); break;
    case 6: call<6>::run(fn, a); break;
    case 7: call<7>::run(fn, a); break;
    case 8: call<8>::run(fn, a); break;
    case 9: call<9>::run(fn, a); break;
    case 10: call<10>::run(fn, a); break;
    default: abort();
    }
}

/* The block being run: its kernel and arguments, one context and stack per
 * thread (the stacks kept for the next block), which threads have returned,
 * and the one running now. */
static struct {
    void *fn; void **a; int n;
    std::vector<ucontext_t> ctx;
    std::vector<unsigned char *> stacks;
    std::vector<char> done;
    unsigned current;
    ucontext_t scheduler;
} blk;
static const size_t stack_bytes = 256 * 1024;

static void thread_main(int t)
{
    run_kernel(blk.fn, blk.a, blk.n);
    blk.done[t] = 1; /* returns to the scheduler through uc_link */
}

/* __syncthreads: back to the scheduler, which resumes this thread once
 * every other thread of the block has reached a barrier or returned. */
void axk_syncthreads(void) { swapcontext(&blk.ctx[blk.current], &blk.scheduler); }

/* One block of bs threads: each started, then the live ones resumed in
 * turn, one barrier's worth of work per pass, until all have returned. */
static void run_block(unsigned bs)
{
    while (blk.stacks.size() < bs) blk.stacks.push_back((unsigned char *)malloc(stack_bytes));
    blk.ctx.resize(bs);
    blk.done.assign(bs, 0);
    for (unsigned t = 0; t < bs; t++) {
        getcontext(&blk.ctx[t]);
        blk.ctx[t].uc_stack.ss_sp = blk.stacks[t];
        blk.ctx[t].uc_stack.ss_size = stack_bytes;
        blk.ctx[t].uc_link = &blk.scheduler;
        makecontext(&blk.ctx[t], (void (*)())thread_main, 1, (int)t);
    }
    for (unsigned live = bs; live > 0;)
        for (unsigned t = 0; t < bs; t++) {
            if (blk.done[t]) continue;
            blk.current = t;
            threadIdx.x = t; threadIdx.y = threadIdx.z = 0;
            swapcontext(&blk.scheduler, &blk.ctx[t]);
            if (blk.done[t]) live--;
        }
}

int axrt_gpu_forward(axrt_gpu *g, const void *const *io, void *stream)
{
    (void)stream;
    const axrt_gpu_model *m = g->m;
    void *a[10] = {g->arena, g->params};
    const int n = 2 + m->ninputs + m->noutputs;
    if (n > 10) return 1;
    for (int i = 2; i < n; i++) a[i] = (void *)io[i - 2];
    for (int l = 0; l < m->nlaunches; l++) {
        const axrt_gpu_launch *L = &m->launches[l];
        blk.fn = g->fns[l]; blk.a = a; blk.n = n;
        for (unsigned z = 0; z < L->grid[2]; z++)
            for (unsigned y = 0; y < L->grid[1]; y++)
                for (unsigned x = 0; x < L->grid[0]; x++) {
                    blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                    run_block(L->block[0]);
                }
    }
    return 0;
}

/* As libaxrt_gpu's: the index-error word read and cleared after the run. */
int axrt_gpu_index_error(axrt_gpu *g)
{
    if (!g->m->index_word) return 0;
    int *word = (int *)(g->arena + g->m->index_word - 1), flag = *word;
    *word = 0;
    return flag != 0;
}

int axrt_gpu_forward_host(axrt_gpu *g, const void *const *in, void *const *out)
{
    const void *io[AXRT_GPU_MAX_IO];
    for (int i = 0; i < g->m->ninputs; i++) io[i] = in[i];
    for (int i = 0; i < g->m->noutputs; i++) io[g->m->ninputs + i] = out[i];
    const int rc = axrt_gpu_forward(g, io, NULL);
    return rc ? rc : axrt_gpu_index_error(g) ? AXRT_GPU_ERR_INDEX : 0;
}

const char *axrt_gpu_error(const axrt_gpu *g) { (void)g; return ""; }
void axrt_gpu_free(axrt_gpu *g) { free(g->params); free(g->arena); delete g; }

/* One warp's mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32, every thread of
 * the block calling it together: the fragments go to a table, and each
 * thread reads A (16x16) and B (16x8) back through the PTX ISA's layouts
 * (A[r][k] in lane (r % 8) * 4 + (k % 8) / 2, register (r / 8) + 2 (k / 8),
 * half k % 2; B[k][c] in lane c * 4 + (k % 8) / 2, register k / 8, half
 * k % 2) and adds row gq (+8 for d[2], d[3]), columns 2 tq + (0, 1). */
static unsigned mma_a[1024][4], mma_b[1024][2];
static float bf16_half(unsigned word, int high)
{
    const unsigned bits = (high ? word >> 16 : word & 0xffffu) << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
void axk_mma_emu(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    const unsigned t = threadIdx.x, warp = t / 32 * 32, gq = t % 32 / 4, tq = t % 4;
    mma_a[t][0] = a0; mma_a[t][1] = a1; mma_a[t][2] = a2; mma_a[t][3] = a3;
    mma_b[t][0] = b0; mma_b[t][1] = b1;
    __syncthreads();
    for (int i = 0; i < 4; i++) {
        const unsigned r = gq + (i >= 2 ? 8 : 0), c = tq * 2 + (i & 1);
        float sum = 0.0f;
        for (unsigned k = 0; k < 16; k++) {
            const float a = bf16_half(mma_a[warp + (r % 8) * 4 + (k % 8) / 2][r / 8 + 2 * (k / 8)], k % 2);
            const float b = bf16_half(mma_b[warp + c * 4 + (k % 8) / 2][k / 8], k % 2);
            sum += a * b;
        }
        d[i] += sum;
    }
    __syncthreads();
}

/* --bench's device timing: the emulated forwards timed by the wall clock. */
int axrt_gpu_time_forward(axrt_gpu *g, const void *const *inputs, long warmup, long runs, double *us)
{
    void *outputs[AXRT_GPU_MAX_IO];
    std::vector<std::vector<unsigned char> > keep(g->m->noutputs);
    for (int i = 0; i < g->m->noutputs; i++) {
        keep[i].resize(g->m->io_bytes[g->m->ninputs + i] + 1);
        outputs[i] = keep[i].data();
    }
    for (long i = 0; i < warmup + runs; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (axrt_gpu_forward_host(g, inputs, outputs)) return 1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (i >= warmup) us[i - warmup] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    }
    return 0;
}
