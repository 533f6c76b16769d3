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
 * statistic's new value is copied back there.  The state starts with a
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
#include "ir_use.h"
#include "train_graph.h"

typedef struct train_emit {
    const cg_request *req;
    const pass_train_step *t;
    ir_graph *step, *fwd;
    const char *name;
    char upper[256];
    cg_c_body step_body, fwd_body;
    ir_use step_use;   /* who reads each node of the step (update_fuses) */
    /* --grad-exchange: the split step's body (gradients handed out, no
     * update) and each state tensor's byte offset in the gradient buffer
     * (-1: no gradient), laid out in the order the gradients complete */
    cg_c_body grads_body;
    int64_t *grad_offset;
    size_t grad_bytes;
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

static const char *kernel_sfx(axrt_dtype d) { return d == AXRT_F64 ? "f64" : "f32"; }

/* A parameter name as C string contents (PyTorch names are tame; anything
 * else becomes '_'). */
static const char *c_string_text(ax_arena *a, const char *text)
{
    char *s = ax_strdup(a, text ? text : "");
    for (char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
            *c = '_';
    return s;
}

static const char *state_ref(ax_arena *a, axrt_dtype dtype, int64_t offset)
{
    if (offset < 0)
        return "NULL";
    return ax_sprintf(a, "(%s *)((unsigned char *)state + %lld)", ctype_of(dtype), (long long)offset);
}

/* Whether s's update can run inside its gradient's Float32 matmul
 * (axrt_matmul_optim_f32, each block of rows updated while in cache): the
 * gradient is a plain 2-D matmul read by nothing but the update, which runs
 * right after it, and neither operand lives in the state (a parameter the
 * update would change under the matmul). */
static bool update_fuses(const cg_c_body *b, const pass_train_tensor *s)
{
    const ir_graph *g = b->g;
    const train_emit *te = b->user;
    if (s->value != IR_NONE || s->grad == IR_NONE || s->after != s->grad || ir_use_count(&te->step_use, s->grad) ||
        te->t->clip_norm > 0 || te->t->clip_value > 0)   /* the gradient is clipped first */
        return false;
    const ir_node *n = &g->nodes[s->grad], *p = &g->nodes[s->param];
    if (n->op != IR_OP_matmul || n->dead || n->dtype != AXRT_F32 || p->dtype != AXRT_F32 || n->nsrc != 2 ||
        n->rank != 2 || ir_numel(n) != ir_numel(p))
        return false;
    for (int i = 0; i < 2; i++)
        if (g->nodes[n->src[i]].rank != 2 || b->state_offset[cg_c_storage_owner(b, n->src[i])] >= 0)
            return false;
    return true;
}

/* cg_c_body.fused_node: a gradient matmul whose update runs inside it. */
static bool fused_node(const cg_c_body *b, int id)
{
    const train_emit *te = b->user;
    if (b == &te->grads_body)
        return false;
    for (int k = 0; k < te->t->ntensors; k++)
        if (te->t->tensors[k].grad == id && update_fuses(b, &te->t->tensors[k]))
            return true;
    return false;
}

/* --clip-grad-norm, before the updates at node id (the step's last, where
 * the driver placed every gradient's): the L2 norm of each gradient, the
 * norm of those (in double, as clip_grad_norm_ computes it), and each
 * gradient scaled by clip / (norm + 1e-6) when that is below 1. */
static void emit_clip_norm(const cg_c_body *b, int id, ax_buf *out)
{
    const train_emit *te = b->user;
    ax_arena *a = b->g->ctx->arena;
    ax_buf scale = {0};
    bool any = false;
    for (int k = 0; k < te->t->ntensors; k++) {
        const pass_train_tensor *s = &te->t->tensors[k];
        if (s->grad == IR_NONE || s->after != id)
            continue;
        const ir_node *gn = &b->g->nodes[s->grad];
        const char *g = cg_c_storage(b, s->grad);
        if (!any)
            ax_buf_puts(out, "    {   /* clip_grad_norm_ */\n        double squares_ = 0, norm_;\n");
        any = true;
        ax_buf_printf(out, "        norm_ = 0;\n        for (size_t i_ = 0; i_ < %lld; i_++)\n"
                           "            norm_ += (double)(%s)[i_] * (double)(%s)[i_];\n"
                           "        norm_ = sqrt(norm_);\n        squares_ += norm_ * norm_;\n",
                      (long long)ir_numel(gn), g, g);
        bool seen = false;   /* a gradient sharing another's storage is scaled once */
        for (int j = 0; j < k && !seen; j++) {
            const pass_train_tensor *o = &te->t->tensors[j];
            seen = o->grad != IR_NONE && o->after == id && !strcmp(cg_c_storage(b, o->grad), g);
        }
        if (!seen)
            ax_buf_printf(&scale, "            for (size_t i_ = 0; i_ < %lld; i_++)\n"
                                  "                (%s)[i_] = (%s)((double)(%s)[i_] * coef_);\n",
                          (long long)ir_numel(gn), g, ctype_of(gn->dtype), g);
    }
    if (any)
        ax_buf_printf(out, "        const double coef_ = %s / (sqrt(squares_) + 1e-6);\n        if (coef_ < 1) {\n%s"
                           "        }\n    }\n",
                      ax_sprintf(a, "%.17g", te->t->clip_norm), scale.data ? scale.data : "");
    ax_buf_free(&scale);
}

/* --clip-grad-value: the gradient of s clamped to [-clip, clip] in place
 * (clip_grad_value_; a NaN stays NaN). */
static void emit_clip_value(const cg_c_body *b, const pass_train_tensor *s, ax_buf *out)
{
    const train_emit *te = b->user;
    const ir_node *gn = &b->g->nodes[s->grad];
    const char *g = cg_c_storage(b, s->grad), *c = ax_sprintf(b->g->ctx->arena, "%.17g", te->t->clip_value);
    ax_buf_printf(out, "    for (size_t i_ = 0; i_ < %lld; i_++) {   /* clip_grad_value_ */\n"
                       "        const %s g_ = (%s)[i_];\n        (%s)[i_] = g_ < -%s ? -%s : g_ > %s ? %s : g_;\n    }\n",
                  (long long)ir_numel(gn), ctype_of(gn->dtype), g, g, c, c, c, c);
}

/* A Float16 step's dynamic loss scaling (torch.cuda.amp.GradScaler's), at
 * node id where the driver placed every update: a gradient with an inf or a
 * NaN skips them all (the step counted, the optimizer's not) and halves the
 * scale; otherwise the updates unscale by it, and after
 * CG_TRAIN_SCALE_INTERVAL finite steps in a row it doubles. */
static void emit_loss_scaling(const cg_c_body *b, int id, ax_buf *out)
{
    const train_emit *te = b->user;
    ax_buf finite = {0};
    for (int k = 0; k < te->t->ntensors; k++) {
        const pass_train_tensor *s = &te->t->tensors[k];
        if (s->grad != IR_NONE && s->master >= 0 && s->after == id)
            ax_buf_printf(&finite, "%s        axrt_half_all_finite(AXRT_F16, %s, %lld)", finite.len ? " &&\n" : "",
                          cg_c_storage(b, s->grad), (long long)ir_numel(&b->g->nodes[s->param]));
    }
    if (!finite.len)
        return;
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

/* After node id of the step: the updates the driver placed there. */
static void emit_updates(const cg_c_body *b, int id, ax_buf *out)
{
    const train_emit *te = b->user;
    ax_arena *a = b->g->ctx->arena;
    if (te->t->clip_norm > 0)
        emit_clip_norm(b, id, out);
    if (te->t->loss_seed != IR_NONE)
        emit_loss_scaling(b, id, out);
    for (int k = 0; k < te->t->ntensors; k++) {
        const pass_train_tensor *s = &te->t->tensors[k];
        if (s->after != id)
            continue;
        const ir_node *p = &b->g->nodes[s->param];
        const char *target = state_ref(a, p->dtype, s->offset);
        if (s->value != IR_NONE) {
            ax_buf_printf(out, "    /* running statistic '%s' */\n    memcpy(%s, %s, %zu);\n",
                          c_string_text(a, p->name), target, cg_c_storage(b, s->value), ir_nbytes(p));
            continue;
        }
        if (update_fuses(b, s)) {
            const ir_node *n = &b->g->nodes[s->grad];
            ax_buf_printf(out, "    /* update '%s' with its gradient, %%%d matmul */\n"
                               "    axrt_matmul_optim_f32(&step_optim, %s, %s, %s, %lld, %lld, %lld, %s, %s, %s, step);\n",
                          c_string_text(a, p->name), s->grad, cg_c_storage(b, n->src[0]),
                          cg_c_storage(b, n->src[1]), cg_c_storage(b, s->grad), (long long)n->shape[0],
                          (long long)b->g->nodes[n->src[0]].shape[1], (long long)n->shape[1], target,
                          state_ref(a, p->dtype, s->moments[0]), state_ref(a, p->dtype, s->moments[1]));
            continue;
        }
        if (s->master >= 0) {
            ax_buf_printf(out, "    /* update '%s' (Float32 master) */\n    axrt_amp_step(&step_optim, %s, %s, %s, %s, %s, %s, "
                               "%lld, opt_step, inv_scale);\n",
                          c_string_text(a, p->name), ir_dtypes[p->dtype].enum_name, target,
                          state_ref(a, AXRT_F32, s->master), cg_c_storage(b, s->grad),
                          state_ref(a, AXRT_F32, s->moments[0]), state_ref(a, AXRT_F32, s->moments[1]),
                          (long long)ir_numel(p));
            continue;
        }
        if (te->t->clip_value > 0)
            emit_clip_value(b, s, out);
        ax_buf_printf(out, "    /* update '%s' */\n    axrt_optim_step_%s(&step_optim, %s, %s, %s, %s, %lld, step);\n",
                      c_string_text(a, p->name), kernel_sfx(p->dtype), target,
                      cg_c_storage(b, s->grad), state_ref(a, p->dtype, s->moments[0]),
                      state_ref(a, p->dtype, s->moments[1]), (long long)ir_numel(p));
    }
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
        ax_buf_printf(c, "    {\"%s\", %s, %d, {", c_string_text(a, p->name), ir_dtypes[p->dtype].enum_name, p->rank);
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
    for (int k = 0; k < te->t->ntensors; k++) {
        const pass_train_tensor *s = &te->t->tensors[k];
        ax_buf_printf(c, "    memcpy((unsigned char *)state + %lld, %s_p%d.values, %zu);\n", (long long)s->offset,
                      te->name, s->param, ir_nbytes(&te->step->nodes[s->param]));
        const ir_node *p = &te->step->nodes[s->param];
        if (s->master >= 0)
            ax_buf_printf(c, "    axrt_cast_f32(%s_p%d.values, %s, (float *)((unsigned char *)state + %lld), %lld);   "
                             "/* Float32 master */\n",
                          te->name, s->param, ir_dtypes[p->dtype].enum_name, (long long)s->master,
                          (long long)ir_numel(p));
    }
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

/* Each gradient's place in the caller's gradient buffer: packed in the
 * order the step completes them (its `after` node, then tensor order), so
 * that a prefix of the buffer is complete at every hand-off and a caller can
 * exchange it bucket by bucket while the backward pass goes on. */
static void layout_gradients(train_emit *te)
{
    const int n = te->t->ntensors;
    te->grad_offset = ax_alloc(te->step->ctx->arena, sizeof *te->grad_offset * ((size_t)n + 1));
    for (int k = 0; k < n; k++)
        te->grad_offset[k] = -1;
    te->grad_bytes = 0;
    for (int id = 0; id < te->step->nnodes; id++)
        for (int k = 0; k < n; k++) {
            const pass_train_tensor *s = &te->t->tensors[k];
            if (s->after != id || s->grad == IR_NONE || s->value != IR_NONE)
                continue;
            te->grad_offset[k] = (int64_t)te->grad_bytes;
            te->grad_bytes += ir_nbytes(&te->step->nodes[s->param]);
        }
}

/* After node id of the split step: each gradient completed there is copied
 * to its place in `grads` and announced through ready(); a running
 * statistic is written back as in the whole step. */
static void emit_grad_handoffs(const cg_c_body *b, int id, ax_buf *out)
{
    const train_emit *te = b->user;
    ax_arena *a = b->g->ctx->arena;
    for (int k = 0; k < te->t->ntensors; k++) {
        const pass_train_tensor *s = &te->t->tensors[k];
        if (s->after != id)
            continue;
        const ir_node *p = &b->g->nodes[s->param];
        if (s->value != IR_NONE) {
            ax_buf_printf(out, "    /* running statistic '%s' */\n    memcpy(%s, %s, %zu);\n",
                          c_string_text(a, p->name), state_ref(a, p->dtype, s->offset), cg_c_storage(b, s->value),
                          ir_nbytes(p));
            continue;
        }
        if (te->grad_offset[k] < 0)
            continue;
        ax_buf_printf(out, "    /* gradient of '%s' */\n    memcpy((unsigned char *)grads + %lld, %s, %zu);\n"
                           "    if (ready != NULL)\n        ready(user, %lld, %zu);\n",
                      c_string_text(a, p->name), (long long)te->grad_offset[k], cg_c_storage(b, s->grad), ir_nbytes(p),
                      (long long)te->grad_offset[k], ir_nbytes(p));
    }
}

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
    ax_buf_printf(h, "#define %s_GRAD_BYTES ((size_t)%zu)\n", te->upper, te->grad_bytes ? te->grad_bytes : 1);
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
        ax_buf_printf(c, "%s%lld", k ? ", " : "", (long long)te->grad_offset[k]);
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
    ax_arena *a = te->step->ctx->arena;
    ax_buf_puts(c, "\n");
    put_apply_signature(te, c);
    ax_buf_printf(c, "\n{\n    const int64_t step = ((const int64_t *)state)[%d] + 1;\n    (void)grads;\n",
                  CG_TRAIN_HEADER_STEPS);
    for (int k = 0; k < te->t->ntensors; k++) {
        const pass_train_tensor *s = &te->t->tensors[k];
        if (te->grad_offset[k] < 0)
            continue;
        const ir_node *p = &te->step->nodes[s->param];
        ax_buf_printf(c, "    axrt_optim_step_%s(&%s_optim, %s, (const %s *)(const void *)((const unsigned char *)grads + %lld), "
                         "%s, %s, %lld, step);\n",
                      kernel_sfx(p->dtype), te->name, state_ref(a, p->dtype, s->offset), ctype_of(p->dtype),
                      (long long)te->grad_offset[k], state_ref(a, p->dtype, s->moments[0]),
                      state_ref(a, p->dtype, s->moments[1]), (long long)ir_numel(p));
    }
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

/* Per node id of g: the state offset of the tensor whose param (in the
 * step, or fwd_param in the forward graph) it is, else -1. */
static int64_t *state_offsets(const train_emit *te, const ir_graph *g, bool forward)
{
    int64_t *offsets = ax_alloc(g->ctx->arena, sizeof *offsets * ((size_t)g->nnodes + 1));
    for (int id = 0; id < g->nnodes; id++)
        offsets[id] = -1;
    for (int k = 0; k < te->t->ntensors; k++) {
        const int id = forward ? te->t->tensors[k].fwd_param : te->t->tensors[k].param;
        if (id != IR_NONE)
            offsets[id] = te->t->tensors[k].offset;
    }
    if (!forward && te->t->dropout_counter != IR_NONE)
        offsets[te->t->dropout_counter] = CG_TRAIN_HEADER_SEED * (int64_t)sizeof(int64_t);
    if (!forward && te->t->loss_seed != IR_NONE)
        offsets[te->t->loss_seed] = CG_TRAIN_HEADER_SCALE * (int64_t)sizeof(int64_t);
    return offsets;
}

static void init_body(train_emit *te, cg_c_body *b, ir_graph *g, bool forward)
{
    memset(b, 0, sizeof *b);
    b->g = g;
    b->prefix = forward ? ax_sprintf(g->ctx->arena, "%s_fwd", te->name) : te->name;
    b->source_name = te->req->source_name;
    cg_argument_names(g, &b->input_names, &b->output_names);
    b->state_offset = state_offsets(te, g, forward);
    b->state_const = forward;
    b->fail_return = forward ? "status" : "NAN";
    b->pack_offset = forward ? te->t->fwd_pack_offset : te->t->step_pack_offset;
    b->after_node = forward ? NULL : b == &te->grads_body ? emit_grad_handoffs : emit_updates;
    b->fused_node = forward ? NULL : fused_node;
    b->blas = te->req->blas;
    b->user = te;
}

int cg_c_train_emit(const cg_request *req, ax_buf *c_out, ax_buf *h_out)
{
    train_emit te = {req, req->train, req->models[0], req->train->forward, req->models[0]->name, {0}, {0}, {0}, {0}, {0}, NULL, 0};
    int errors = cg_c_check(te.step) + cg_c_check(te.fwd);
    if (errors)
        return errors;
    size_t len = 0;
    for (const char *c = te.name; *c && len + 1 < sizeof te.upper; c++)
        te.upper[len++] = (char)toupper((unsigned char)*c);
    init_body(&te, &te.step_body, te.step, false);
    init_body(&te, &te.fwd_body, te.fwd, true);
    if (req->train->grad_exchange) {
        init_body(&te, &te.grads_body, te.step, false);
        layout_gradients(&te);
    }
    ir_use_compute(te.step, &te.step_use);
    ax_buf_printf(h_out, "/* Generated by axc from %s -- do not edit. */\n#ifndef AXC_TRAIN_%s_H\n#define AXC_TRAIN_%s_H\n\n"
                         "#include \"axrt.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
                  c_string_text(te.step->ctx->arena, req->source_name), te.upper, te.upper);
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
    ir_use_free(&te.step_use);
    return 0;
}
