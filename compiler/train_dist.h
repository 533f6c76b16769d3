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
int axc_dist_reduce(axc_dist *d, const axc_trainer *t, void *const *out, double *loss, long step);
void axc_dist_close(axc_dist *d);

#endif
