/* cg_targets.c — the back-end table, one row per ir/targets.def entry.  The
 * table is generated from targets.def and each row names ROW_<target>, so
 * a targets.def row without its row here does not compile. */
#include "cg_target.h"

/* The llvm target calls the C target's kernels for inference; the training
 * step's ops are written by the C printer only. */
static const char *llvm_unsupported(const ir_graph *g, const ir_node *n)
{
    (void)g;
    switch (n->op) {
    case IR_OP_unary_grad: case IR_OP_conv_grad_weight: case IR_OP_pool_grad: case IR_OP_slice_grad:
    case IR_OP_embedding_grad: case IR_OP_dropout:
        return ir_ops[n->op].name;
    default:
        return NULL;
    }
}

/* A back end not built in still plans memory as the C target does, so that
 * --emit=mem and --mem-report answer for it. */
#define C_FACTS(id) {id, cg_c_scratch_bytes, cg_c_can_inplace, true, cg_c_fuse_rows}
#define ROW_c {C_FACTS(IR_TARGET_c), cg_c_emit, NULL, cg_select, NULL, true}
#define GPU_FACTS(id) {id, cg_gpu_scratch_bytes, cg_gpu_can_inplace, false, NULL}
#define ROW_cuda {GPU_FACTS(IR_TARGET_cuda), cg_cuda_emit, NULL, cg_gpu_select, cg_gpu_unsupported, false}
#define ROW_hip {GPU_FACTS(IR_TARGET_hip), cg_hip_emit, NULL, cg_gpu_select, cg_gpu_unsupported, false}
#ifdef AXC_HAVE_LLVM
#define ROW_llvm {C_FACTS(IR_TARGET_llvm), cg_llvm_emit, NULL, cg_select, llvm_unsupported, false}
#else
#define ROW_llvm {C_FACTS(IR_TARGET_llvm), NULL, "was not built into this axc (llvm-config was not found when it was built; install llvm-dev and rebuild)", cg_select, llvm_unsupported, false}
#endif

static const cg_target targets[IR_TARGET_COUNT] = {
#define TARGET(name, extensions, summary) [IR_TARGET_##name] = ROW_##name,
#include "targets.def"
#undef TARGET
};

const cg_target *cg_target_get(ir_target_id id)
{
    if ((unsigned)id >= IR_TARGET_COUNT)
        ax_die("cg: no target %d", (int)id);
    return &targets[id];
}

int cg_target_check(const ir_graph *g)
{
    const cg_target *t = cg_target_get(g->target->id);
    for (int id = 0; id < g->nnodes && t->unsupported; id++) {
        const ir_node *n = &g->nodes[id];
        const char *what = n->dead ? NULL : t->unsupported(g, n);
        if (what) {
            ax_error(g->ctx, n->loc, "the %s target has no kernel for %s yet (use --target=c)",
                     ir_targets[t->facts.id].name, what);
            return 1;
        }
    }
    return 0;
}
