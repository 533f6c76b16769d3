/* axrt_threads.c — the host part of libaxrt that runs kernels on several
 * threads (axrt.h: axrt_set_threads): installs a parallel-for hook in the
 * core that splits [0, count) into one contiguous range per thread, the
 * calling thread taking the first.  Threads are started per call and
 * joined before it returns (no pool: nothing lives between calls).  With
 * no POSIX threads (firmware, or -DAXRT_NO_THREADS) only n <= 1 is
 * accepted and the core stays single-threaded. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>

#include "axrt.h"

#if defined(__unix__) && !defined(AXRT_NO_THREADS)
#include <pthread.h>

#define MAX_THREADS 256

static int thread_count = 1;

typedef struct range_job {
    axrt_range_fn *fn;
    void *ctx;
    size_t begin, end;
} range_job;

static void *run_range(void *arg)
{
    const range_job *job = arg;
    if (job->begin < job->end)
        job->fn(job->ctx, job->begin, job->end);
    return NULL;
}

/* Ranges of near-equal length, one per thread (fewer when count is
 * smaller); a thread that cannot start has its range run here. */
static void parallel_threads(axrt_range_fn *fn, void *ctx, size_t count)
{
    const size_t parts = (size_t)thread_count < count ? (size_t)thread_count : count;
    pthread_t threads[MAX_THREADS];
    range_job jobs[MAX_THREADS];
    int started[MAX_THREADS];
    size_t i;
    for (i = 0; i < parts; i++) {
        jobs[i].fn = fn, jobs[i].ctx = ctx;
        jobs[i].begin = count * i / parts, jobs[i].end = count * (i + 1) / parts;
        started[i] = i > 0 && pthread_create(&threads[i], NULL, run_range, &jobs[i]) == 0;
    }
    for (i = 0; i < parts; i++)
        if (!started[i])
            run_range(&jobs[i]);
    for (i = 1; i < parts; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
}

int axrt_set_threads(int n)
{
    thread_count = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
    axrt_set_parallel(thread_count > 1 ? parallel_threads : NULL);
    return 0;
}

int axrt_threads(void) { return thread_count; }

#else

int axrt_set_threads(int n) { return n <= 1 ? 0 : -1; }

int axrt_threads(void) { return 1; }

#endif
