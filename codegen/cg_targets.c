/* cg_targets.c — the back-end table, one row per ir/targets.def entry.  The
 * table is generated from targets.def and each row names ROW_<target>, so
 * a targets.def row without its row here does not compile. */
#include "cg_target.h"

/* A back end not built in still plans memory as the C target does, so that
 * --emit=mem and --mem-report answer for it. */
#define C_FACTS(id) {id, cg_c_scratch_bytes, cg_c_can_inplace, true, cg_c_fuse_rows}
#define ROW_c {C_FACTS(IR_TARGET_c), cg_c_emit, NULL, cg_select}
#define GPU_FACTS(id) {id, cg_gpu_scratch_bytes, cg_gpu_can_inplace, false, NULL}
#define ROW_cuda {GPU_FACTS(IR_TARGET_cuda), cg_cuda_emit, NULL, cg_gpu_select}
#define ROW_hip {GPU_FACTS(IR_TARGET_hip), cg_hip_emit, NULL, cg_gpu_select}
#ifdef AXC_HAVE_LLVM
#define ROW_llvm {C_FACTS(IR_TARGET_llvm), cg_llvm_emit, NULL, cg_select}
#else
#define ROW_llvm {C_FACTS(IR_TARGET_llvm), NULL, "was not built into this axc (llvm-config was not found when it was built; install llvm-dev and rebuild)", cg_select}
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
