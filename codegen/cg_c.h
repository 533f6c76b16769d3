/* cg_c.h — the C back end's pieces for another driver in codegen/ (the
 * training step, cg_c_train.c): a function body over a planned graph whose
 * parameters may live in a caller-owned state, the file-scope constants it
 * reads, the storage of a node, and the file's preamble. */
#ifndef AX_CG_C_H
#define AX_CG_C_H

#include "cg.h"

typedef struct cg_c_body cg_c_body;
struct cg_c_body {
    ir_graph *g;                 /* planned (pass_memplan), each node's plan (ir_node.plan) cg_plan_train's */
    const char *prefix;          /* of the constants <prefix>_p<id>, <prefix>_s<id>; NULL: g->name */
    const char *source_name;     /* the .ax file, for the per-node comments */
    const char **input_names, **output_names;   /* cg_argument_names */
    /* per node id: a parameter's byte offset in the `state` argument, or -1
     * (embedded); NULL: every parameter embedded */
    const int64_t *state_offset;
    bool state_const;            /* state is `const void *`; its parameters are then not embedded */
    const char *fail_return;     /* what a failing kernel status returns (NULL: "status") */
    bool blas;                   /* --blas=openblas: Float32 dense and matmul call the helpers
                                    cg_c_emit_blas_helpers writes (weights read unpacked) */
    /* called after each node's statements (may be NULL) */
    void (*after_node)(const cg_c_body *b, int id, ax_buf *out);
    /* true for a node whose statements after_node writes itself, fused with
       its own (may be NULL) */
    bool (*fused_node)(const cg_c_body *b, int id);
    const void *user;            /* for after_node and fused_node */
};

/* The statements computing every node of b->g in order, then the copies
 * into outputs that live elsewhere; declares `int status` where needed.
 * The arena is `arena`, the state `state`. */
void cg_c_emit_body(const cg_c_body *b, ax_buf *out);
/* The parameters (but a const state's) and scalars the body reads. */
void cg_c_emit_constants(const cg_c_body *b, ax_buf *out);
/* An expression of type (const) T * for node id's storage. */
const char *cg_c_storage(const cg_c_body *b, int id);
/* The node whose storage id reads (id itself, or the operand a storage-less
 * reshape chain views). */
int cg_c_storage_owner(const cg_c_body *b, int id);
/* --blas=openblas: <cblas.h> and the helpers req's Float32 dense and matmul
 * nodes call (only those used). */
void cg_c_emit_blas_helpers(const cg_request *req, ax_buf *c);
/* The banner, includes and checks every generated .c file starts with. */
void cg_c_emit_preamble(const cg_request *req, ax_buf *c);
/* Reports what the C back end cannot compute in g; the number of errors. */
int cg_c_check(const ir_graph *g);

/* The training step (axc --train), cg_c_train.c: req->train set. */
int cg_c_train_emit(const cg_request *req, ax_buf *c_out, ax_buf *h_out);

#endif
