/* cg_targets.c — the back-end table, one row per ir/targets.def name, and
 * each row all there is to say about its target (cg_target.h): its facts
 * for the passes, output kinds and summary, printer, kernel selection,
 * unsupported ops, training step and how axc run runs it.  The table is
 * generated from targets.def and each row names ROW_<target>, so a name
 * without its row here does not compile; adding a target is a name there
 * and a row here. */
#include <string.h>

#include "cg_c.h"
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

/* The C target's printer: a training step's (cg_c_train.c, which prints the
 * step around cg_c.c's bodies) or a model's (cg_c.c). */
static int c_emit(const cg_request *req, ax_buf *c_out, ax_buf *h_out)
{
    return req->train ? cg_c_train_emit(req, c_out, h_out) : cg_c_emit(req, c_out, h_out);
}

/* A back end not built in still plans memory as the C target does, so that
 * --emit=mem and --mem-report answer for it. */
#define C_FACTS(id) {id, cg_c_scratch_bytes, cg_c_can_inplace, true, cg_c_fuse_rows, cg_c_fold_input_scale}
#define GPU_FACTS(id) {id, cg_gpu_scratch_bytes, cg_gpu_can_inplace, false, NULL, NULL}
#define ROW_c {.facts = C_FACTS(IR_TARGET_c), .outputs = ".c .h", \
               .summary = "portable C99 source and header (host, Cortex-M firmware)", .run = CG_RUN_CC, \
               .emit = c_emit, .select = cg_select, .train_step = true}
#define ROW_cuda {.facts = GPU_FACTS(IR_TARGET_cuda), .outputs = ".cu", \
                  .summary = "host C99 plus CUDA kernels compiled by NVRTC at start-up", .run = CG_RUN_CC_CUDA, \
                  .emit = cg_cuda_emit, .select = cg_gpu_select, .unsupported = cg_gpu_unsupported}
#define ROW_hip {.facts = GPU_FACTS(IR_TARGET_hip), .outputs = ".hip", \
                 .summary = "host C99 plus HIP kernels compiled by hiprtc at start-up", .run = CG_RUN_CC_HIP, \
                 .emit = cg_hip_emit, .select = cg_gpu_select, .unsupported = cg_gpu_unsupported}
#ifdef AXC_HAVE_LLVM
#define LLVM_EMIT .emit = cg_llvm_emit
#else
#define LLVM_EMIT .missing = "was not built into this axc (llvm-config was not found when it was built; " \
                             "install llvm-dev and rebuild)"
#endif
#define ROW_llvm {.facts = C_FACTS(IR_TARGET_llvm), .outputs = ".o .ll", \
                  .summary = "object code or LLVM IR through the LLVM C API", .run = CG_RUN_JIT, LLVM_EMIT, \
                  .select = cg_select, .unsupported = llvm_unsupported}

static const cg_target targets[IR_TARGET_COUNT] = {
#define TARGET(name) [IR_TARGET_##name] = ROW_##name,
#include "targets.def"
#undef TARGET
};

const cg_target *cg_target_get(ir_target_id id)
{
    if ((unsigned)id >= IR_TARGET_COUNT)
        ax_die("cg: no target %d", (int)id);
    return &targets[id];
}

ir_target_id cg_target_for_output(const char *ext)
{
    const size_t len = strlen(ext);
    for (int t = 0; t < IR_TARGET_COUNT && len; t++) {
        const char *hit = strstr(targets[t].outputs, ext);
        if (hit && (hit[len] == ' ' || hit[len] == '\0')) return (ir_target_id)t;
    }
    return IR_TARGET_COUNT;
}

bool cg_target_runs_on_gpu(const cg_target *t) { return t->run == CG_RUN_CC_CUDA || t->run == CG_RUN_CC_HIP; }

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
