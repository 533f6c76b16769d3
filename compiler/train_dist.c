/* train_dist.c — `mpirun -np N axc train ...`: data-parallel training
 * (docs/distributed.md, interface §8 "Data parallel").
 *
 * axc does not link MPI: under mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE in
 * the environment) it opens libaxrt_mpi.so with dlopen ($AXRT_MPI_LIB, else
 * the lib/ beside axc's bin/, else the loader's search path) and says so
 * clearly when it cannot.  Then, with B the model's declared batch:
 *   - rank r reads the .npy header and, with pread, only its rows: of every
 *     global step's N x B consecutive samples the r-th block of B (no rank
 *     reads the whole file); a sample count that is not a multiple of N x B,
 *     or fewer samples than that, is refused before any step;
 *   - every rank agrees on the outcome of loading before the first step
 *     (a rank that failed makes all stop, none waits for it);
 *   - every gradient (and the loss) is replaced by the mean over the ranks
 *     (libaxrt_mpi: the sum divided by N; each rank's is the mean over its
 *     batch), so every rank applies the identical update: the compiled step
 *     (train_exec.c) hands each gradient to the exchange as its backward
 *     pass completes it (axc_dist_exchange_*: buckets summed while the
 *     backward goes on), the interpreter's loop (train.c) all of them, in
 *     Float64, after its backward pass (axc_dist_reduce);
 *   - only rank 0 prints progress and writes --save-weights. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "train_dist.h"

/* axrt_mpi_stats, as runtime/mpi/axrt_mpi.h lays it out. */
typedef struct axrt_mpi_stats_view {
    double ready_seconds, wait_seconds;
    long buckets_in_backward, buckets_at_finish;
} axrt_mpi_stats_view;

/* The entry points of runtime/mpi/axrt_mpi.h that axc uses (the compiler
 * does not include the runtime's MPI header: layers.sh keeps MPI out). */
typedef struct mpi_api {
    int (*init)(void);
    int (*rank)(void);
    int (*size)(void);
    int (*max_int)(int *);
    int (*sum_f64)(double *, size_t);
    int (*finalize)(void);
    const char *(*error)(void);
    void *(*exchange_open)(void *, size_t, axrt_dtype, size_t);
    void (*exchange_ready)(void *, size_t, size_t);
    int (*exchange_finish)(void *);
    void (*exchange_close)(void *);
    axrt_mpi_stats_view (*exchange_stats)(const void *);
} mpi_api;

struct axc_dist {
    void *lib;
    mpi_api mpi;
    int rank, size;
    double *flat;        /* every gradient and the loss, Float64, for the exchange */
    size_t flat_count;
    void *exchange;
};

const char *axc_dist_launcher(void)
{
    if (getenv("OMPI_COMM_WORLD_SIZE")) return "OMPI_COMM_WORLD_SIZE";
    if (getenv("PMI_SIZE")) return "PMI_SIZE";
    return NULL;
}

/* libaxrt_mpi.so: $AXRT_MPI_LIB, else beside axc (BIN/../lib), else by name. */
static void *open_library(char *tried, size_t room)
{
    const char *env = getenv("AXRT_MPI_LIB");
    if (env && *env) {
        snprintf(tried, room, "%s", env);
        return dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            char path[PATH_MAX + 32];
            snprintf(path, sizeof path, "%s/../lib/libaxrt_mpi.so", exe);
            void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
            if (lib) return lib;
            snprintf(tried, room, "%s", path);
        }
    }
    return dlopen("libaxrt_mpi.so", RTLD_NOW | RTLD_GLOBAL);
}

static int bind(axc_dist *d)
{
    struct { void **slot; const char *name; } syms[] = {
        {(void **)&d->mpi.init, "axrt_mpi_init"}, {(void **)&d->mpi.rank, "axrt_mpi_rank"},
        {(void **)&d->mpi.size, "axrt_mpi_size"}, {(void **)&d->mpi.max_int, "axrt_mpi_max_int"},
        {(void **)&d->mpi.sum_f64, "axrt_mpi_sum_f64"}, {(void **)&d->mpi.finalize, "axrt_mpi_finalize"},
        {(void **)&d->mpi.error, "axrt_mpi_error"}, {(void **)&d->mpi.exchange_open, "axrt_mpi_exchange_open"},
        {(void **)&d->mpi.exchange_ready, "axrt_mpi_exchange_ready"},
        {(void **)&d->mpi.exchange_finish, "axrt_mpi_exchange_finish"},
        {(void **)&d->mpi.exchange_close, "axrt_mpi_exchange_close"},
        {(void **)&d->mpi.exchange_stats, "axrt_mpi_exchange_stats"},
    };
    for (size_t k = 0; k < sizeof syms / sizeof syms[0]; k++)
        if (!(*syms[k].slot = dlsym(d->lib, syms[k].name))) {
            axc_fail("libaxrt_mpi.so lacks %s (an older build?)", syms[k].name);
            return AXC_EUSAGE;
        }
    return AXC_OK;
}

int axc_dist_open(axc_dist **out)
{
    *out = NULL;
    const char *launcher = axc_dist_launcher();
    if (!launcher) return AXC_OK;
    axc_dist *d = calloc(1, sizeof *d);
    if (!d) ax_out_of_memory(0);
    char tried[PATH_MAX + 32] = "libaxrt_mpi.so";
    d->lib = open_library(tried, sizeof tried);
    if (!d->lib) {
        axc_fail("'axc train' runs under mpirun (%s is set) but cannot open libaxrt_mpi.so (%s: %s); build axc "
                 "where mpi.h is found (Debian: libopenmpi-dev) or point AXRT_MPI_LIB at the library",
                 launcher, tried, dlerror());
        free(d);
        return AXC_EUSAGE;
    }
    if (bind(d) || d->mpi.init()) {
        if (d->mpi.error) axc_fail("%s", d->mpi.error());   /* libaxrt_mpi's message names the MPI call */
        dlclose(d->lib);
        free(d);
        return AXC_EUSAGE;
    }
    d->rank = d->mpi.rank();
    d->size = d->mpi.size();
    /* one rank speaks: progress lines from rank 0 only (errors from all) */
    if (d->rank != 0 && !freopen("/dev/null", "w", stdout))
        clearerr(stdout);   /* not silenced: its progress lines repeat rank 0's, harmless */
    *out = d;
    return AXC_OK;
}

int axc_dist_rank(const axc_dist *d) { return d ? d->rank : 0; }

/* Reads count bytes at offset of fd into buf; -1 on error or a short file. */
static int pread_exactly(int fd, uint8_t *buf, size_t count, off_t offset)
{
    size_t done = 0;
    while (done < count) {
        ssize_t n = pread(fd, buf + done, count - done, offset + (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { if (n == 0) errno = EIO; return -1; }
        done += (size_t)n;
    }
    return 0;
}

/* The .npy header of fd (a regular file of file_size bytes): *t's dtype and
 * shape, *data_offset. */
static int read_header(int fd, size_t file_size, const char *what, const char *path, tf_tensor *t,
                       size_t *data_offset)
{
    size_t len = file_size < (1u << 20) ? file_size : (1u << 20);
    uint8_t *head = malloc(len + 1);
    if (!head) ax_out_of_memory(0);
    char err[256];
    int rc = AXC_OK;
    if (pread_exactly(fd, head, len, 0)) {
        axc_fail("%s: cannot read '%s': %s", what, path, strerror(errno));
        rc = AXC_EUSAGE;
    } else if (len < 6 || memcmp(head, "\x93NUMPY", 6)) {
        axc_fail("%s '%s' is not a .npy file (no \\x93NUMPY magic at its start)", what, path);
        rc = AXC_EINPUT;
    } else if (tf_npy_parse_header(head, len, file_size, t, data_offset, err, sizeof err)) {
        axc_fail("%s '%s': %s", what, path, err);
        rc = AXC_EINPUT;
    }
    free(head);
    return rc;
}

/* Of S samples (rows of row_bytes) at data_offset: this rank's blocks of B,
 * the r-th of every N x B, into one buffer; t then describes them. */
static int read_shard(const axc_dist *d, int fd, const char *what, const char *path, tf_tensor *t,
                      size_t data_offset, int64_t batch)
{
    const int64_t samples = t->shape[0], global = batch * d->size, steps = samples / global;
    const size_t row_bytes = t->nbytes / (size_t)samples, block = row_bytes * (size_t)batch;
    uint8_t *rows = malloc(block * (size_t)steps + 1);
    if (!rows) ax_out_of_memory(0);
    for (int64_t s = 0; s < steps; s++) {
        const int64_t first = s * global + (int64_t)d->rank * batch;
        if (pread_exactly(fd, rows + (size_t)s * block, block, (off_t)(data_offset + (size_t)first * row_bytes))) {
            axc_fail("%s: cannot read '%s': %s", what, path, strerror(errno));
            free(rows);
            return AXC_EUSAGE;
        }
    }
    t->shape[0] = steps * batch;
    t->nbytes = block * (size_t)steps;
    t->data = rows;
    return AXC_OK;
}

int axc_dist_load_batches(const axc_dist *d, const ir_node *n, const char *what, const char *path,
                          axc_batch_file *f)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { axc_fail("%s: cannot read '%s': %s", what, path, strerror(errno)); return AXC_EUSAGE; }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        axc_fail("%s '%s' is not a regular file (a .npy file is expected)", what, path);
        close(fd);
        return AXC_EUSAGE;
    }
    tf_tensor t;
    size_t data_offset = 0;
    int rc = read_header(fd, (size_t)st.st_size, what, path, &t, &data_offset);
    const int64_t batch = n->shape[0], global = batch * d->size;
    if (!rc && t.rank > 0 && t.rank == n->rank && t.shape[0] < global) {
        axc_fail("%s '%s' holds %lld samples: fewer than one global step of %d ranks x batch %lld = %lld",
                 what, path, (long long)t.shape[0], d->size, (long long)batch, (long long)global);
        rc = AXC_EINPUT;
    } else if (!rc && t.rank > 0 && t.rank == n->rank && t.shape[0] % global) {
        axc_fail("%s '%s' holds %lld samples, not a multiple of the global batch %lld (%d ranks x batch %lld; "
                 "rank r takes the r-th %lld of every %lld)", what, path, (long long)t.shape[0], (long long)global,
                 d->size, (long long)batch, (long long)batch, (long long)global);
        rc = AXC_EINPUT;
    }
    if (!rc && t.rank > 0 && t.rank == n->rank && t.shape[0] > 0) rc = read_shard(d, fd, what, path, &t, data_offset, batch);
    close(fd);
    if (rc) return rc;
    rc = axc_train_batches(&t, n, what, path, f);   /* dims, dtype; converts */
    free((void *)t.data);
    return rc;
}

int axc_dist_agree(axc_dist *d, int rc)
{
    if (!d) return rc;
    int worst = rc;
    if (d->mpi.max_int(&worst)) {
        axc_fail("%s", d->mpi.error());
        return AXC_EUSAGE;
    }
    if (worst && !rc) axc_fail("rank %d: another rank could not start (its message says why); stopping", d->rank);
    return worst;
}

int axc_dist_reduce(axc_dist *d, const pass_trainer *t, void *const *out, double *loss, long step)
{
    const ir_graph *g = t->g;
    if (!d->flat) {
        d->flat_count = 1;
        for (int i = 0; i < t->nparams; i++)
            if (t->grad_out[i] >= 0) d->flat_count += (size_t)ir_numel(&g->nodes[t->grads[i]]);
        d->flat = malloc(sizeof *d->flat * d->flat_count);
        if (!d->flat) ax_out_of_memory(0);
        d->exchange = d->mpi.exchange_open(d->flat, sizeof *d->flat * d->flat_count, AXRT_F64, 0);
        if (!d->exchange) { axc_fail("%s", d->mpi.error()); return AXC_EUSAGE; }
    }
    size_t at = 0;
    for (int i = 0; i < t->nparams; i++) {
        if (t->grad_out[i] < 0) continue;
        const ir_node *gn = &g->nodes[t->grads[i]];
        tf_convert(d->flat + at, AXRT_F64, out[t->grad_out[i]], gn->dtype, (size_t)ir_numel(gn));
        at += (size_t)ir_numel(gn);
    }
    d->flat[at] = *loss;
    /* the interpreter has every gradient at once: one hand-off */
    d->mpi.exchange_ready(d->exchange, 0, sizeof *d->flat * d->flat_count);
    if (d->mpi.exchange_finish(d->exchange)) {
        /* libaxrt_mpi's message names the rank and the MPI call; the step
         * went to stderr with the others' progress, and nothing is written */
        (void)step;
        axc_fail("%s", d->mpi.error());
        return AXC_EUSAGE;
    }
    at = 0;
    for (int i = 0; i < t->nparams; i++) {
        if (t->grad_out[i] < 0) continue;
        const ir_node *gn = &g->nodes[t->grads[i]];
        tf_convert(out[t->grad_out[i]], gn->dtype, d->flat + at, AXRT_F64, (size_t)ir_numel(gn));
        at += (size_t)ir_numel(gn);
    }
    *loss = d->flat[at];
    return AXC_OK;
}

/* $AXC_BUCKET_BYTES: the exchange's bucket size (bytes, 64 to 2^30), else 0. */
static int bucket_bytes(size_t *bucket)
{
    const char *text = getenv("AXC_BUCKET_BYTES");
    if (!text || !*text) return AXC_OK;
    char *end;
    errno = 0;
    const unsigned long long value = strtoull(text, &end, 10);
    if (errno || *end || text[0] == '-' || value < 64 || value > (1ull << 30)) {
        axc_fail("AXC_BUCKET_BYTES='%s' is not a byte count from 64 to 1073741824", text);
        return AXC_EUSAGE;
    }
    *bucket = (size_t)value;
    return AXC_OK;
}

int axc_dist_exchange_open(axc_dist *d, void *grads, size_t bytes, axrt_dtype dtype, axc_dist_ready_fn *ready,
                           void **user)
{
    size_t bucket = 0;   /* libaxrt_mpi's default, 1 MiB */
    int rc = bucket_bytes(&bucket);
    if (rc) return rc;
    if (!d->exchange) d->exchange = d->mpi.exchange_open(grads, bytes, dtype, bucket);
    if (!d->exchange) { axc_fail("%s", d->mpi.error()); return AXC_EUSAGE; }
    *ready = d->mpi.exchange_ready;
    *user = d->exchange;
    return AXC_OK;
}

int axc_dist_exchange_finish(axc_dist *d, double *loss)
{
    /* libaxrt_mpi's message names the rank and the MPI call */
    if (d->mpi.exchange_finish(d->exchange) || d->mpi.sum_f64(loss, 1)) {
        axc_fail("%s", d->mpi.error());
        return AXC_EUSAGE;
    }
    *loss /= (double)d->size;
    return AXC_OK;
}

void axc_dist_exchange_stats(const axc_dist *d, double *wait_seconds, long *in_backward, long *at_finish)
{
    const axrt_mpi_stats_view st = d->mpi.exchange_stats(d->exchange);
    *wait_seconds = st.wait_seconds, *in_backward = st.buckets_in_backward, *at_finish = st.buckets_at_finish;
}

void axc_dist_close(axc_dist *d)
{
    if (!d) return;
    if (d->exchange) d->mpi.exchange_close(d->exchange);
    free(d->flat);
    d->mpi.finalize();
    /* the library stays loaded: Open MPI may still run exit handlers from it */
    free(d);
}
