/* train_step.c — the driver's side of the training graphs
 * (passes/train_graph*.c): the options they take (pass_train_opts, the
 * optimizer with torch.optim's and Lion's defaults) and `axc --train`'s
 * checks before the step is built (one model, a target that writes a
 * training step, no option mixed precision lacks). */
#include <math.h>
#include <stdio.h>

#include "cg_target.h"
#include "driver.h"

const char *const axc_optimizer_names[AXC_OPT_COUNT] = {"sgd", "adam", "adamw", "lion"};

axrt_optim axc_optim_from(const axc_opts *o)
{
    static const axrt_optimizer kinds[AXC_OPT_COUNT] = {AXRT_OPT_SGD, AXRT_OPT_ADAM, AXRT_OPT_ADAMW,
                                                        AXRT_OPT_LION};
    axrt_optim h = {kinds[o->optimizer], o->lr, o->momentum, o->weight_decay, o->beta1, o->beta2, o->eps,
                    o->nesterov};
    const bool lion = h.kind == AXRT_OPT_LION;
    if (isnan(h.lr)) h.lr = lion ? 1e-4 : 1e-3;
    if (isnan(h.momentum)) h.momentum = 0;
    if (isnan(h.weight_decay)) h.weight_decay = h.kind == AXRT_OPT_ADAMW ? 0.01 : 0;
    if (isnan(h.beta1)) h.beta1 = 0.9;
    if (isnan(h.beta2)) h.beta2 = lion ? 0.99 : 0.999;
    if (isnan(h.eps)) h.eps = 1e-8;
    return h;
}

pass_train_opts axc_train_opts(const axc_opts *o)
{
    return (pass_train_opts){.command = o->train_step ? "--train" : "train",
                             .loss = (pass_loss_kind)o->loss,
                             .optim = axc_optim_from(o),
                             .optimizer_name = axc_optimizer_names[o->optimizer],
                             .seed = o->seed,
                             .clip_norm = o->clip_grad_norm > 0 ? o->clip_grad_norm : 0,
                             .clip_value = o->clip_grad_value > 0 ? o->clip_grad_value : 0,
                             .grad_exchange = o->grad_exchange,
                             .blas = o->blas,
                             .mem_report = o->mem_report,
                             .ram_budget = o->ram_budget};
}

/* Options the mixed-precision step (a Float16 or BFloat16 model) does not
 * have: the clipping would need the unscaled Float32 gradients, the split
 * step hands out half ones.  Reports and returns true when one is given. */
static bool mixed_refusal(const axc_opts *o, const ir_graph *g)
{
    const char *opt = o->clip_grad_norm > 0 ? "--clip-grad-norm" : o->clip_grad_value > 0 ? "--clip-grad-value"
                      : o->grad_exchange ? "--grad-exchange (or mpirun)" : NULL;
    if (opt)
        ax_error(g->ctx, g->loc, "%s is not available in mixed-precision training (model '%s' is %s): train it in "
                 "Float32, or without %s", opt, g->name, ir_dtype_name(g->dtype), opt);
    return opt != NULL;
}

/* Clipping with the split step (--grad-exchange): clip_grad_norm_ and
 * clip_grad_value_ act on the exchanged (mean) gradients, which exist only
 * in <name>_train_apply, and apply reads the caller's buffer as const with no
 * scratch of its own to clip a copy in (no heap); clipping each rank's own
 * gradients in <name>_train_grads would not equal PyTorch.  Refused rather
 * than a split step that silently differs from the whole one.  Reports and
 * returns true when both are given. */
static bool split_clip_refusal(const axc_opts *o, const ir_graph *g)
{
    const char *opt = o->clip_grad_norm > 0 ? "--clip-grad-norm" : o->clip_grad_value > 0 ? "--clip-grad-value" : NULL;
    if (opt && o->grad_exchange)
        ax_error(g->ctx, g->loc, "%s does not combine with --grad-exchange (model '%s'): the split step cannot clip "
                 "the exchanged gradients; clip them in your loop before %s_train_apply, or drop one option",
                 opt, g->name, g->name);
    return opt && o->grad_exchange;
}

int axc_train_step_graphs(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, pass_train_step *train)
{
    (void)ctx;
    if (n != 1) {
        axc_fail("'axc %s' trains one model; %s has %d (choose one with --model)", "--train", o->input, n);
        return AXC_EUSAGE;
    }
    ir_graph *g = models[0];
    if (!cg_target_get(g->target->id)->train_step) {
        axc_fail("--train writes C (the c target), not %s", ir_targets[g->target->id].name);
        return AXC_EUSAGE;
    }
    if ((g->dtype == AXRT_F16 || g->dtype == AXRT_BF16) && mixed_refusal(o, g)) return AXC_EUSAGE;
    if (split_clip_refusal(o, g)) return AXC_EUSAGE;
    const pass_train_opts to = axc_train_opts(o);
    return pass_train_step_graphs(&to, g, train) ? AXC_EINPUT : AXC_OK;
}
