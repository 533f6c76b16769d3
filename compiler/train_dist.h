/* train_dist.h — `mpirun -np N axc train`: data-parallel training
 * (train_dist.c, docs/distributed.md).  Without mpirun nothing changes:
 * axc_dist_open gives NULL and every other call takes NULL as "one process". */
#ifndef AXC_TRAIN_DIST_H
#define AXC_TRAIN_DIST_H

#include "driver.h"

typedef struct axc_dist axc_dist;

/* The variable that says axc runs under an MPI launcher, or NULL. */
const char *axc_dist_launcher(void);
/* Under mpirun: opens libaxrt_mpi, MPI_Init, and silences stdout on ranks
 * other than 0; *d NULL otherwise.  An exit status (the problem printed). */
int axc_dist_open(axc_dist **d);
int axc_dist_rank(const axc_dist *d);
/* path's rows of this rank (rank r: the r-th block of n's batch B of every
 * N x B samples, read with pread after the header) as batches of n. */
int axc_dist_load_batches(const axc_dist *d, const ir_node *n, const char *what, const char *path,
                          axc_batch_file *f);
/* The worst of every rank's status rc (rc itself without MPI). */
int axc_dist_agree(axc_dist *d, int rc);
/* Replaces every gradient output of out and *loss by its mean over the
 * ranks.  An exit status (a rank died: printed). */
int axc_dist_reduce(axc_dist *d, const pass_trainer *t, void *const *out, double *loss, long step);
/* The compiled step split at its seam (train_exec.c): an exchange of the
 * gradient buffer grads (bytes, elements of dtype) in libaxrt_mpi's buckets,
 * opened once (buckets of $AXC_BUCKET_BYTES, else libaxrt_mpi's 1 MiB); *ready and *user are what <name>_train_grads is given, so
 * that each bucket is summed while the backward pass goes on.  An exit
 * status (printed). */
typedef void (*axc_dist_ready_fn)(void *user, size_t offset, size_t bytes);
int axc_dist_exchange_open(axc_dist *d, void *grads, size_t bytes, axrt_dtype dtype, axc_dist_ready_fn *ready,
                           void **user);
/* After <name>_train_grads: waits for every bucket (grads then hold the mean
 * over the ranks) and replaces *loss by its mean over the ranks.  An exit
 * status (a rank died: printed). */
int axc_dist_exchange_finish(axc_dist *d, double *loss);
/* The exchange's seconds waited in finish (not hidden by the backward pass)
 * and its buckets started during the backward pass and at finish. */
void axc_dist_exchange_stats(const axc_dist *d, double *wait_seconds, long *in_backward, long *at_finish);
/* This process's part (train_loop.c): opened by axc train, NULL when
 * not under mpirun; close returns rc. */
axc_dist *axc_train_dist(void);
int axc_train_dist_open(void);
int axc_train_dist_close(int rc);
void axc_dist_close(axc_dist *d);

#endif
