/* ir_use.h — the one use analysis of the graph IR (QBE's filluse): for each
 * node, who reads it, how often, where it is read last, and whether it is a
 * graph output.
 *
 * Only live (not dead) readers count; IR_NONE operands are skipped.  The
 * result is a snapshot: a pass that rewrites operands, kills nodes, inserts
 * or reorders them must call ir_use_compute again before asking.  The caller
 * owns the struct; ir_use_compute reuses its arrays when they are large
 * enough, and ir_use_free releases them (heap). */
#ifndef AX_IR_USE_H
#define AX_IR_USE_H

#include "ir.h"

typedef struct ir_use {
    int nnodes;          /* g->nnodes when computed */
    int *nrefs;          /* operand slots of live nodes that read id (x + x reads x twice) */
    int *noutput;        /* times id appears in g->outputs */
    int *last;           /* highest live node reading id, or IR_NONE when none does */
    int *first_user;     /* CSR: the distinct live readers of id, ascending, are */
    int *users;          /*   users[first_user[id] .. first_user[id + 1]) */
    int cap;             /* nodes the arrays have room for */
} ir_use;

/* Fills u for g (u zero-initialised the first time). */
void ir_use_compute(const ir_graph *g, ir_use *u);
void ir_use_free(ir_use *u);

/* References to id: live operand slots plus return-list entries. */
static inline int ir_use_count(const ir_use *u, int id) { return u->nrefs[id] + u->noutput[id]; }
static inline bool ir_use_is_output(const ir_use *u, int id) { return u->noutput[id] > 0; }
/* Number of distinct live nodes reading id; the k-th is ir_use_user(u, id, k). */
static inline int ir_use_nusers(const ir_use *u, int id) { return u->first_user[id + 1] - u->first_user[id]; }
static inline int ir_use_user(const ir_use *u, int id, int k) { return u->users[u->first_user[id] + k]; }
/* The one live node reading id, or IR_NONE when none, several, or id is a
 * graph output (its value is observable, so no reader owns it). */
int ir_use_sole_user(const ir_use *u, int id);
/* Whether id's value is needed after node at: read by a live node after at,
 * or a graph output (read after the last node). */
static inline bool ir_use_live_after(const ir_use *u, int id, int at)
{
    return ir_use_is_output(u, id) || u->last[id] > at;
}

#endif
