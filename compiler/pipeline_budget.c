/* pipeline_budget.c — --ram for inference (a step of pipeline_table.c):
 * rematerialisation (pass_remat), then tiling (pass_tile) when that is not
 * enough, each verified and reported with --mem-report; a plan that still
 * does not fit is a located error with notes on how far each got. */
#include <stdio.h>

#include "driver.h"
#include "pipeline_table.h"

/* --ram, when recomputation is not enough: tile the first stage
 * (pass_tile; verified) and say so with --mem-report. */
static int tile_stage(const axc_opts *o, ir_graph *g, pass_tile_stats *tiled)
{
    pass_tile_stats ts;
    pass_tile(g, o->ram_budget, &ts);
    if (!ts.tiles) return 0;
    *tiled = ts;
    if (ir_verify(g)) return 1;
    double flops = 0;
    for (int id = 0; id < g->nnodes; id++)
        if (!g->nodes[id].dead && ir_ops[g->nodes[id].op].kind != IR_SOURCE)
            flops += ir_node_flops(g, &g->nodes[id]);
    if (o->mem_report)
        printf("tiled %s: arena %zu -> %zu bytes, the stage up to '%s' in %d tiles along axis %d, "
               "+%.0f FLOPs (+%.1f%%)\n", g->name, ts.peak_before, ts.peak_after,
               ts.end_name ? ts.end_name : "?", ts.tiles, ts.axis, ts.extra_flops,
               flops > ts.extra_flops ? 100 * ts.extra_flops / (flops - ts.extra_flops) : 0);
    return 0;
}

/* --ram: rematerialise until the plan fits (verified), say what it cost
 * with --mem-report, and report a plan that still does not fit. */
int axc_fit_budget(const axc_opts *o, ir_graph *g)
{
    pass_remat_stats st = {0};
    if (g->arena_bytes > o->ram_budget) {
        pass_remat(g, o->ram_budget, &st);
        if (ir_verify(g)) return 1;
        if (o->mem_report)
            pass_remat_print(g, st.peak_before, st.peak_after, st.recomputed, st.flops, st.extra_flops);
    }
    pass_tile_stats ts = {0};
    if (g->arena_bytes > o->ram_budget && tile_stage(o, g, &ts)) return 1;
    if (!pass_memplan_check_budget(g, o->ram_budget)) return 0;
    if (ts.tiles)
        ax_note(g->ctx, g->loc, "running the stage up to '%s' in %d tiles took the arena from %zu to "
                "%zu bytes, the smallest tiling reaches", ts.end_name ? ts.end_name : "?", ts.tiles,
                ts.peak_before, ts.peak_after);
    pass_remat_note_floor(g, st.recomputed, st.peak_before, st.peak_after);
    return 1;
}
