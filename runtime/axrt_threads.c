/* axrt_threads.c — the host part of libaxrt that runs kernels on several
 * threads (axrt.h: axrt_set_threads): installs a parallel-for hook in the
 * core that splits [0, count) into one contiguous range per thread, the
 * calling thread taking the first.
 *
 * The other threads are a pool started on first use and kept until the
 * count changes: creating threads per call cost more than a small layer's
 * work (R2, a batch-32 MLP, ran slower on 2 threads than on 1).  A call
 * publishes its job under a new generation number; workers spin briefly
 * after each job (the next layer's call usually comes within microseconds),
 * then sleep on a condition variable.  The caller runs the first range and
 * waits for the others the same way.  One call at a time owns the pool; a
 * call that finds it busy (another application thread, or a range function
 * that itself splits work) runs all of its work on the calling thread.
 * Results do not depend on the split, so they are the same either way.
 * With no POSIX threads (firmware, or -DAXRT_NO_THREADS) only n <= 1 is
 * accepted and the core stays single-threaded. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>

#include "axrt.h"

#if defined(__unix__) && !defined(AXRT_NO_THREADS)
#include <pthread.h>
#include <sched.h>

#define MAX_THREADS 256
/* Polls before sleeping: some tens of microseconds, long enough for the
 * next layer's call, short enough not to hold a core that an
 * oversubscribed machine needs.  The first PAUSE_POLLS pause (40 to 150
 * cycles each on current x86 cores); the later ones yield the core (a
 * system call, well under a microsecond when no other thread wants it).
 * When the machine has more runnable threads than cores, the caller and a
 * worker can share one core: a pure spin held it for the whole spin (some
 * 60 us per call on a loaded 2-core machine: R1 took 65 us on 2 threads
 * instead of 9 on one) while the thread it waited for could not run. */
#define SPIN_POLLS 300
#define PAUSE_POLLS 20

static int thread_count = 1;

typedef struct pool {
    pthread_mutex_t lock;      /* guards sleeping and waking */
    pthread_cond_t wake, done;
    pthread_mutex_t owner;     /* held by the call using the pool */
    unsigned long generation;  /* bumped per job (atomic) */
    unsigned long born;        /* the generation new workers start from */
    int pending;               /* workers yet to finish the current job (atomic) */
    int quit;                  /* workers leave (set under lock) */
    int workers;               /* started; worker i runs range i, if any */
    axrt_range_fn *fn;
    void *ctx;
    size_t count, parts;
    pthread_t threads[MAX_THREADS];
} pool;

static pool the_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                        PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, {0}};

static void cpu_relax(int poll)
{
    if (poll >= PAUSE_POLLS) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void run_part(const pool *p, size_t i)
{
    size_t begin = p->count * i / p->parts, end = p->count * (i + 1) / p->parts;
    if (begin < end) p->fn(p->ctx, begin, end);
}

/* Waits for a generation other than seen; returns it (quit: 0). */
static unsigned long next_job(pool *p, unsigned long seen)
{
    for (int i = 0; i < SPIN_POLLS; i++) {
        unsigned long g = __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE);
        if (g != seen) return g;
        cpu_relax(i);
    }
    pthread_mutex_lock(&p->lock);
    while (!p->quit && __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) == seen)
        pthread_cond_wait(&p->wake, &p->lock);
    unsigned long g = p->quit ? 0 : p->generation;
    pthread_mutex_unlock(&p->lock);
    return g;
}

/* Every worker acknowledges every job, with a range or without, so none
 * can still be reading a job when the next one is written. */
static void *worker(void *arg)
{
    pool *p = &the_pool;
    const size_t index = (size_t)arg;
    unsigned long seen = p->born;
    while ((seen = next_job(p, seen)) != 0) {
        if (index < p->parts) run_part(p, index);
        if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

static void wait_done(pool *p)
{
    for (int i = 0; i < SPIN_POLLS; i++) {
        if (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) == 0) return;
        cpu_relax(i);
    }
    pthread_mutex_lock(&p->lock);
    while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* Starts workers 1 .. thread_count - 1 (fewer if the system refuses). */
static void start_workers(pool *p)
{
    p->born = p->generation;
    while (p->workers < thread_count - 1 &&
           pthread_create(&p->threads[p->workers], NULL, worker, (void *)(size_t)(p->workers + 1)) == 0)
        p->workers++;
}

static void stop_workers(pool *p)
{
    pthread_mutex_lock(&p->owner);
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->workers; i++) pthread_join(p->threads[i], NULL);
    p->workers = 0, p->quit = 0;
    pthread_mutex_unlock(&p->owner);
}

/* Ranges of near-equal length, one per thread (fewer when count is
 * smaller): range 0 here, range i on worker i. */
static void parallel_threads(axrt_range_fn *fn, void *ctx, size_t count)
{
    pool *p = &the_pool;
    if (pthread_mutex_trylock(&p->owner) != 0) {
        fn(ctx, 0, count);
        return;
    }
    start_workers(p);
    size_t parts = (size_t)p->workers + 1 < count ? (size_t)p->workers + 1 : count;
    if (parts <= 1) {
        if (count) fn(ctx, 0, count);
        pthread_mutex_unlock(&p->owner);
        return;
    }
    p->fn = fn, p->ctx = ctx, p->count = count, p->parts = parts;
    __atomic_store_n(&p->pending, p->workers, __ATOMIC_RELAXED);
    pthread_mutex_lock(&p->lock);
    unsigned long g = p->generation + 1;
    __atomic_store_n(&p->generation, g ? g : 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    run_part(p, 0);
    wait_done(p);
    pthread_mutex_unlock(&p->owner);
}

int axrt_set_threads(int n)
{
    n = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
    if (n != thread_count) stop_workers(&the_pool);
    thread_count = n;
    axrt_set_parallel(thread_count > 1 ? parallel_threads : NULL);
    return 0;
}

int axrt_threads(void) { return thread_count; }

#else

int axrt_set_threads(int n) { return n <= 1 ? 0 : -1; }

int axrt_threads(void) { return 1; }

#endif
