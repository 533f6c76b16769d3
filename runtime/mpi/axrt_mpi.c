/* axrt_mpi.c — libaxrt_mpi (axrt_mpi.h; docs/distributed.md). */
#include "axrt_mpi.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char last_error[512];

const char *axrt_mpi_error(void) { return last_error; }

/* Records what MPI said about code (not MPI_SUCCESS) during `what`. */
static int failed(int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", code);
    int rank = -1, up = 0;
    MPI_Initialized(&up);
    if (up) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(last_error, sizeof last_error, "rank %d: %s failed: %s (did another rank die?)", rank, what, text);
    return -1;
}

int axrt_mpi_init(void)
{
    int done = 0, rc;
    MPI_Initialized(&done);
    if (!done && (rc = MPI_Init(NULL, NULL)) != MPI_SUCCESS) return failed(rc, "MPI_Init");
    rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return rc == MPI_SUCCESS ? 0 : failed(rc, "MPI_Comm_set_errhandler");
}

int axrt_mpi_rank(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int axrt_mpi_size(void)
{
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

int axrt_mpi_max_int(int *value)
{
    int rc = MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : failed(rc, "MPI_Allreduce (status)");
}

int axrt_mpi_sum_f64(double *values, size_t n)
{
    int rc = MPI_Allreduce(MPI_IN_PLACE, values, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : failed(rc, "MPI_Allreduce");
}

int axrt_mpi_finalize(void)
{
    int rc = MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : failed(rc, "MPI_Finalize");
}

struct axrt_mpi_exchange {
    unsigned char *grads;
    size_t bytes, elem, bucket;
    MPI_Datatype type;
    size_t complete;   /* [0, complete) final (ready() calls come in buffer order) */
    size_t started;    /* [0, started) handed to MPI_Iallreduce */
    int in_order;      /* 0 after a ready() out of order: everything waits for finish() */
    int nreq, cap;
    MPI_Request *req;
    axrt_mpi_stats stats;
    int error;         /* an MPI call in ready() failed: finish() reports it */
};

axrt_mpi_exchange *axrt_mpi_exchange_open(void *grads, size_t bytes, axrt_dtype dtype, size_t bucket_bytes)
{
    if (dtype != AXRT_F32 && dtype != AXRT_F64) {
        snprintf(last_error, sizeof last_error, "the gradient exchange takes Float32 or Float64 gradients");
        return NULL;
    }
    axrt_mpi_exchange *ex = calloc(1, sizeof *ex);
    if (!ex) return NULL;
    ex->grads = grads;
    ex->bytes = bytes;
    ex->type = dtype == AXRT_F32 ? MPI_FLOAT : MPI_DOUBLE;
    ex->elem = dtype == AXRT_F32 ? 4 : 8;
    ex->bucket = bucket_bytes ? bucket_bytes : AXRT_MPI_BUCKET_BYTES;
    ex->bucket = (ex->bucket + ex->elem - 1) / ex->elem * ex->elem;
    ex->cap = (int)(bytes / ex->bucket) + 2;
    ex->req = calloc((size_t)ex->cap, sizeof *ex->req);
    if (!ex->req) { free(ex); return NULL; }
    ex->in_order = 1;
    return ex;
}

/* MPI_Iallreduce of grads[started, end), in place. */
static void start_bucket(axrt_mpi_exchange *ex, size_t end)
{
    const int count = (int)((end - ex->started) / ex->elem);
    int rc = MPI_Iallreduce(MPI_IN_PLACE, ex->grads + ex->started, count, ex->type, MPI_SUM, MPI_COMM_WORLD,
                            &ex->req[ex->nreq]);
    if (rc != MPI_SUCCESS && !ex->error) ex->error = rc;
    if (rc == MPI_SUCCESS) ex->nreq++;
    ex->started = end;
}

void axrt_mpi_exchange_ready(void *exchange, size_t offset, size_t bytes)
{
    axrt_mpi_exchange *ex = exchange;
    const double t0 = MPI_Wtime();
    if (offset != ex->complete) ex->in_order = 0;
    if (offset + bytes > ex->complete) ex->complete = offset + bytes;
    while (ex->in_order && ex->started + ex->bucket <= ex->complete && ex->nreq < ex->cap) {
        start_bucket(ex, ex->started + ex->bucket);
        ex->stats.buckets_in_backward++;
    }
    if (ex->nreq) {   /* Open MPI progresses a non-blocking collective inside MPI calls */
        int flag;
        MPI_Testall(ex->nreq, ex->req, &flag, MPI_STATUSES_IGNORE);
    }
    ex->stats.ready_seconds += MPI_Wtime() - t0;
}

int axrt_mpi_exchange_finish(axrt_mpi_exchange *ex)
{
    const double t0 = MPI_Wtime();
    /* out of order or not, [started, bytes) is final now; what was started
     * earlier was a complete in-order prefix */
    if (ex->started < ex->bytes) {
        start_bucket(ex, ex->bytes);
        ex->stats.buckets_at_finish++;
    }
    int rc = ex->error ? ex->error : MPI_Waitall(ex->nreq, ex->req, MPI_STATUSES_IGNORE);
    ex->stats.wait_seconds += MPI_Wtime() - t0;
    ex->nreq = 0, ex->started = 0, ex->complete = 0, ex->error = 0, ex->in_order = 1;
    if (rc != MPI_SUCCESS) return failed(rc, "the gradient exchange (MPI_Iallreduce)");
    const size_t n = ex->bytes / ex->elem;
    const int size = axrt_mpi_size();
    if (ex->elem == 4) {
        float *g = (float *)(void *)ex->grads;
        for (size_t i = 0; i < n; i++) g[i] /= (float)size;
    } else {
        double *g = (double *)(void *)ex->grads;
        for (size_t i = 0; i < n; i++) g[i] /= (double)size;
    }
    return 0;
}

axrt_mpi_stats axrt_mpi_exchange_stats(const axrt_mpi_exchange *ex) { return ex->stats; }

void axrt_mpi_exchange_close(axrt_mpi_exchange *ex)
{
    if (!ex) return;
    free(ex->req);
    free(ex);
}
