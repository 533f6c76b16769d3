/* cg_c_train.c — the training step as C (axc --train; docs/training.md).
 *
 * From the driver's two planned graphs (passes/train_graph_step.c) -- the step
 * (forward in training mode, loss, backward; its one output the loss) and
 * the model in inference mode -- writes, besides the usual constants:
 *   <name>_state_init(state)       the embedded parameters into the caller's
 *                                  state, optimizer moments and step count 0
 *   <name>_train_step(state, inputs..., target, arena)
 *                                  forward, loss, backward and update on one
 *                                  batch; returns the loss (NaN, with the
 *                                  state untouched, for a class index out of
 *                                  range)
 *   <name>_forward_state(state, inputs..., outputs..., arena)
 *                                  inference with the state's parameters
 *   <name>_train_grads(state, inputs..., target, grads, ready, user, arena)
 *   <name>_train_apply(state, grads)
 *                                  with --grad-exchange only: the step split
 *                                  at its gradient-exchange seam (the
 *                                  gradients handed to the caller as they
 *                                  complete, then the update from the
 *                                  caller's; docs/distributed.md)
 *   <name>_state_tensors[], <name>_state_offsets[]
 *                                  each state tensor (PyTorch name, dtype,
 *                                  shape) and its byte offset in the state
 * Both graphs read every parameter from the state (cg_c_body.state_offset);
 * each parameter's update (runtime axrt_optim_step_*, shared with `axc
 * train`) runs right after the node the driver chose (its gradient
 * complete, the parameter read for the last time), and a BatchNorm running
 * statistic's new value is copied back there.  Those statements -- the
 * updates, the clipping, the loss scaling, the split step's hand-offs and
 * apply, state_init's copies -- are the step's plan (ir_step_plan,
 * cg_plan_step.c), printed here as it is.  The state starts with a
 * 64-byte header of int64_t words (CG_TRAIN_HEADER_*): the step count, the
 * seed of Dropout's generator (--seed, set by state_init) and the step in
 * progress (1-based), the last two being the step's Dropout counter, as `axc
 * train` sets it; then the tensors, each 64-byte aligned.  A Float16 or
 * BFloat16 model trains in mixed precision (docs/training.md#mixed-precision):
 * each half parameter has a Float32 master and Float32 moments, updated by
 * axrt_amp_step, and a Float16 step scales its loss (emit_loss_scaling; the
 * scale and its counters in the header's words 5 to 7). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cg_c.h"
#include "cg_target.h"
#include "train_graph.h"

typedef struct train_emit {
    const cg_request *req;
    const pass_train_step *t;
    ir_graph *step, *fwd;
    const char *name;
    char upper[256];
    cg_c_body step_body, fwd_body;
    /* --grad-exchange: the split step's body (gradients handed out, no
     * update) */
    cg_c_body grads_body;
    const ir_step_plan *plan;   /* the step's own statements (cg_plan_step.c) */
} train_emit;

static const char *ctype_of(axrt_dtype d) { return ir_dtypes[d].c_type; }

/* The step's loss (its one output): Float32 in a half model's step. */
static axrt_dtype loss_dtype(const train_emit *te) { return te->step->nodes[te->step->outputs[0]].dtype; }

/* Whether a tensor of the state has a Float32 master (mixed precision). */
static bool has_masters(const pass_train_step *t)
{
    for (int k = 0; k < t->ntensors; k++)
        if (t->tensors[k].master >= 0)
            return true;
    return false;
}

static const char *state_ref(ax_arena *a, axrt_dtype dtype, int64_t offset)
{
    if (offset < 0)
        return "NULL";
    return ax_sprintf(a, "(%s *)((unsigned char *)state + %lld)", ctype_of(dtype), (long long)offset);
}

/* cg_c_body.fused_node: a gradient matmul whose update runs inside it. */
static bool fused_node(const cg_c_body *b, int id)
{
    const train_emit *te = b->user;
    return b == &te->step_body && te->plan->fused[id];
}

/* ---- the step's plan (ir_step_plan, cg_plan_step.c) as C ---- */

/* Argument a of a call of the step's plan as a C expression. */
static const char *step_arg_text(const cg_c_body *b, const ir_arg *a)
{
    const train_emit *te = b->user;
    ax_arena *ar = b->g->ctx->arena;
    switch (a->kind) {
    case IR_ARG_VALUE: return a->node == IR_NONE ? "NULL" : cg_c_storage(b, a->node);
    case IR_ARG_SIZE:
    case IR_ARG_INT64: return ax_sprintf(ar, "%lld", (long long)a->value);
    case IR_ARG_DTYPE: return ir_dtypes[a->dtype].enum_name;
    case IR_ARG_STATE: return state_ref(ar, a->dtype, a->value);
    case IR_ARG_STATE_BYTES: return ax_sprintf(ar, "(unsigned char *)state + %lld", (long long)a->value);
    case IR_ARG_EMBEDDED: return ax_sprintf(ar, "%s_p%d.values", te->name, a->node);
    case IR_ARG_OPTIM: return a->value ? ax_sprintf(ar, "&%s_optim", te->name) : "&step_optim";
    case IR_ARG_LOCAL: return a->name;
    case IR_ARG_GRADS_IN:
        return ax_sprintf(ar, "(const %s *)(const void *)((const unsigned char *)grads + %lld)", ctype_of(a->dtype),
                          (long long)a->value);
    case IR_ARG_GRADS_OUT: return ax_sprintf(ar, "(unsigned char *)grads + %lld", (long long)a->value);
    default: ax_die("cg_c_train: argument kind %d in a step's plan", (int)a->kind);
    }
}

/* "kernel(arg, ...)" */
static void put_step_call(const cg_c_body *b, const ir_call *c, ax_buf *out)
{
    ax_buf_printf(out, "%s(", c->kernel);
    for (int i = 0; i < c->nargs; i++)
        ax_buf_printf(out, "%s%s", i ? ", " : "", step_arg_text(b, &c->args[i]));
    ax_buf_puts(out, ")");
}

/* clip_grad_norm_: the L2 norm of each gradient, the norm of those (in
 * double, as clip_grad_norm_ computes it), and each gradient scaled by
 * clip / (norm + 1e-6) when that is below 1. */
static void emit_clip_norm(const cg_c_body *b, const ir_step_op *op, ax_buf *out)
{
    ax_buf scale = {0};
    ax_buf_puts(out, "    {   /* clip_grad_norm_ */\n        double squares_ = 0, norm_;\n");
    for (int k = 0; k < op->count; k++) {
        const ir_node *gn = &b->g->nodes[op->nodes[k]];
        const char *g = cg_c_storage(b, op->nodes[k]);
        ax_buf_printf(out, "        norm_ = 0;\n        for (size_t i_ = 0; i_ < %lld; i_++)\n"
                           "            norm_ += (double)(%s)[i_] * (double)(%s)[i_];\n"
                           "        norm_ = sqrt(norm_);\n        squares_ += norm_ * norm_;\n",
                      (long long)ir_numel(gn), g, g);
        if (op->scaled[k])
            ax_buf_printf(&scale, "            for (size_t i_ = 0; i_ < %lld; i_++)\n"
                                  "                (%s)[i_] = (%s)((double)(%s)[i_] * coef_);\n",
                          (long long)ir_numel(gn), g, ctype_of(gn->dtype), g);
    }
    ax_buf_printf(out, "        const double coef_ = %s / (sqrt(squares_) + 1e-6);\n        if (coef_ < 1) {\n%s"
                       "        }\n    }\n",
                  ax_sprintf(b->g->ctx->arena, "%.17g", op->real), scale.data ? scale.data : "");
    ax_buf_free(&scale);
}

/* clip_grad_value_: the gradient clamped to [-clip, clip] in place (a NaN
 * stays NaN). */
static void emit_clip_value(const cg_c_body *b, const ir_step_op *op, ax_buf *out)
{
    const ir_node *gn = &b->g->nodes[op->node];
    const char *g = cg_c_storage(b, op->node), *c = ax_sprintf(b->g->ctx->arena, "%.17g", op->real);
    ax_buf_printf(out, "    for (size_t i_ = 0; i_ < %lld; i_++) {   /* clip_grad_value_ */\n"
                       "        const %s g_ = (%s)[i_];\n        (%s)[i_] = g_ < -%s ? -%s : g_ > %s ? %s : g_;\n    }\n",
                  (long long)ir_numel(gn), ctype_of(gn->dtype), g, g, c, c, c, c);
}

/* A Float16 step's dynamic loss scaling (torch.cuda.amp.GradScaler's): a
 * gradient with an inf or a NaN skips every update (the step counted, the
 * optimizer's not) and halves the scale; otherwise the updates unscale by
 * it, and after CG_TRAIN_SCALE_INTERVAL finite steps in a row it doubles. */
static void emit_loss_scaling(const cg_c_body *b, const ir_step_op *op, ax_buf *out)
{
    const train_emit *te = b->user;
    ax_buf finite = {0};
    for (int k = 0; k < op->count; k++) {
        ax_buf_puts(&finite, k ? " &&\n        " : "        ");
        put_step_call(b, &op->calls[k], &finite);
    }
    ax_buf_printf(out, "    {   /* dynamic loss scaling */\n        float scale;\n        int64_t *words = state;\n"
                       "        memcpy(&scale, (unsigned char *)state + %d, sizeof scale);\n        if (!(\n%s)) {\n"
                       "            scale *= 0.5f;   /* skip the update, halve the scale */\n"
                       "            memcpy((unsigned char *)state + %d, &scale, sizeof scale);\n"
                       "            words[%d] = 0;\n            words[%d] += 1;\n            words[%d] = step;\n"
                       "            return %s[0];\n        }\n        inv_scale = 1.0f / scale;\n"
                       "        if (++words[%d] == %d) {\n            scale *= 2.0f;\n            words[%d] = 0;\n"
                       "            memcpy((unsigned char *)state + %d, &scale, sizeof scale);\n        }\n    }\n",
                  CG_TRAIN_HEADER_SCALE * 8, finite.data, CG_TRAIN_HEADER_SCALE * 8, CG_TRAIN_HEADER_GROWTH,
                  CG_TRAIN_HEADER_SKIPPED, CG_TRAIN_HEADER_STEPS, te->step_body.output_names[0],
                  CG_TRAIN_HEADER_GROWTH, CG_TRAIN_SCALE_INTERVAL, CG_TRAIN_HEADER_GROWTH, CG_TRAIN_HEADER_SCALE * 8);
    ax_buf_free(&finite);
}

/* A list of the step's plan, each statement on its lines; notes_after:
 * a call's note follows it on its line (state_init), else precedes it. */
static void emit_step_list(const cg_c_body *b, const ir_step_list *l, bool notes_after, ax_buf *out)
{
    for (int k = 0; k < l->nops; k++) {
        const ir_step_op *op = &l->ops[k];
        switch (op->kind) {
        case IR_STEP_CALL:
            if (op->note && !notes_after)
                ax_buf_printf(out, "    /* %s */\n", op->note);
            ax_buf_puts(out, "    ");
            put_step_call(b, &op->call, out);
            ax_buf_puts(out, op->note && notes_after ? ax_sprintf(b->g->ctx->arena, ";   /* %s */\n", op->note) : ";\n");
            break;
        case IR_STEP_READY:
            ax_buf_printf(out, "    if (ready != NULL)\n        ready(user, %lld, %lld);\n", (long long)op->offset,
                          (long long)op->bytes);
            break;
        case IR_STEP_CLIP_VALUE: emit_clip_value(b, op, out); break;
        case IR_STEP_CLIP_NORM: emit_clip_norm(b, op, out); break;
        case IR_STEP_LOSS_SCALE: emit_loss_scaling(b, op, out); break;
        }
    }
}

/* cg_c_body.after_node: the step's plan after node id (the whole step's
 * updates, or the split step's hand-offs). */
static void emit_after(const cg_c_body *b, int id, ax_buf *out)
{
    const train_emit *te = b->user;
    emit_step_list(b, b == &te->grads_body ? &te->plan->after_split[id] : &te->plan->after[id], false, out);
}

/* "const float *x, const int64_t *target, " (inputs), "float *y, " (outputs). */
static void put_arguments(ax_buf *out, const ir_graph *g, const cg_c_body *b, bool outputs)
{
    for (int i = 0; i < g->ninputs; i++)
        ax_buf_printf(out, "const %s *%s, ", ctype_of(g->nodes[g->inputs[i]].dtype), b->input_names[i]);
    for (int i = 0; outputs && i < g->noutputs; i++)
        ax_buf_printf(out, "%s *%s, ", ctype_of(g->nodes[g->outputs[i]].dtype), b->output_names[i]);
}

static void put_train_signature(const train_emit *te, ax_buf *out)
{
    ax_buf_printf(out, "%s %s_train_step(void *state, ", ctype_of(loss_dtype(te)), te->name);
    put_arguments(out, te->step, &te->step_body, false);
    ax_buf_puts(out, "void *arena)");
}

static void put_forward_signature(const train_emit *te, ax_buf *out)
{
    ax_buf_printf(out, "int %s_forward_state(const void *state, ", te->name);
    put_arguments(out, te->fwd, &te->fwd_body, true);
    ax_buf_puts(out, "void *arena)");
}

static void put_tensor_lines(ax_buf *h, const char *what, const ir_graph *g, const int *ids,
                             const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        char shape[128];
        const ir_node *x = &g->nodes[ids[i]];
        ax_buf_printf(h, "   %s %s %s%s\n", what, names[i], ir_dtype_name(x->dtype),
                      ir_shape_str(x->shape, x->rank, shape, sizeof shape));
    }
}

static void emit_header(const train_emit *te, ax_buf *h)
{
    ax_arena *a = te->step->ctx->arena;
    char *summary = ax_strdup(a, te->t->summary);
    for (char *c = summary; *c; c++)   /* nothing that could end the comment */
        if (!isprint((unsigned char)*c) || strchr("*/\\", *c))
            *c = '_';
    ax_buf_printf(h, "\n/* training step of model %s (axc --train; docs/training.md)\n   %s\n", te->name,
                  summary);
    put_tensor_lines(h, "input ", te->step, te->step->inputs, te->step_body.input_names, te->step->ninputs);
    put_tensor_lines(h, "output", te->fwd, te->fwd->outputs, te->fwd_body.output_names, te->fwd->noutputs);
    ax_buf_printf(h,
                  "   state: %s_STATE_BYTES bytes, caller-owned, 64-byte aligned: a header of int64_t\n"
                  "   words (the step count, Dropout's seed, the step in progress), the\n"
                  "   parameters (%s_state_tensors[k] at byte %s_state_offsets[k]) and the optimizer's\n"
                  "   moments; %s_state_init fills it from the embedded parameters.\n"
                  "   %s_train_step: forward, loss, backward and update on one batch; returns the loss\n"
                  "   (NaN, state untouched, for a class index out of range).  %s_forward_state:\n"
                  "   inference with the state's parameters.  Arenas: %s_TRAIN_ARENA_BYTES and\n"
                  "   %s_ARENA_BYTES, 64-byte aligned; NULL uses a static one (not reentrant).\n"
                  "   %s_set_lr / %s_set_momentum: the learning rate and the momentum (SGD's, when\n"
                  "   compiled with one; beta1 of Adam, AdamW, Lion) of the next steps, kept in the\n"
                  "   state's header (state_init writes the compiled ones). */\n",
                  te->upper, te->name, te->name, te->name, te->name, te->name, te->upper, te->upper, te->name,
                  te->name);
    ax_buf_printf(h, "#define %s_STATE_BYTES ((size_t)%zu)\n#define %s_TRAIN_ARENA_BYTES ((size_t)%zu)\n"
                     "#define %s_ARENA_BYTES ((size_t)%zu)\n#define %s_STATE_TENSORS %d\n",
                  te->upper, te->t->state_bytes, te->upper, te->step->arena_bytes, te->upper,
                  te->fwd->arena_bytes, te->upper, te->t->ntensors);
    ax_buf_printf(h, "void %s_state_init(void *state);\nvoid %s_set_lr(void *state, double lr);\n"
                     "void %s_set_momentum(void *state, double momentum);\n", te->name, te->name, te->name);
    put_train_signature(te, h);
    ax_buf_puts(h, ";\n");
    put_forward_signature(te, h);
    ax_buf_printf(h, ";\nextern const axrt_tensor_info %s_state_tensors[%d];\nextern const size_t %s_state_offsets[%d];\n",
                  te->name, te->t->ntensors, te->name, te->t->ntensors);
}

static void emit_static_arena(ax_buf *c, const char *name, size_t bytes)
{
    if (!bytes)
        bytes = 1;
    ax_buf_printf(c, "\n#if defined(__GNUC__)\nstatic unsigned char %s[%zu] __attribute__((aligned(64)));\n"
                     "#else\nstatic unsigned char %s[%zu];\n#endif\n",
                  name, bytes, name, bytes);
}

static void emit_voids(ax_buf *c, const cg_c_body *b, int ninputs)
{
    ax_buf_puts(c, "    (void)arena;\n");
    for (int i = 0; i < ninputs; i++)
        ax_buf_printf(c, "    (void)%s;\n", b->input_names[i]);
}

static void emit_state_tables(const train_emit *te, ax_buf *c)
{
    ax_arena *a = te->step->ctx->arena;
    const int n = te->t->ntensors;
    ax_buf_printf(c, "\nconst axrt_tensor_info %s_state_tensors[%d] = {\n", te->name, n);
    for (int k = 0; k < n; k++) {
        const ir_node *p = &te->step->nodes[te->t->tensors[k].param];
        ax_buf_printf(c, "    {\"%s\", %s, %d, {", cg_plan_step_name(a, p->name), ir_dtypes[p->dtype].enum_name, p->rank);
        for (int d = 0; d < p->rank; d++)
            ax_buf_printf(c, "%s%lld", d ? ", " : "", (long long)p->shape[d]);
        ax_buf_puts(c, p->rank ? "}},\n" : "0}},\n");
    }
    ax_buf_printf(c, "};\nconst size_t %s_state_offsets[%d] = {", te->name, n);
    for (int k = 0; k < n; k++)
        ax_buf_printf(c, "%s%lld", k ? ", " : "", (long long)te->t->tensors[k].offset);
    ax_buf_puts(c, "};\n");
}

/* The field of axrt_optim the header's momentum word sets. */
static const char *momentum_field(const train_emit *te)
{
    return te->t->optim.kind == AXRT_OPT_SGD ? "momentum" : "beta1";
}

static void emit_state_init(const train_emit *te, ax_buf *c)
{
    ax_buf_printf(c, "\nvoid %s_state_init(void *state)\n{\n    memset(state, 0, %zu);\n"
                     "    ((int64_t *)state)[%d] = (int64_t)UINT64_C(%llu);   /* Dropout's seed */\n",
                  te->name, te->t->state_bytes, CG_TRAIN_HEADER_SEED, (unsigned long long)te->t->seed);
    emit_step_list(&te->step_body, &te->plan->init, true, c);
    if (te->t->loss_seed != IR_NONE)
        ax_buf_printf(c, "    {\n        const float scale = %.1ff;   /* the loss scale */\n"
                         "        memcpy((unsigned char *)state + %d, &scale, sizeof scale);\n    }\n",
                      CG_TRAIN_SCALE_INIT, CG_TRAIN_HEADER_SCALE * 8);
    ax_buf_printf(c, "    %s_set_lr(state, %s_optim.lr);\n    %s_set_momentum(state, %s_optim.%s);\n}\n", te->name,
                  te->name, te->name, te->name, momentum_field(te));
}

/* <name>_set_lr, <name>_set_momentum: the header's doubles (CG_TRAIN_HEADER_LR,
 * _MOMENTUM), copied bytewise (the header is int64_t words). */
static void emit_setters(const train_emit *te, ax_buf *c)
{
    static const char *const what[2] = {"lr", "momentum"};
    const int word[2] = {CG_TRAIN_HEADER_LR, CG_TRAIN_HEADER_MOMENTUM};
    for (int k = 0; k < 2; k++)
        ax_buf_printf(c, "\nvoid %s_set_%s(void *state, double %s)\n{\n"
                         "    memcpy((unsigned char *)state + %d, &%s, sizeof(double));\n}\n",
                      te->name, what[k], what[k], word[k] * 8, what[k]);
}

static void emit_optim(const train_emit *te, ax_buf *c)
{
    static const char *const kinds[] = {"AXRT_OPT_SGD", "AXRT_OPT_ADAM", "AXRT_OPT_ADAMW", "AXRT_OPT_LION"};
    const axrt_optim *h = &te->t->optim;
    ax_buf_printf(c, "\nstatic const axrt_optim %s_optim = {%s, %.17g, %.17g, %.17g, %.17g, %.17g, %.17g, %d};\n",
                  te->name, kinds[h->kind], h->lr, h->momentum, h->weight_decay, h->beta1, h->beta2, h->eps,
                  h->nesterov ? 1 : 0);
}

/* The indices an embedding of the step reads straight from an input (the
 * cross_entropy target's one-hot rows, a token input) checked before
 * anything writes the state: an index out of range returns NaN with the
 * state untouched.  The embedding kernel's own check fires too late for
 * that -- a BatchNorm running statistic or the Dropout counter may already
 * have been written. */
static void emit_index_checks(const train_emit *te, ax_buf *c)
{
    const ir_graph *g = te->step;
    for (int id = 0; id < g->nnodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->dead || n->op != IR_OP_embedding)
            continue;
        for (int i = 0; i < g->ninputs; i++) {
            const ir_node *idx = &g->nodes[g->inputs[i]];
            if (g->inputs[i] != n->src[0] || (idx->dtype != AXRT_I64 && idx->dtype != AXRT_I32))
                continue;
            ax_buf_printf(c, "    for (int64_t i_ = 0; i_ < %lld; i_++)   /* %%%d's rows: the state stays untouched */\n"
                             "        if (%s[i_] < 0 || %s[i_] >= %lld)\n            return NAN;\n",
                          (long long)ir_numel(idx), id, te->step_body.input_names[i], te->step_body.input_names[i],
                          (long long)g->nodes[n->src[1]].shape[0]);
        }
    }
}

static void emit_train_step(const train_emit *te, ax_buf *c)
{
    const char *loss = te->step_body.output_names[0];
    emit_static_arena(c, ax_sprintf(te->step->ctx->arena, "%s_train_arena", te->name), te->step->arena_bytes);
    ax_buf_puts(c, "\n");
    put_train_signature(te, c);
    ax_buf_printf(c, "\n{\n    %s %s[1];\n    const int64_t step = ((const int64_t *)state)[%d] + 1;\n"
                     "    axrt_optim step_optim = %s_optim;   /* the caller's lr and momentum */\n"
                     "    memcpy(&step_optim.lr, (const unsigned char *)state + %d, sizeof(double));\n"
                     "    memcpy(&step_optim.%s, (const unsigned char *)state + %d, sizeof(double));\n"
                     "    (void)step_optim;\n    if (arena == NULL)\n        arena = %s_train_arena;\n",
                  ctype_of(loss_dtype(te)), loss, CG_TRAIN_HEADER_STEPS, te->name, CG_TRAIN_HEADER_LR * 8,
                  momentum_field(te), CG_TRAIN_HEADER_MOMENTUM * 8, te->name);
    if (has_masters(te->t))
        ax_buf_printf(c, "    const int64_t opt_step = step - ((const int64_t *)state)[%d];   /* skipped steps left out */\n"
                         "    float inv_scale = 1.0f;   /* 1 / the loss scale */\n    (void)inv_scale;\n",
                      CG_TRAIN_HEADER_SKIPPED);
    emit_index_checks(te, c);
    if (te->t->dropout_counter != IR_NONE)
        ax_buf_printf(c, "    ((int64_t *)state)[%d] = step;   /* Dropout's counter: seed, step */\n",
                      CG_TRAIN_HEADER_STEP);
    emit_voids(c, &te->step_body, te->step->ninputs);
    cg_c_emit_body(&te->step_body, c);
    ax_buf_printf(c, "    ((int64_t *)state)[%d] = step;\n    return %s[0];\n}\n", CG_TRAIN_HEADER_STEPS, loss);
}

/* ---- the gradient-exchange seam (--grad-exchange; docs/distributed.md) ---- */

static void put_grads_signature(const train_emit *te, ax_buf *out)
{
    ax_buf_printf(out, "%s %s_train_grads(void *state, ", ctype_of(te->step->dtype), te->name);
    put_arguments(out, te->step, &te->grads_body, false);
    ax_buf_puts(out, "void *grads, void (*ready)(void *user, size_t offset, size_t bytes), void *user, void *arena)");
}

static void put_apply_signature(const train_emit *te, ax_buf *out)
{
    ax_buf_printf(out, "void %s_train_apply(void *state, const void *grads)", te->name);
}

static void emit_split_header(const train_emit *te, ax_buf *h)
{
    ax_buf_printf(h,
                  "\n/* the gradient-exchange seam (axc --train --grad-exchange; docs/distributed.md):\n"
                  "   %s_train_grads: forward, loss and backward on one batch, no update; each\n"
                  "   parameter's gradient is copied into grads (%s_GRAD_BYTES, caller-owned, packed in\n"
                  "   the order the backward pass completes them, so [0, offset + bytes) is complete at\n"
                  "   each call) and then ready(user, offset, bytes) is called (ready may be NULL);\n"
                  "   returns the batch's loss.  %s_train_apply: the optimizer's update of every\n"
                  "   parameter from grads (e.g. the mean of every process's) and the step count.\n"
                  "   grads then apply equals %s_train_step.  %s_grad_offsets[k]: state tensor k's\n"
                  "   byte offset in grads, -1 for a running statistic. */\n",
                  te->name, te->upper, te->name, te->name, te->name);
    ax_buf_printf(h, "#define %s_GRAD_BYTES ((size_t)%zu)\n", te->upper, te->plan->grad_bytes ? te->plan->grad_bytes : 1);
    put_grads_signature(te, h);
    ax_buf_puts(h, ";\n");
    put_apply_signature(te, h);
    ax_buf_printf(h, ";\nextern const int64_t %s_grad_offsets[%d];\n", te->name, te->t->ntensors);
}

static void emit_train_grads(const train_emit *te, ax_buf *c)
{
    const char *loss = te->grads_body.output_names[0];
    ax_buf_printf(c, "\nconst int64_t %s_grad_offsets[%d] = {", te->name, te->t->ntensors);
    for (int k = 0; k < te->t->ntensors; k++)
        ax_buf_printf(c, "%s%lld", k ? ", " : "", (long long)te->plan->grad_offset[k]);
    ax_buf_puts(c, "};\n\n");
    put_grads_signature(te, c);
    ax_buf_printf(c, "\n{\n    %s %s[1];\n    const int64_t step = ((const int64_t *)state)[%d] + 1;\n"
                     "    if (arena == NULL)\n        arena = %s_train_arena;\n",
                  ctype_of(te->step->dtype), loss, CG_TRAIN_HEADER_STEPS, te->name);
    if (has_masters(te->t))
        ax_buf_printf(c, "    const int64_t opt_step = step - ((const int64_t *)state)[%d];   /* skipped steps left out */\n"
                         "    float inv_scale = 1.0f;   /* 1 / the loss scale */\n    (void)inv_scale;\n",
                      CG_TRAIN_HEADER_SKIPPED);
    emit_index_checks(te, c);
    if (te->t->dropout_counter != IR_NONE)
        ax_buf_printf(c, "    ((int64_t *)state)[%d] = step;   /* Dropout's counter: seed, step */\n",
                      CG_TRAIN_HEADER_STEP);
    else
        ax_buf_puts(c, "    (void)step;\n");
    emit_voids(c, &te->grads_body, te->step->ninputs);
    ax_buf_puts(c, "    (void)grads;\n    (void)ready;\n    (void)user;\n");
    cg_c_emit_body(&te->grads_body, c);
    ax_buf_printf(c, "    return %s[0];\n}\n", loss);
}

static void emit_train_apply(const train_emit *te, ax_buf *c)
{
    ax_buf_puts(c, "\n");
    put_apply_signature(te, c);
    ax_buf_printf(c, "\n{\n    const int64_t step = ((const int64_t *)state)[%d] + 1;\n    (void)grads;\n",
                  CG_TRAIN_HEADER_STEPS);
    emit_step_list(&te->step_body, &te->plan->apply, false, c);
    ax_buf_printf(c, "    ((int64_t *)state)[%d] = step;\n}\n", CG_TRAIN_HEADER_STEPS);
}

static void emit_forward_state(const train_emit *te, ax_buf *c)
{
    emit_static_arena(c, ax_sprintf(te->step->ctx->arena, "%s_forward_arena", te->name), te->fwd->arena_bytes);
    ax_buf_puts(c, "\n");
    put_forward_signature(te, c);
    ax_buf_printf(c, "\n{\n    if (arena == NULL)\n        arena = %s_forward_arena;\n", te->name);
    emit_voids(c, &te->fwd_body, te->fwd->ninputs);
    ax_buf_puts(c, "    (void)state;\n");
    cg_c_emit_body(&te->fwd_body, c);
    ax_buf_puts(c, "    return 0;\n}\n");
}

static void init_body(train_emit *te, cg_c_body *b, ir_graph *g, bool forward)
{
    memset(b, 0, sizeof *b);
    b->g = g;
    b->prefix = forward ? ax_sprintf(g->ctx->arena, "%s_fwd", te->name) : te->name;
    b->source_name = te->req->source_name;
    cg_argument_names(g, &b->input_names, &b->output_names);
    b->state_offset = cg_train_state_offsets(g, te->t, forward);
    b->state_const = forward;
    b->fail_return = forward ? "status" : "NAN";
    b->after_node = forward ? NULL : emit_after;
    b->fused_node = forward ? NULL : fused_node;
    b->blas = te->req->blas;
    b->user = te;
}

int cg_c_train_emit(const cg_request *req, ax_buf *c_out, ax_buf *h_out)
{
    train_emit te = {req, req->train, req->models[0], req->train->forward, req->models[0]->name, {0}, {0}, {0}, {0}, NULL};
    int errors = cg_c_check(te.step) + cg_c_check(te.fwd);
    if (errors)
        return errors;
    size_t len = 0;
    for (const char *c = te.name; *c && len + 1 < sizeof te.upper; c++)
        te.upper[len++] = (char)toupper((unsigned char)*c);
    te.plan = cg_plan_train(te.step, te.t, req->blas);   /* what --train --emit=ir shows */
    init_body(&te, &te.step_body, te.step, false);
    init_body(&te, &te.fwd_body, te.fwd, true);
    if (req->train->grad_exchange)
        init_body(&te, &te.grads_body, te.step, false);
    ax_buf_printf(h_out, "/* Generated by axc from %s -- do not edit. */\n#ifndef AXC_TRAIN_%s_H\n#define AXC_TRAIN_%s_H\n\n"
                         "#include \"axrt.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
                  cg_plan_step_name(te.step->ctx->arena, req->source_name), te.upper, te.upper);
    emit_header(&te, h_out);
    if (req->train->grad_exchange)
        emit_split_header(&te, h_out);
    ax_buf_puts(h_out, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
    cg_c_emit_preamble(req, c_out);
    if (req->blas)
        cg_c_emit_blas_helpers(req, c_out);
    ax_buf_printf(c_out, "\n/* ---- training step of model %s ---- */\n", te.name);
    cg_c_emit_constants(&te.step_body, c_out);
    cg_c_emit_constants(&te.fwd_body, c_out);
    emit_optim(&te, c_out);
    emit_state_tables(&te, c_out);
    emit_setters(&te, c_out);
    emit_state_init(&te, c_out);
    emit_train_step(&te, c_out);
    if (req->train->grad_exchange) {
        emit_train_grads(&te, c_out);
        emit_train_apply(&te, c_out);
    }
    emit_forward_state(&te, c_out);
    return 0;
}
