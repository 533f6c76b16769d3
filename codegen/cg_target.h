/* cg_target.h — the back ends as rows of one table (codegen/cg_targets.c,
 * one per ir/targets.def name), QBE's Target: what each one tells the
 * middle end (ir_target: scratch and in-place facts of its kernels), which
 * files it writes, how it writes and runs them.  The driver
 * looks a target up here for --target, backend= and --help; kernel
 * selection (cg_select) is shared by the back ends that call libaxrt. */
#ifndef AX_CG_TARGET_H
#define AX_CG_TARGET_H

#include "cg.h"

/* How `axc run` (and axc train's compiled loop, for the c target) runs a
 * target's output: the driver's loaders, by kind. */
typedef enum cg_run_kind {
    CG_RUN_CC,        /* the printed C built by $CC into a shared object and loaded */
    CG_RUN_CC_CUDA,   /* the host C built likewise with libaxrt_gpu, after probing the
                         CUDA driver; the model's init once to report a device failure */
    CG_RUN_CC_HIP,    /* the same for HIP */
    CG_RUN_JIT        /* compiled in-process by LLVM's ORC JIT (cg_llvm_jit), no $CC */
} cg_run_kind;

typedef struct cg_target {
    ir_target facts;          /* for the passes (ir_graph.target) */
    /* The output kinds: the -o extensions it writes (space-separated; the
     * first is its main output), which select it when --target and
     * backend= are absent; and one line for --help. */
    const char *outputs;
    const char *summary;
    cg_run_kind run;          /* axc run --target=NAME */
    /* Writes the generated code for req into out (and its header into hdr);
     * returns 0 or the number of errors reported.  NULL: not built yet, and
     * missing says why, for the driver's message. */
    int (*emit)(const cg_request *req, ax_buf *out, ax_buf *hdr);
    const char *missing;
    /* Kernel selection recorded on the IR after the passes (cg_select). */
    void (*select)(ir_graph *g);
    /* The op node n runs that this target has no kernel for (its name), or
     * NULL; a NULL function: every op.  Checked before printing
     * (cg_target_check). */
    const char *(*unsupported)(const ir_graph *g, const ir_node *n);
    /* Whether it writes a training step (--train, --train-step). */
    bool train_step;
} cg_target;

const cg_target *cg_target_get(ir_target_id id);
/* The target whose outputs include extension ext (".c", ".ll", ...), or
 * IR_TARGET_COUNT when none does. */
ir_target_id cg_target_for_output(const char *ext);
/* Whether the target runs on a GPU under axc run (CG_RUN_CC_CUDA, _HIP). */
bool cg_target_runs_on_gpu(const cg_target *t);
/* Before the printer: a located error at the first live node of g its
 * target has no kernel for, naming the op and the target; returns the
 * number of errors (0 or 1). */
int cg_target_check(const ir_graph *g);

/* Records on g which layout each parameter is stored in (ir_node.layout),
 * then each node's kernel-call plan (ir_node.plan, cg_plan_graph). */
void cg_select(ir_graph *g);
/* What the selection means at node n (cg_kernel_facts.c), read by the
 * plans (cg_plan.c) and the target's facts (cg_c_target.c):
 * whether operand i is a packed parameter; the axrt_act the packed kernels
 * apply for n's fused activation (-1: none of theirs); whether n's packed
 * dense/conv kernel computes its whole epilogue (residual, then
 * activation) itself; whether n has a fused activation at all. */
bool cg_operand_packed(const ir_graph *g, const ir_node *n, int i);
int cg_kernel_act(const ir_node *n);
bool cg_kernel_applies_epilogue(const ir_graph *g, const ir_node *n);
bool cg_has_epilogue(const ir_node *n);
/* Whether conv n runs the grouped-conv kernel (runtime/axrt_gconv.inc):
 * Float32, 1 < groups, at least CG_GROUPED_MIN_CHANNELS input and output
 * channels a group (fewer: the plain conv kernel; one, depthwise: its
 * own). */
enum { CG_GROUPED_MIN_CHANNELS = 4 };
bool cg_grouped_conv(const ir_graph *g, const ir_node *n);
/* Whether mha node n runs axrt_mha_flash_f32 (scores a key block at a
 * time; its scratch axrt_mha_flash_scratch_elems): every Float32 one.  Read
 * by the memory plan's scratch size (before packing is decided) and by the
 * plan, so it depends on nothing packing decides. */
bool cg_mha_flash(const ir_node *n);
/* After cg_select, for --blas=openblas: dense weights stay as written
 * ([out, in], what cblas_sgemm reads), not packed. */
void cg_select_blas(ir_graph *g);
/* The kernel-call plan (ir_plan.h, cg_plan.c) of each node: what a plan
 * depends on besides the graph.  blas: --blas=openblas; pack_offset >= 0
 * with state_offset (per node id, -1 for none): a training step, whose
 * Float32 weights read from the state are packed into the arena's room at
 * pack_offset each step (cg_c_body); float_io: int8 calibration's
 * emulation (compiler/quantize.c), where an int8 node's operands all arrive
 * float and its result leaves float, its scratch starts at offset 0 and its
 * float epilogue is left out. */
typedef struct cg_plan_context {
    bool blas;
    int64_t pack_offset;
    const int64_t *state_offset;
    bool float_io;
} cg_plan_context;
/* Node id's plan, or NULL for a node with nothing to run (a source, a
 * result, a dead or row-fused node). */
const ir_plan *cg_plan_node(ir_graph *g, int id, const cg_plan_context *ctx);
/* The training step's own statements (ir_step_plan, cg_plan_step.c) for
 * step graph g (planned) and the driver's train: every printer of a
 * training step reads them. */
ir_step_plan *cg_plan_step(ir_graph *g, const struct pass_train_step *t);
/* A training step decided once for every printer (the C target's
 * cg_c_train_emit, axc --train --emit=ir): each node's plan (ir_node.plan)
 * of the step graph and of t->forward, their parameters read from the
 * state (cg_train_state_offsets; a Float32 dense packing its weight at
 * t's pack offsets), and the step's own statements (cg_plan_step). */
const ir_step_plan *cg_plan_train(ir_graph *step, const struct pass_train_step *t, bool blas);
/* Per node id of g (the step graph, or t->forward when forward): the byte
 * offset in the state of the tensor whose param it is (or, in the step,
 * Dropout's counter and the loss scale in the header), else -1. */
int64_t *cg_train_state_offsets(const ir_graph *g, const struct pass_train_step *t, bool forward);
/* text as C string and comment contents: PyTorch names stay, any other
 * character becomes '_'. */
const char *cg_plan_step_name(ax_arena *a, const char *text);
/* The loop program of fused_elementwise node id (cg_plan_loop.c), the whole
 * of its plan but for the epilogue. */
const ir_loop *cg_plan_loop(const ir_graph *g, int id);
/* The loop program of unary_grad node id (cg_plan_loop.c): dy * f'(x). */
const ir_loop *cg_plan_derivative_loop(const ir_graph *g, int id);
/* Every node's plan into ir_node.plan (cg_select and cg_select_blas call it). */
void cg_plan_graph(ir_graph *g, bool blas);
/* ---- int8 calibration's emulation (cg_plan_run.c) ----
 * Int8 node id's plan with float_io, its packed weights and the scratch
 * bytes its calls use, made once (cg_plan_host_prepare); then the plan run
 * on the host through a table from kernel name to runtime function:
 * values[k] holds node k's float value (those the calls read), y gets the
 * node's float result (its float epilogue is the caller's). */
typedef struct cg_plan_host {
    const ir_plan *plan;
    const int8_t *weights;
    size_t scratch_bytes;
} cg_plan_host;
cg_plan_host cg_plan_host_prepare(ir_graph *g, int id);
void cg_plan_host_run(const ir_graph *g, int id, const cg_plan_host *h, float *const *values, float *y);
/* A packed parameter's data in its layout (n->layout), in arena a, and its
 * element count (a Winograd weight's is 36/9 of its own). */
float *cg_packed_data(ax_arena *a, const ir_node *n);
size_t cg_packed_count(const ir_node *n);
/* ---- Winograd (cg_c_target.c; runtime/axrt_winograd.c) ----
 * Whether conv n runs Winograd F(m x m, 3 x 3), and its m: 0 (direct), 4
 * or 2.  A Float32 3x3 stride-1 dilation-1 groups-1 conv on a parameter
 * weight, not in a training graph, where g->conv_algo asks for it
 * (winograd: F(4,3); auto: the cost model picks m); decided from n alone,
 * so the memory plan (its scratch) and the selection agree.  It runs so
 * where its weight's layout is IR_LAYOUT_WINOGRAD (m 4) or _WINOGRAD2 (m 2). */
int cg_conv_winograd(const ir_graph *g, const ir_node *n);
/* The m of a Winograd weight layout (0 for any other layout). */
int cg_winograd_m(ir_layout layout);
/* The runtime's conv params of conv n (NHWC; cg_kernel_facts.c). */
axrt_conv2d_params cg_conv_params(const ir_graph *g, const ir_node *n);

/* The C target's facts (cg_c_target.c), shared with the targets that run the
 * same CPU kernels. */
size_t cg_c_scratch_bytes(const ir_node *n, const ir_graph *g);
bool cg_c_can_inplace(const ir_node *n, const ir_graph *g, int k);
/* The C target (and the LLVM one, calling the same kernels) computes a 1x1
 * conv row by row inside the depthwise conv reading it
 * (axrt_expand_depthwise_f32), where that pays. */
bool cg_c_fuse_rows(const ir_node *producer, const ir_node *consumer, const ir_graph *g);
/* The C target (and LLVM) runs a 1x1 conv reading x .* s as
 * axrt_conv2d_scaled_f32 on x (its packed weight scaled by s into scratch)
 * where the input pixels outnumber the output channels (cg_c_target.c). */
bool cg_c_fold_input_scale(const ir_node *scale, const ir_node *consumer, const ir_graph *g);

/* The GPU targets' facts and selection (cg_gpu.c): parameters stay as
 * written, no scratch, no in-place kernels. */
size_t cg_gpu_scratch_bytes(const ir_node *n, const ir_graph *g);
bool cg_gpu_can_inplace(const ir_node *n, const ir_graph *g, int k);
void cg_gpu_select(ir_graph *g);
/* The op n runs that the GPU back ends have no kernel for, or NULL (their
 * dispatch table, generated from ir/ops.def). */
const char *cg_gpu_unsupported(const ir_graph *g, const ir_node *n);

#endif
