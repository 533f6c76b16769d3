/* cg_gpu_internal.h — what the GPU back end's two files share: cg_gpu.c
 * (the kernels, one per node, and the checks) and cg_gpu_host.c (the host
 * C99 around them: the kernel source as a string, the parameter block, the
 * launch list, the model descriptor).  Only those files include this. */
#ifndef AX_CG_GPU_INTERNAL_H
#define AX_CG_GPU_INTERNAL_H

#include "cg_target.h"

typedef struct gpu_dialect {
    const char *name;        /* "cuda" */
    const char *vendor;      /* "CUDA" for messages */
    const char *enum_name;   /* axrt_gpu_dialect */
    const char *prelude;     /* first lines of the kernel source */
} gpu_dialect;

/* State while emitting one model's kernels. */
typedef struct gk {
    ir_graph *g;
    const gpu_dialect *dl;
    ax_buf *src;              /* kernel source */
    ax_buf launches;          /* axrt_gpu_launch initialisers */
    int nlaunches;
    size_t *param_offset;     /* per node id */
    size_t param_bytes;
    size_t index_word;        /* 1 + arena offset of the index-error word; 0: none */
    size_t device_arena;      /* the plan's arena, plus that word's 16 bytes */
    const char *kernel;       /* the kernel being written */
} gk;

/* The arena of the graph being emitted; node id. */
static inline ax_arena *arena_of(const gk *k) { return k->g->ctx->arena; }
static inline ir_node *node_at(const gk *k, int id) { return &k->g->nodes[id]; }

/* ---- cg_gpu.c ---- */

/* The two dialects (cg_gpu.c): prelude, names and runtime enum of each. */
enum { CGG_CUDA, CGG_HIP, CGG_DIALECT_COUNT };
extern const gpu_dialect cgg_dialects[CGG_DIALECT_COUNT];
/* Reports what the GPU back end cannot emit; returns the number of errors. */
int cgg_check_supported(const ir_graph *g, const gpu_dialect *dl);
/* Every node's kernel into k->src and its launch into k->launches. */
void cgg_emit_kernels(gk *k);

/* ---- cg_gpu_host.c ---- */

/* The host C (c) and header (h) of req's model in dialect dl; 0, or the
 * number of errors.  cg_cuda_emit and cg_hip_emit (cg.h) call it. */
int cgg_emit(const cg_request *req, const gpu_dialect *dl, ax_buf *c, ax_buf *h);

#endif
