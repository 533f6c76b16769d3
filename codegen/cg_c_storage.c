/* cg_c_storage.c — where the C back end's values live (cg_c_internal.h):
 * the expression naming each node's storage in forward() or a training
 * step's body.  A leaf of the C printer's files: cg_c.c and cg_c_fused.c
 * (the loop programs) both read it, and it calls neither. */
#include "cg_c_internal.h"

/* The symbol prefix of the file-scope constants (<prefix>_p<id>, _s<id>). */
const char *cgc_prefix(const emitter *em)
{
    return em->body && em->body->prefix ? em->body->prefix : em->g->name;
}

/* Byte offset of param id in the caller's training state, or -1. */
int64_t cgc_state_offset(const emitter *em, int id)
{
    return em->body && em->body->state_offset ? em->body->state_offset[id] : -1;
}

/* The node whose storage id reads: a reshape without storage of its own
 * reads its operand's (a chain of them followed in a loop: one reshape per
 * statement can be long). */
int cgc_storage_owner(const emitter *em, int id)
{
    while (node_at(em, id)->op == IR_OP_reshape && node_at(em, id)->offset < 0 &&
           ir_output_index(em->g, id) < 0)
        id = node_at(em, id)->src[0];
    return id;
}

/* An expression of type (const) T * for node id's storage. */
const char *cgc_storage(const emitter *em, int id)
{
    id = cgc_storage_owner(em, id);
    const ir_node *n = node_at(em, id);
    const char *prefix = cgc_prefix(em);
    if (n->op == IR_OP_param && cgc_state_offset(em, id) >= 0)
        return ax_sprintf(arena_of(em), "(%s%s *)((%sunsigned char *)state + %lld)",
                          em->body->state_const ? "const " : "", ctype(n->dtype),
                          em->body->state_const ? "const " : "", (long long)cgc_state_offset(em, id));
    switch (n->op) {
    case IR_OP_input:
        for (int i = 0; i < em->g->ninputs; i++)
            if (em->g->inputs[i] == id)
                return em->input_names[i];
        ax_die("cg_c: input %%%d is not a graph input", id);
    case IR_OP_param: return ax_sprintf(arena_of(em), "%s_p%d.values", prefix, id);
    case IR_OP_scalar: return ax_sprintf(arena_of(em), "&%s_s%d", prefix, id);
    default: break;
    }
    if (n->offset >= 0)   /* an int8 layer's int8-stored result: uint8_t, q + 128 */
        return ax_sprintf(arena_of(em), "(%s *)((unsigned char *)arena + %lld)",
                          n->quant && n->quant->out_q8 ? "uint8_t" : ctype(n->dtype), (long long)n->offset);
    int out = ir_output_index(em->g, id);
    if (out >= 0)
        return em->output_names[out];
    ax_die("cg_c: %%%d %s has no storage (not planned)", id, ir_ops[n->op].name);
}
