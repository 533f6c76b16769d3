/* pass_remat_report.c — what rematerialisation did, in --mem-report's
 * lines and in the note after a budget it could not reach; shared by
 * inference (the driver's --ram) and the training step (train_graph_step.c). */
#include <stdio.h>

#include "passes.h"

void pass_remat_print(const ir_graph *g, size_t before, size_t after, int recomputed, double flops, double extra)
{
    if (!recomputed) return;
    printf("rematerialised %s: arena %zu -> %zu bytes, %d values recomputed, +%.0f FLOPs (+%.1f%%)\n", g->name,
           before, after, recomputed, extra, flops > extra ? 100 * extra / (flops - extra) : 0);
    printf("  recomputed:");
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && g->nodes[id].recomputed)
            printf(" %%%d %s '%s'", id, ir_ops[g->nodes[id].op].name, g->nodes[id].name);
    printf("\n");
}

void pass_remat_note_floor(ir_graph *g, int recomputed, size_t before, size_t after)
{
    if (recomputed)
        ax_note(g->ctx, g->loc, "recomputing %d values took the arena from %zu to %zu bytes, the "
                "smallest this model reaches: no other value idle across the peak can be recomputed",
                recomputed, before, after);
}
