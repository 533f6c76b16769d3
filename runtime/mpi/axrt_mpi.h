/* axrt_mpi.h — the runtime's optional MPI part, libaxrt_mpi
 * (docs/distributed.md): data-parallel training over MPI processes.
 *
 * Built only where mpi.h and mpicc are found; pkg-config axrt_mpi.  `axc
 * train` opens it with dlopen when it runs under mpirun, so axc itself does
 * not link MPI.  A C program that drives a generated training step split at
 * its seam (axc --train --grad-exchange) uses it so:
 *
 *     axrt_mpi_init();
 *     axrt_mpi_exchange *ex = axrt_mpi_exchange_open(grads, M_GRAD_BYTES, AXRT_F32, 0);
 *     for each step:   (rank r's batch: the r-th block of the global one)
 *         loss = m_train_grads(state, x, y, grads, axrt_mpi_exchange_ready, ex, arena);
 *         if (axrt_mpi_exchange_finish(ex)) fail(axrt_mpi_error());
 *         m_train_apply(state, grads);          the same update on every rank
 *
 * ready() is told each gradient as the backward pass completes it (the
 * buffer's prefix [0, offset + bytes) is then complete); a bucket (a fixed
 * byte range, AXRT_MPI_BUCKET_BYTES by default) is summed across the ranks
 * with MPI_Iallreduce as soon as its last gradient is in, while the backward
 * pass goes on (as PyTorch's DistributedDataParallel does).  finish()
 * starts what is left, waits for all, and divides by the number of ranks:
 * each rank's gradient is the mean over its own batch, so the result is the
 * mean over the global batch (the sum over all of it divided by N x B).
 * The sums are deterministic for a given number of ranks (Open MPI's
 * reduction order is fixed for a fixed communicator size and message size).
 *
 * Errors come back as a non-zero return (MPI_ERRORS_RETURN on the world
 * communicator), the message in axrt_mpi_error(). */
#ifndef AXRT_MPI_H
#define AXRT_MPI_H

#include <stddef.h>

#include "axrt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AXRT_MPI_BUCKET_BYTES ((size_t)1 << 20)   /* DDP's first bucket is 1 MiB too */

/* MPI_Init (once) and errors that return.  0 or -1. */
int axrt_mpi_init(void);
int axrt_mpi_rank(void);
int axrt_mpi_size(void);
/* The largest of every rank's *value into *value (every rank agrees on a
 * status before it starts, so none waits for one that gave up).  0 or -1. */
int axrt_mpi_max_int(int *value);
/* Blocking sum of n doubles across ranks, in place.  0 or -1. */
int axrt_mpi_sum_f64(double *values, size_t n);
int axrt_mpi_finalize(void);
/* The last error's message ("" when none). */
const char *axrt_mpi_error(void);

typedef struct axrt_mpi_exchange axrt_mpi_exchange;
/* An exchange of the gradient buffer grads (bytes long, elements of dtype
 * AXRT_F32 or AXRT_F64) in buckets of bucket_bytes (0: the default).  NULL
 * (the reason in axrt_mpi_error()) on a bad dtype or no memory. */
axrt_mpi_exchange *axrt_mpi_exchange_open(void *grads, size_t bytes, axrt_dtype dtype, size_t bucket_bytes);
/* The generated step's ready(user, offset, bytes) callback, user = the
 * exchange: [offset, offset + bytes) of grads is final. */
void axrt_mpi_exchange_ready(void *exchange, size_t offset, size_t bytes);
/* Starts what is not yet started, waits for every bucket and divides grads
 * by the number of ranks.  0, or -1 (a rank died, ...: axrt_mpi_error()). */
int axrt_mpi_exchange_finish(axrt_mpi_exchange *ex);
/* Seconds spent so far: inside ready() starting buckets, and inside
 * finish() waiting (the communication the backward pass did not hide), and
 * the buckets started from ready() (overlapped) and from finish(). */
typedef struct axrt_mpi_stats {
    double ready_seconds, wait_seconds;
    long buckets_in_backward, buckets_at_finish;
} axrt_mpi_stats;
axrt_mpi_stats axrt_mpi_exchange_stats(const axrt_mpi_exchange *ex);
void axrt_mpi_exchange_close(axrt_mpi_exchange *ex);

#ifdef __cplusplus
}
#endif
#endif
