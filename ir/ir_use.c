/* ir_use.c — the use analysis (ir_use.h): two sweeps over the live nodes,
 * one counting, one filling the readers' CSR lists. */
#include "ir_use.h"

#include <stdlib.h>
#include <string.h>

static void *grow(void *old, size_t count, size_t elem)
{
    void *p = realloc(old, count * elem);
    if (!p)
        ax_die("out of memory in the use analysis (%zu entries)", count);
    return p;
}

static void reserve(ir_use *u, int nnodes)
{
    if (nnodes + 1 <= u->cap)
        return;
    size_t cap = (size_t)nnodes + 1;
    u->nrefs = grow(u->nrefs, cap, sizeof *u->nrefs);
    u->noutput = grow(u->noutput, cap, sizeof *u->noutput);
    u->last = grow(u->last, cap, sizeof *u->last);
    u->first_user = grow(u->first_user, cap + 1, sizeof *u->first_user);
    u->cap = (int)cap;
}

/* nrefs, noutput, last, and in first_user[id + 1] the number of distinct readers. */
static void count_uses(const ir_graph *g, ir_use *u)
{
    const size_t count = (size_t)g->nnodes;
    memset(u->nrefs, 0, count * sizeof *u->nrefs);
    memset(u->noutput, 0, count * sizeof *u->noutput);
    memset(u->first_user, 0, (count + 1) * sizeof *u->first_user);
    for (int id = 0; id < g->nnodes; id++)
        u->last[id] = IR_NONE;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = &g->nodes[k];
        for (int i = 0; !n->dead && i < n->nsrc; i++) {
            const int s = n->src[i];
            if (s == IR_NONE)
                continue;
            u->nrefs[s]++;
            if (u->last[s] != k)
                u->first_user[s + 1]++;   /* k is a new reader of s (k ascends) */
            u->last[s] = k;
        }
    }
    for (int i = 0; i < g->noutputs; i++)
        u->noutput[g->outputs[i]]++;
}

/* Prefix sums, then each reader in ascending order. */
static void fill_users(const ir_graph *g, ir_use *u)
{
    for (int id = 0; id < g->nnodes; id++)
        u->first_user[id + 1] += u->first_user[id];
    const int total = u->first_user[g->nnodes];
    u->users = grow(u->users, (size_t)total + 1, sizeof *u->users);
    int *next = grow(NULL, (size_t)g->nnodes + 1, sizeof *next);
    memcpy(next, u->first_user, (size_t)g->nnodes * sizeof *next);
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = &g->nodes[k];
        for (int i = 0; !n->dead && i < n->nsrc; i++) {
            const int s = n->src[i];
            if (s != IR_NONE && (next[s] == u->first_user[s] || u->users[next[s] - 1] != k))
                u->users[next[s]++] = k;
        }
    }
    free(next);
}

void ir_use_compute(const ir_graph *g, ir_use *u)
{
    reserve(u, g->nnodes);
    u->nnodes = g->nnodes;
    count_uses(g, u);
    fill_users(g, u);
}

void ir_use_free(ir_use *u)
{
    free(u->nrefs);
    free(u->noutput);
    free(u->last);
    free(u->first_user);
    free(u->users);
    memset(u, 0, sizeof *u);
}

int ir_use_sole_user(const ir_use *u, int id)
{
    if (ir_use_is_output(u, id) || ir_use_nusers(u, id) != 1)
        return IR_NONE;
    return ir_use_user(u, id, 0);
}
