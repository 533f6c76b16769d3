/* pass_manager.c — the optimising passes in one table, run after parameters
 * are loaded (folding rewrites parameter data) and before code generation.
 * -O0 runs only what correctness needs (the plain memory plan); each row
 * names the lowest level that runs it.  The IR verifier runs after every
 * pass, so a rewrite that breaks the IR is reported where it happened. */
#include "passes.h"

static int plan_plain(ir_graph *g) { return pass_memplan_with(g, false); }
static int plan_shared(ir_graph *g) { return pass_memplan_with(g, true); }

typedef struct pass_row {
    const char *name;
    int min_level, max_level;   /* runs when min_level <= -O <= max_level */
    int (*run)(ir_graph *g);
} pass_row;

static const pass_row passes[] = {
    {"fuse_matmul_transposed", 1, 3, pass_fuse_matmul_transposed},
    {"fold_batchnorm", 1, 3, pass_fold_batchnorm},
    {"fold_scale_shift", 2, 3, pass_fold_scale_shift},
    {"fuse_residual", 2, 3, pass_fuse_residual},
    {"fuse_activation", 1, 3, pass_fuse_activation},
    {"fuse_spatial_mean", 2, 3, pass_fuse_spatial_mean},
    {"fuse_elementwise", 2, 3, pass_fuse_elementwise},
    {"schedule", 2, 3, pass_schedule},
    {"fuse_expand_depthwise", 2, 3, pass_fuse_expand_depthwise},
    {"memplan", 0, 0, plan_plain},
    {"memplan", 1, 3, plan_shared},
};

int pass_run_optimisations(ir_graph *g, int opt_level, pass_hook *after, void *user)
{
    for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
        const pass_row *p = &passes[i];
        if (opt_level < p->min_level || opt_level > p->max_level)
            continue;
        int errors = p->run(g);
        if (after)
            after(g, p->name, user);
        errors += ir_verify(g);
        if (errors)
            return errors;
    }
    return 0;
}
