/* axrt_threads.c — the host part of libaxrt that runs kernels on several
 * threads (axrt.h: axrt_set_threads): installs a parallel-for hook in the
 * core that splits [0, count) into one contiguous range per thread, the
 * calling thread taking the first.
 *
 * The other threads are a pool started on first use and kept until the
 * count changes: creating threads per call cost more than a small layer's
 * work (R2, a batch-32 MLP, ran slower on 2 threads than on 1).  A call
 * publishes its job and wakes the workers with a new generation number;
 * workers poll for up to a millisecond of their own CPU time after each
 * job (the next layer's call comes within microseconds, or some tens of
 * them), then sleep on a condition variable.  The ranges
 * are claimed, one at a time, by whichever thread comes first, the caller
 * included, so a worker that has no core to run on (a loaded machine)
 * leaves its range to the caller instead of keeping it waiting; the caller
 * then waits for the ranges others claimed, the same way.  A claim names
 * its job: the range counter and the range count of the job are one
 * atomic word, so a worker that wakes after its job is over claims nothing
 * of it, or a range of the next job, whose fields it then reads.  One call
 * at a time owns the pool; a
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
#include <time.h>

#define MAX_THREADS 256
/* How a thread waits.  The first PAUSE_POLLS polls pause (40 to 150
 * cycles each on current x86 cores: some 2-5 us in all); the later ones
 * yield the core (a system call, well under a microsecond when no other
 * thread wants it).  When the machine has more runnable threads than
 * cores, the caller and a worker can share one core: a pure spin held it
 * for the whole spin (some 60 us per call on a loaded 2-core machine: R1
 * took 65 us on 2 threads instead of 9 on one) while the thread it waited
 * for could not run.  A yield, though, lets any other runnable thread of
 * its core (a system daemon) run first, for up to a time slice, and the
 * caller then runs the worker's range itself: with 20 pauses, R7's 10 us
 * depthwise conv on 2 threads of an idle Xeon VM took 13-15 us at the
 * median (its minimum 8), with 100 it takes 9; on both cores loaded by
 * other work, R1's, R2's and R7's times on 2 threads are the same with 20
 * or 100.
 *
 * The caller waiting for its job's ranges polls SPIN_POLLS times, then
 * sleeps.  A worker waiting for the next job polls until it has spent
 * WORKER_SPIN_NS of its own CPU time so, then sleeps: a model's layers that
 * run on one thread (EfficientNet's squeeze-excitation: a pool, two small
 * dense layers, a scale, some 20 us) outlast a few hundred polls, and a
 * worker woken from sleep on a Xeon VM started its range some 60 us late,
 * later than the caller would have finished both ranges (the 7x7x1152->192
 * conv after such layers: 78 us on 2 threads, 140 us after a 40 us gap;
 * EfficientNet-B0 on 2 threads 5.0 -> 4.7 ms).  Counting its own CPU time,
 * not the clock, a worker on a loaded core, whose yields hand the core
 * over for a time slice, keeps polling while it costs the others little:
 * sleeping after 1 ms of the clock there took EfficientNet-B0 on 2
 * threads, both cores busy with other work, from 16 to 27 ms. */
#define SPIN_POLLS 300
#define PAUSE_POLLS 100
#define WORKER_SPIN_NS 1000000LL

static int thread_count = 1;

typedef struct pool {
    pthread_mutex_t lock;      /* guards sleeping and waking */
    pthread_cond_t wake, done;
    pthread_mutex_t owner;     /* held by the call using the pool */
    unsigned long generation;  /* bumped per job (atomic) */
    unsigned long long claim;  /* the job's ranges << 32 | the next range to claim (atomic) */
    size_t finished;           /* ranges of the job run to the end (atomic) */
    int quit;                  /* workers leave (set under lock) */
    int workers;               /* started */
    axrt_range_fn *fn;         /* the job: written before claim opens it */
    void *ctx;
    size_t count;
    pthread_t threads[MAX_THREADS];
} pool;

static pool the_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                        PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, NULL, NULL, 0, {0}};

/* The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID),
 * or -1 where that clock is unavailable. */
static long long thread_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return -1;
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One wait's polls so far, and the waiting thread's CPU time at its start
 * (-1: the wait counts SPIN_POLLS polls). */
typedef struct spin {
    long polls;
    long long start;
} spin;

static spin spin_start(int by_cpu_time)
{
    spin s = {0, by_cpu_time ? thread_cpu_ns() : -1};
    return s;
}

/* Pauses or yields once (see above); whether to poll again, else sleep:
 * until WORKER_SPIN_NS of the thread's CPU time have passed (the clock read
 * every 16 yields), or SPIN_POLLS polls where the wait counts them. */
static int spin_again(spin *s)
{
    long long now;
    if (s->polls++ < PAUSE_POLLS) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        return 1;
    }
    sched_yield();
    if (s->start < 0)
        return s->polls < SPIN_POLLS;
    if (s->polls % 16)
        return 1;
    now = thread_cpu_ns();
    return now < 0 ? s->polls < SPIN_POLLS : now - s->start <= WORKER_SPIN_NS;
}

/* Claims and runs ranges of the current job until none is left; the
 * thread finishing the last one wakes the caller. */
static void run_claims(pool *p)
{
    for (;;) {
        const unsigned long long c = __atomic_fetch_add(&p->claim, 1, __ATOMIC_ACQ_REL);
        const size_t parts = (size_t)(c >> 32), i = (size_t)(c & 0xffffffffu);
        if (i >= parts) return;
        const size_t begin = p->count * i / parts, end = p->count * (i + 1) / parts;
        if (begin < end) p->fn(p->ctx, begin, end);
        if (__atomic_add_fetch(&p->finished, 1, __ATOMIC_ACQ_REL) == parts) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

/* Waits for a generation other than seen, polling by its CPU time
 * (spin_again), then sleeping; returns it (quit: 0). */
static unsigned long next_job(pool *p, unsigned long seen)
{
    spin s = spin_start(1);
    do {
        unsigned long g = __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE);
        if (g != seen) return g;
    } while (spin_again(&s));
    pthread_mutex_lock(&p->lock);
    while (!p->quit && __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) == seen)
        pthread_cond_wait(&p->wake, &p->lock);
    unsigned long g = p->quit ? 0 : p->generation;
    pthread_mutex_unlock(&p->lock);
    return g;
}

/* arg: the generation current when the worker was started. */
static void *worker(void *arg)
{
    pool *p = &the_pool;
    unsigned long seen = (unsigned long)(size_t)arg;
    while ((seen = next_job(p, seen)) != 0) run_claims(p);
    return NULL;
}

/* Waits until all parts ranges of the job have run, polling SPIN_POLLS
 * times (spin_again), then sleeping. */
static void wait_done(pool *p, size_t parts)
{
    spin s = spin_start(0);
    do {
        if (__atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) == parts) return;
    } while (spin_again(&s));
    pthread_mutex_lock(&p->lock);
    while (__atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) != parts)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* Starts workers 1 .. thread_count - 1 (fewer if the system refuses). */
static void start_workers(pool *p)
{
    while (p->workers < thread_count - 1 &&
           pthread_create(&p->threads[p->workers], NULL, worker, (void *)(size_t)p->generation) == 0)
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
 * smaller), each run by the thread that claims it (run_claims).  The job's
 * fields and the finished count are written while no range of any job is
 * open (the last call waited for all of its ranges), then claim opens the
 * job (release: a claim that reads it sees them). */
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
    p->fn = fn, p->ctx = ctx, p->count = count;
    __atomic_store_n(&p->finished, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&p->claim, (unsigned long long)parts << 32, __ATOMIC_RELEASE);
    pthread_mutex_lock(&p->lock);
    unsigned long g = p->generation + 1;
    __atomic_store_n(&p->generation, g ? g : 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    run_claims(p);
    wait_done(p, parts);
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
