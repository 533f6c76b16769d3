/* train_schedule.c — `axc train`'s learning-rate schedules and warm-up
 * (docs/training.md#schedules-and-clipping), in the closed forms of
 * torch.optim.lr_scheduler, stepped once per optimizer step (per batch).
 *
 * With t the 0-based step (optimizer steps taken before this one), T the
 * run's total steps and lr the --lr (or the optimizer's default):
 *   constant  lr
 *   step      lr * gamma^floor(t / step_size)                  (StepLR)
 *   cosine    lr * (1 + cos(pi * t / T_max)) / 2, T_max = T     (CosineAnnealingLR, eta_min 0)
 *   onecycle  OneCycleLR(max_lr=lr, total_steps=T) with its defaults,
 *             momentum (SGD) or beta1 (Adam, AdamW, Lion) cycled 0.95 -> 0.85 -> 0.95
 * and --warmup-steps=N multiplies the first three by min(1, (t + 1) / N)
 * (LinearLR(start_factor=1/N, end_factor=1, total_iters=N-1)). */
#include <math.h>

#include "driver.h"

const char *const axc_lr_schedule_names[AXC_SCHED_COUNT] = {"constant", "step", "cosine", "onecycle"};

/* OneCycleLR's defaults (PyTorch): pct_start, div_factor, final_div_factor,
 * base_momentum, max_momentum. */
#define ONECYCLE_PCT_START 0.3
#define ONECYCLE_DIV 25.0
#define ONECYCLE_FINAL_DIV 1e4
#define ONECYCLE_BASE_MOMENTUM 0.85
#define ONECYCLE_MAX_MOMENTUM 0.95

static const double pi = 3.14159265358979323846;

/* OneCycleLR._annealing_cos: from start (pct 0) to end (pct 1). */
static double anneal_cos(double start, double end, double pct)
{
    return end + (start - end) / 2.0 * (cos(pi * pct) + 1);
}

/* OneCycleLR.get_lr at step t, two phases (three_phase=False): the lr and
 * the momentum of the step.  Phase ends as PyTorch computes them (in
 * double; the first may be negative for a run shorter than 4 steps). */
static void onecycle(double max_lr, long t, long total, double *lr, double *momentum)
{
    const double initial = max_lr / ONECYCLE_DIV, min_lr = initial / ONECYCLE_FINAL_DIV;
    const double end1 = ONECYCLE_PCT_START * (double)total - 1, end2 = (double)total - 1;
    const double step = (double)t;
    if (step <= end1) {
        const double pct = step / end1;
        *lr = anneal_cos(initial, max_lr, pct);
        *momentum = anneal_cos(ONECYCLE_MAX_MOMENTUM, ONECYCLE_BASE_MOMENTUM, pct);
    } else {
        const double pct = (step - end1) / (end2 - end1);
        *lr = anneal_cos(max_lr, min_lr, pct);
        *momentum = anneal_cos(ONECYCLE_BASE_MOMENTUM, ONECYCLE_MAX_MOMENTUM, pct);
    }
}

axrt_optim axc_scheduled_optim(const axc_opts *o, const axrt_optim *base, long done, long total)
{
    axrt_optim h = *base;
    const double t = (double)done;
    switch ((axc_lr_schedule)o->lr_schedule) {
    case AXC_SCHED_constant: case AXC_SCHED_COUNT: break;
    case AXC_SCHED_step:
        h.lr = base->lr * pow(isnan(o->gamma) ? 0.1 : o->gamma, (double)(done / o->step_size));
        break;
    case AXC_SCHED_cosine:
        h.lr = base->lr * (1 + cos(pi * t / (double)(o->t_max ? o->t_max : total))) / 2;
        break;
    case AXC_SCHED_onecycle: {
        double momentum;
        onecycle(base->lr, done, total, &h.lr, &momentum);
        if (h.kind == AXRT_OPT_SGD) h.momentum = momentum;
        else h.beta1 = momentum;
        break;
    }
    }
    if (o->warmup_steps && done + 1 < o->warmup_steps)
        h.lr *= (t + 1) / (double)o->warmup_steps;
    return h;
}
