/* axrt_threads.c — the host part of libaxrt that runs kernels on several
 * threads (axrt.h: axrt_set_threads): installs a parallel-for hook in the
 * core that splits [0, count) into one contiguous range per thread, sized
 * by the threads' measured speeds (below), the calling thread's first;
 * where the kernel names a grain, a thread done early takes the tail of
 * another's range a grain at a time (stealing, below).
 *
 * The other threads are a pool started on first use and kept until the
 * count changes: creating threads per call cost more than a small layer's
 * work (R2, a batch-32 MLP, ran slower on 2 threads than on 1).  A call
 * publishes its job and wakes the workers with a new generation number;
 * workers poll for up to a millisecond of their own CPU time after each
 * job (the next layer's call comes within microseconds, or some tens of
 * them), then sleep on a condition variable.  Range i is thread i's (the
 * caller is 0), sized by that thread's share of the work (split_shares:
 * shares follow each thread's measured speed).  Its thread takes it from
 * the front and any other thread, its own done, from the back: whole
 * (grain 0) or a grain at a time, so a worker that has no core to run on
 * (a loaded machine) leaves its range to the caller instead of keeping it
 * waiting, and where the kernel names a grain (a run of items it can start
 * anywhere at little cost: a dense layer's block of columns) a thread that
 * lost its core for part of a job leaves the rest of its range to the
 * other.  The caller then waits until every item has run.  A range is one
 * atomic word, its begin and end (take_run): a thread late for its job
 * takes nothing of it once it is over, and what it takes of a later job is
 * that job's (the job's fields are read after the take, and the job cannot
 * end before the run is counted).  One call at a time owns the pool; a
 * call that finds it busy (another application thread, or a range function
 * that itself splits work) runs all of its work on the calling thread.
 * Results do not depend on the split, so they are the same either way.
 * With no POSIX threads (firmware, or -DAXRT_NO_THREADS) only n <= 1 is
 * accepted and the core stays single-threaded.
 *
 * Where the calling thread may run on exactly as many CPUs as there are
 * threads (taskset, a container's cpuset, a VM of that many vCPUs) each
 * worker is bound to one of them, never the caller's (bind_workers); the
 * environment's AXRT_BIND=0 leaves them unbound. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getcpu, CPU_SET, pthread_setaffinity_np */
#endif
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/* Sizing the ranges by speed.  On a shared machine one core can run at
 * half the other's speed for seconds (another tenant on its SMT sibling, or
 * a process on its vCPU), and equal ranges then make the faster thread wait
 * for the slower one at every layer: ResNet-18 and EfficientNet-B0 on 2
 * threads had medians 1.8 and 2.1 times their fastest runs in one `make
 * bench`, slower than on 1 thread.
 * Cutting the work into more, smaller ranges to balance it costs each range
 * a pass over the layer's weights (BERT's layer 4-22 % slower with 2 or 4
 * ranges a thread); so each thread keeps one range, sized by its share.
 * Shares are kept per job shape (range function and item count: a layer of
 * a model, called again at every inference), as items differ in cost by
 * layer (a partial last tile, padding rows): with one set of shares for all
 * jobs each layer's imbalance moved the next layer's split (a quiet run of
 * MiniLM ended at 58 : 42).  After a job whose ranges all ran on their own
 * threads for SHARE_MIN_NS or longer, each share moves SHARE_STEP of the
 * way to its thread's part of the summed speed (items per ns), that part
 * taken within SHARE_CLAMP times the equal share either way.  Jobs of more than
 * SPLIT_MAX_PARTS ranges, and shapes not (or no longer) in the table of
 * SPLIT_SHAPES, split equally. */
#define SHARE_MIN_NS 10000LL
#define SHARE_STEP 0.25
#define SHARE_CLAMP 2.0
#define SPLIT_MAX_PARTS 8
#define SPLIT_SHAPES 256

/* a job shape's shares (all 0: not measured yet) */
typedef struct split_shape {
    axrt_range_fn *fn;
    size_t count;
    double share[SPLIT_MAX_PARTS];
} split_shape;

/* what one thread ran of the current job */
typedef struct slot_run {
    size_t items;
    long long ns;
} slot_run;

typedef struct pool {
    pthread_mutex_t lock;      /* guards sleeping and waking */
    pthread_cond_t wake, done_cond;
    pthread_mutex_t owner;     /* held by the call using the pool */
    unsigned long generation;  /* bumped per job (atomic) */
    unsigned long long span[MAX_THREADS]; /* range i's items not taken: begin << 32 | end (atomic) */
    size_t done;               /* items of the job run (atomic) */
    int quit;                  /* workers leave (set under lock) */
    int workers;               /* started */
    axrt_range_fn *fn;         /* the job: written before its spans open it */
    void *ctx;
    size_t count;
    size_t grain;              /* items a take (0: the whole range) (atomic) */
    size_t parts;              /* the job's ranges (atomic) */
    split_shape shapes[SPLIT_SHAPES]; /* by job shape, direct-mapped (job_shape) */
    slot_run ran[MAX_THREADS]; /* written by thread i before it counts its items done */
    unsigned long started_at[MAX_THREADS]; /* thread i's (from 1) generation when started */
    pthread_t threads[MAX_THREADS];
    int bound;                 /* workers bound to cpu[] (bind_workers) */
    int spare;                 /* the bound set's CPU no worker has */
    int cpu[MAX_THREADS];      /* worker i's CPU (from 0) */
} pool;

static pool the_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                        PTHREAD_MUTEX_INITIALIZER, 0, {0}, 0, 0, 0, NULL, NULL, 0, 0, 0, {{NULL, 0, {0}}}, {{0, 0}}, {0}, {0},
                        0, 0, {0}};

/* Binding the workers.  A worker asleep (after WORKER_SPIN_NS without a
 * job) is woken by the caller, and Linux may queue it on the caller's own
 * CPU: under KVM a halted vCPU does not count as idle to the waker's
 * search for one (it reads as preempted), so the wakee lands on the
 * waker's.  The caller, having run its own range, then claims the worker's
 * too and never leaves its core, and the worker waits there until the
 * load balancer moves one of them: BERT's layer at 2 threads (taskset -c
 * 0,1, Emerald Rapids VM) ran its first 7 to 17 jobs of 123 on one core,
 * 2 to 5 whole runs of 41 at one thread's speed; a bench block, which
 * starts after 0.25 s idle, began so every time.  Bound, a worker wakes on
 * its own CPU.  Only where the caller may run on exactly as many CPUs as
 * there are threads: there one thread a CPU is the only placement, where
 * binding on a larger machine would put every process's workers on the
 * same CPUs.  The caller is the application's thread and stays unbound; a
 * caller found on a worker's CPU at a job's start trades places with it
 * (keep_off_caller). */
#if defined(__linux__) && defined(CPU_SET)
static void bind_thread(pthread_t t, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(t, sizeof one, &one); /* refused: the worker stays where it is */
}

/* Whether workers 1 .. thread_count - 1 are to be bound: then p->cpu and
 * p->spare hold their CPUs and the caller's. */
static int bind_workers(pool *p)
{
    const char *env = getenv("AXRT_BIND");
    cpu_set_t set;
    int n = 0;
    p->spare = sched_getcpu();
    if ((env && !strcmp(env, "0")) || p->spare < 0 || sched_getaffinity(0, sizeof set, &set) != 0 ||
        CPU_COUNT(&set) != thread_count || !CPU_ISSET(p->spare, &set))
        return 0;
    for (int c = 0; c < CPU_SETSIZE && n < thread_count - 1; c++)
        if (CPU_ISSET(c, &set) && c != p->spare) p->cpu[n++] = c;
    return n == thread_count - 1;
}

/* A caller that moved onto a bound worker's CPU gives it the CPU it left. */
static void keep_off_caller(pool *p)
{
    const int here = p->bound ? sched_getcpu() : -1;
    if (here < 0 || here == p->spare) return;
    for (int i = 0; i < p->workers; i++)
        if (p->cpu[i] == here) {
            p->cpu[i] = p->spare, p->spare = here;
            bind_thread(p->threads[i], p->cpu[i]);
            return;
        }
}
#else
#define bind_thread(t, cpu) ((void)(t), (void)(cpu))
#define bind_workers(p) 0
#define keep_off_caller(p) ((void)(p))
#endif

/* Clock id in nanoseconds, or -1 where that clock is unavailable. */
static long long clock_ns(clockid_t id)
{
    struct timespec t;
    if (clock_gettime(id, &t) != 0)
        return -1;
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The calling thread's CPU time in nanoseconds, or -1 (clock_ns). */
static long long thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

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

#define SPAN(begin, end) ((unsigned long long)(begin) << 32 | (unsigned long long)(end))
#define SPAN_MAX 0xffffffffu /* items a job may have (more: the caller runs it) */

/* Items a take of rest open items: all of them with no grain; from the
 * front (a range's own thread) half of them in whole grains, at least one;
 * from the back (another thread) one grain.  A dense layer's range in
 * blocks of columns run one call each cost 2-2.5 % (a block's weight is
 * prefetched by the block before it in the same call, BERT's 768 -> 3072
 * and 2304 at one thread, a hook running each call's takes in turn); taken
 * by halves, the calls are few and the tail is still cut fine. */
static size_t take_size(size_t rest, size_t grain, int front)
{
    size_t n = grain;
    if (grain && front && rest / 2 > grain) n = rest / 2 - rest / 2 % grain;
    return grain && n < rest ? n : rest;
}

/* Takes a run of range i's open items (take_size), from its front (its own
 * thread) or its back (another).  Whether it took any; [*begin, *end) are
 * then this thread's to run. */
static int take_run(pool *p, size_t i, int front, size_t *begin, size_t *end)
{
    unsigned long long span = __atomic_load_n(&p->span[i], __ATOMIC_ACQUIRE), rest;
    const size_t grain = __atomic_load_n(&p->grain, __ATOMIC_RELAXED);
    size_t lo, hi, n;
    do {
        lo = (size_t)(span >> 32), hi = (size_t)(span & SPAN_MAX);
        if (lo >= hi) return 0;
        n = take_size(hi - lo, grain, front);
        rest = front ? SPAN(lo + n, hi) : SPAN(lo, hi - n);
    } while (!__atomic_compare_exchange_n(&p->span[i], &span, rest, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    *begin = front ? lo : hi - n, *end = front ? lo + n : hi;
    return 1;
}

/* Thread `self` runs what it can take of job generation g: its own range
 * from the front, then the others' from the back, until nothing is left;
 * the thread counting the last item wakes the caller.  A thread that read
 * an earlier generation takes nothing (its parts 0); one that read g late
 * takes only what the job then current has open. */
static void run_claims(pool *p, size_t self, unsigned long g)
{
    /* parts is read atomically: a thread late for job g may read it as the
       caller writes the next job's */
    const size_t parts = __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) == g ? __atomic_load_n(&p->parts, __ATOMIC_RELAXED) : 0;
    size_t begin, end;
    for (size_t k = 0; k < parts; k++) {
        const size_t i = (self + k) % parts;
        while (take_run(p, i, k == 0, &begin, &end)) {
            const size_t count = p->count; /* the job's: it cannot end before this run counts */
            const long long t0 = clock_ns(CLOCK_MONOTONIC);
            p->fn(p->ctx, begin, end);
            p->ran[self].items += end - begin, p->ran[self].ns += clock_ns(CLOCK_MONOTONIC) - t0;
            if (__atomic_add_fetch(&p->done, end - begin, __ATOMIC_ACQ_REL) == count) {
                pthread_mutex_lock(&p->lock);
                pthread_cond_signal(&p->done_cond);
                pthread_mutex_unlock(&p->lock);
            }
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

/* arg: the worker's index (thread index + 1). */
static void *worker(void *arg)
{
    pool *p = &the_pool;
    const size_t self = (size_t)arg;
    unsigned long seen = p->started_at[self];
    while ((seen = next_job(p, seen)) != 0) run_claims(p, self, seen);
    return NULL;
}

/* Waits until all count items of the job have run, polling SPIN_POLLS
 * times (spin_again), then sleeping. */
static void wait_done(pool *p, size_t count)
{
    spin s = spin_start(0);
    do {
        if (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) == count) return;
    } while (spin_again(&s));
    pthread_mutex_lock(&p->lock);
    while (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) != count)
        pthread_cond_wait(&p->done_cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* Starts workers 1 .. thread_count - 1 (fewer if the system refuses),
 * bound where bind_workers says so. */
static void start_workers(pool *p)
{
    if (p->workers == 0 && thread_count > 1) p->bound = bind_workers(p);
    while (p->workers < thread_count - 1) {
        p->started_at[p->workers + 1] = p->generation;
        if (pthread_create(&p->threads[p->workers], NULL, worker, (void *)(size_t)(p->workers + 1)) != 0)
            break;
        if (p->bound) bind_thread(p->threads[p->workers], p->cpu[p->workers]);
        p->workers++;
    }
}

static void stop_workers(pool *p)
{
    pthread_mutex_lock(&p->owner);
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->workers; i++) pthread_join(p->threads[i], NULL);
    p->workers = 0, p->quit = 0, p->bound = 0;
    memset(p->shapes, 0, sizeof p->shapes); /* other threads, other speeds */
    pthread_mutex_unlock(&p->owner);
}

/* The shares of job shape (fn, count) for parts ranges, taken over (and
 * reset) if another shape had its slot; NULL: split equally. */
static split_shape *job_shape(pool *p, axrt_range_fn *fn, size_t count, size_t parts)
{
    split_shape *s;
    if (parts > SPLIT_MAX_PARTS) return NULL;
    s = &p->shapes[((size_t)fn / 16 ^ count * 2654435761u) % SPLIT_SHAPES];
    if (s->fn != fn || s->count != count) {
        memset(s, 0, sizeof *s);
        s->fn = fn, s->count = count;
    }
    return s;
}

/* Range i's share of parts by shape (equal where not measured yet). */
static double share_of(const split_shape *shape, size_t i, size_t parts)
{
    return shape && shape->share[i] > 0 ? shape->share[i] : 1.0 / (double)parts;
}

/* Opens parts ranges of count items, sized by shape's shares (release: a
 * thread that takes from one sees the job's fields written before). */
static void split_spans(pool *p, const split_shape *shape, size_t parts, size_t count)
{
    double sum = 0, at = 0;
    size_t i, begin = 0, end;
    for (i = 0; i < parts; i++) sum += share_of(shape, i, parts);
    for (i = 0; i < parts; i++, begin = end) {
        at += share_of(shape, i, parts) / sum;
        end = i + 1 == parts ? count : (size_t)(at * (double)count + 0.5);
        if (end < begin) end = begin;
        __atomic_store_n(&p->span[i], SPAN(begin, end), __ATOMIC_RELEASE);
    }
}

/* x within SHARE_CLAMP times equal either way */
static double share_clamp(double x, double equal)
{
    return x < equal / SHARE_CLAMP ? equal / SHARE_CLAMP : x > equal * SHARE_CLAMP ? equal * SHARE_CLAMP : x;
}

/* After a job: moves shape's shares toward each thread's part of the
 * summed speed (items per ns of what it ran, its own range or others'),
 * where every thread ran items for SHARE_MIN_NS or longer. */
static void split_shares(pool *p, split_shape *shape, size_t parts)
{
    const double equal = 1.0 / (double)parts;
    double speed[SPLIT_MAX_PARTS], sum = 0;
    size_t i;
    if (!shape) return;
    for (i = 0; i < parts; i++) {
        const slot_run r = p->ran[i];
        if (r.ns < SHARE_MIN_NS || r.items == 0) return;
        speed[i] = (double)r.items / (double)r.ns, sum += speed[i];
    }
    for (i = 0; i < parts; i++) { /* a range that lost its core for a time slice: a bounded step */
        const double was = share_of(shape, i, parts);
        shape->share[i] = was + SHARE_STEP * (share_clamp(speed[i] / sum, equal) - was);
    }
}

/* One range per thread (fewer when count is smaller; split_spans), run
 * by the threads that take it (run_claims).  The job's fields and the done
 * count are written while no item of any job is open (the last call waited
 * for all of its items), then the spans open the job (release: a thread
 * that takes from one sees them) and the new generation wakes the
 * workers. */
static void parallel_threads(axrt_range_fn *fn, void *ctx, size_t count, size_t grain)
{
    pool *p = &the_pool;
    size_t i;
    if (count > SPAN_MAX || pthread_mutex_trylock(&p->owner) != 0) {
        fn(ctx, 0, count);
        return;
    }
    start_workers(p);
    keep_off_caller(p);
    const size_t parts = (size_t)p->workers + 1 < count ? (size_t)p->workers + 1 : count;
    if (parts <= 1) {
        if (count) fn(ctx, 0, count);
        pthread_mutex_unlock(&p->owner);
        return;
    }
    unsigned long g = p->generation + 1;
    g = g ? g : 1;
    p->fn = fn, p->ctx = ctx, p->count = count;
    __atomic_store_n(&p->grain, grain, __ATOMIC_RELAXED);
    __atomic_store_n(&p->parts, parts, __ATOMIC_RELAXED);
    __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
    split_shape *shape = job_shape(p, fn, count, parts);
    for (i = 0; i < parts; i++) p->ran[i].items = 0, p->ran[i].ns = 0;
    split_spans(p, shape, parts, count);
    pthread_mutex_lock(&p->lock);
    __atomic_store_n(&p->generation, g, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    run_claims(p, 0, g);
    wait_done(p, count);
    split_shares(p, shape, parts);
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
