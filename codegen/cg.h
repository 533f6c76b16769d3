/* cg.h — code generators.  Each takes fully planned graphs (after
 * pass_memplan, params filled) and appends source text to the buffers. */
#ifndef AX_CG_H
#define AX_CG_H

#include "ir.h"

typedef struct cg_request {
    ir_graph **models;        /* one or more models, emitted into one file */
    int nmodels;
    const char *header_name;  /* how the .c file #includes its header, e.g. "mlp.h" */
    const char *source_name;  /* the .ax file, for the banner and the per-node comments */
    bool profile;             /* per-layer timing and output hooks (axc --profile) */
    bool blas;                /* float32 dense/matmul through cblas_sgemm (axc --blas=openblas) */
} cg_request;

/* The portable C99 backend (interface.md §2).  Returns 0 or the number of
 * errors reported (e.g. an op the backend cannot emit). */
int cg_c_emit(const cg_request *req, ax_buf *c_out, ax_buf *h_out);

#endif
