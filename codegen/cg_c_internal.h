/* cg_c_internal.h — what the C back end's files share: cg_c.c (the emitter:
 * names, kernel calls, forward() and the two files), cg_c_storage.c (where
 * values live), cg_c_literal.c (literals), cg_c_quant.c (int8 layers) and
 * cg_c_fused.c (loop programs, unary formulas).  Only those files include this. */
#ifndef AX_CG_C_INTERNAL_H
#define AX_CG_C_INTERNAL_H

#include "cg_c.h"

/* State while emitting one model. */
typedef struct emitter {
    ir_graph *g;
    ax_buf *out;
    const char *source_name;
    const char **input_names;   /* forward()'s parameters (context arena) */
    const char **output_names;
    bool profile;            /* cg_request.profile */
    bool blas;               /* cg_request.blas */
    int nlayers;             /* profiled layers emitted so far */
    const cg_c_body *body;   /* a function body for another driver (cg_c_train.c), or NULL */
} emitter;

/* The arena of the graph being emitted; node id; the C type of a dtype. */
static inline ax_arena *arena_of(const emitter *em) { return em->g->ctx->arena; }
static inline ir_node *node_at(const emitter *em, int id) { return &em->g->nodes[id]; }
static inline const char *ctype(axrt_dtype dtype) { return ir_dtypes[dtype].c_type; }

/* ---- cg_c_storage.c ---- */

/* The symbol prefix of the file-scope constants (<prefix>_p<id>, _s<id>). */
const char *cgc_prefix(const emitter *em);
/* Byte offset of param id in the caller's training state, or -1. */
int64_t cgc_state_offset(const emitter *em, int id);
/* The node whose storage id reads (a reshape without storage of its own
 * reads its operand's). */
int cgc_storage_owner(const emitter *em, int id);
/* Node id's storage as an expression of type (const) T *. */
const char *cgc_storage(const emitter *em, int id);

/* ---- cg_c_literal.c ---- */

/* value as a C99 constant expression of type c_type (float or double):
 * exact for double, correctly rounded for float; an infinity or a NaN
 * spelled with <math.h>'s INFINITY and NAN. */
const char *cgc_real_text(ax_arena *a, const char *c_type, double value);
/* A compute-dtype literal: exact for double, correctly rounded for float;
 * a half type's bits, rounded once to nearest even, with the value in a
 * comment. */
const char *cgc_real_literal(const emitter *em, axrt_dtype dtype, double value);

/* ---- cg_c_quant.c ---- */

/* Node id's int8 weights, packed panels and requantisation constants
 * (their calls are its kernel-call plan's: cg_plan.c). */
void cgc_emit_quant_constants(emitter *em, int id);

/* ---- cg_c_fused.c ---- */

/* A loop program (ir_loop: a fused_elementwise node's, or a unary_grad's)
 * as one C loop nest. */
void cgc_emit_loop(emitter *em, const ir_loop *l);

#endif
