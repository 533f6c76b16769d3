/* cg_plan_run.c — an int8 node's kernel-call plan (cg_plan.c, float_io)
 * run on the host, through a table from kernel name to the runtime's
 * function: int8 calibration's emulation of the generated code
 * (compiler/quantize.c) calls the very kernels the plan names, with the
 * arguments the plan gives, the node's int8 constants made here (its
 * results leave float: no AXRT_Q8_OUT_BYTES).  The table follows cg_kernels.def's
 * KERNEL_HOST rows (name, argument count), each calling its run_<id> here:
 * a new int8 kernel is a row there, a plan rule and its run_<id>. */
#include <stdlib.h>
#include <string.h>

#include "cg_target.h"

/* One argument as the function takes it. */
typedef union run_arg {
    void *p;
    const void *c;
    int64_t i;
    double f;
} run_arg;

typedef void kernel_fn(const run_arg *a);

static void run_quantize_u8(const run_arg *a) { axrt_quantize_u8(a[0].c, a[1].p, (size_t)a[2].i, (float)a[3].f, (int32_t)a[4].i); }
static void run_dense_q8_packed(const run_arg *a)
{
    axrt_dense_q8_packed(a[0].c, a[1].c, a[2].c, a[3].p, (size_t)a[4].i, (size_t)a[5].i, (size_t)a[6].i);
}
static void run_conv2d_q8_packed(const run_arg *a)
{
    axrt_conv2d_params p;
    memcpy(&p, a[6].c, sizeof p);
    axrt_conv2d_q8_packed(a[0].c, (int32_t)a[1].i, a[2].c, a[3].c, a[4].p, a[5].p, &p);
}
static void run_add_q8(const run_arg *a) { axrt_add_q8(a[0].c, a[1].c, a[2].p, (size_t)a[3].i, a[4].c); }
static void run_add_bcast_q8(const run_arg *a)
{
    axrt_add_bcast_q8(a[0].c, a[1].c, a[2].c, a[3].c, a[4].p, a[5].c, (int)a[6].i, a[7].c);
}
static void run_mean_q8(const run_arg *a)
{
    axrt_mean_q8(a[0].c, a[1].p, (size_t)a[2].i, (size_t)a[3].i, (size_t)a[4].i, a[5].c);
}
static void run_meanpool_q8(const run_arg *a)
{
    axrt_pool2d_params p;
    memcpy(&p, a[2].c, sizeof p);
    axrt_meanpool_q8(a[0].c, a[1].p, &p, a[3].c, a[4].c);
}
static void run_rescale_q8(const run_arg *a)
{
    axrt_rescale_q8(a[0].c, a[1].p, (size_t)a[2].i, (size_t)a[3].i, (size_t)a[4].i, (size_t)a[5].i, a[6].c);
}
static void run_lookup_q8(const run_arg *a) { axrt_lookup_q8(a[0].c, a[1].p, (size_t)a[2].i, a[3].c, a[4].c); }
static void run_softmax_q8(const run_arg *a)
{
    axrt_softmax_q8(a[0].c, a[1].p, (size_t)a[2].i, (size_t)a[3].i, a[4].c, a[5].c);
}
static void run_maxpool_u8(const run_arg *a)
{
    axrt_pool2d_params p;
    memcpy(&p, a[2].c, sizeof p);
    axrt_maxpool_u8(a[0].c, a[1].p, &p);
}
static void run_gather_u8(const run_arg *a) { axrt_gather_u8(a[0].c, a[1].p, a[2].c, a[3].c, a[4].i, (int)a[5].i); }

static const struct {
    const char *name;
    kernel_fn *fn;
    int nargs;
} kernels[] = {
#define KERNEL(id, name, suffixed)
#define KERNEL_HOST(id, name, nargs) {name, run_##id, nargs},
#include "cg_kernels.def"
#undef KERNEL_HOST
#undef KERNEL
};

static kernel_fn *kernel_named(const ir_call *c)
{
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
        if (!strcmp(kernels[k].name, c->kernel)) {
            if (kernels[k].nargs != c->nargs)
                ax_die("cg_plan_run: %s with %d arguments, not %d", c->kernel, c->nargs, kernels[k].nargs);
            return kernels[k].fn;
        }
    ax_die("cg_plan_run: no host function for kernel %s", c->kernel);
}

cg_plan_host cg_plan_host_prepare(ir_graph *g, int id)
{
    const cg_plan_context ctx = {.pack_offset = -1, .float_io = true};
    cg_plan_host h = {.plan = cg_plan_node(g, id, &ctx)};
    if (!h.plan || !g->nodes[id].quant)
        ax_die("cg_plan_run: %%%d is not an int8 node", id);
    size_t bytes;
    if (g->nodes[id].quant->w)
        h.weights = cg_quant_packed_weights(g, &g->nodes[id], &bytes);
    for (int c = 0; c < h.plan->ncalls; c++)
        for (int i = 0; i < h.plan->calls[c].nargs; i++) {
            const ir_arg *a = &h.plan->calls[c].args[i];
            if (a->kind == IR_ARG_BYTES && (size_t)(a->value + a->count) > h.scratch_bytes)
                h.scratch_bytes = (size_t)(a->value + a->count);
        }
    return h;
}

/* What the calls of one run read: the node's constants, its scratch, the
 * arrays of int, int32_t and float the plan holds as int64_t. */
typedef struct host_state {
    const ir_graph *g;
    int id;
    const cg_plan_host *h;
    float *const *values;
    float *y;
    axrt_requant rq;
    axrt_ew_q8 ew[16];
    unsigned char *scratch;
} host_state;

/* Argument a as the function takes it; arrays of int, int32_t and float are
 * converted into storage (count values). */
static run_arg host_arg(const host_state *s, const ir_arg *a, void *storage)
{
    run_arg r = {0};
    switch (a->kind) {
    case IR_ARG_VALUE: r.p = a->node == IR_NONE ? NULL : a->node == s->id ? s->y : s->values[a->node]; return r;
    case IR_ARG_BYTES: r.p = s->scratch + a->value; return r;
    case IR_ARG_SIZE:
    case IR_ARG_INT64:
    case IR_ARG_INT: r.i = a->value; return r;
    case IR_ARG_FLOAT: r.f = a->real; return r;
    case IR_ARG_QWEIGHTS: r.c = s->h->weights; return r;
    case IR_ARG_REQUANT: r.c = &s->rq; return r;
    case IR_ARG_EW: r.c = &s->ew[a->value]; return r;
    case IR_ARG_INT64S: r.c = a->values; return r;
    case IR_ARG_INTS:
        for (int k = 0; k < a->count; k++)
            ((int *)storage)[k] = (int)a->values[k];
        r.c = storage;
        return r;
    case IR_ARG_INT32S:
        for (int k = 0; k < a->count; k++)
            ((int32_t *)storage)[k] = (int32_t)a->values[k];
        r.c = storage;
        return r;
    case IR_ARG_FLOATS:
        for (int k = 0; k < a->count; k++) {
            const uint32_t bits = (uint32_t)a->values[k];
            memcpy((float *)storage + k, &bits, sizeof bits);
        }
        r.c = storage;
        return r;
    default: ax_die("cg_plan_run: argument kind %d in an int8 plan", (int)a->kind);
    }
}

static void run_call(const host_state *s, const ir_call *c)
{
    run_arg args[IR_CALL_MAX_ARGS];
    void *storage[IR_CALL_MAX_ARGS] = {0};
    kernel_fn *fn = kernel_named(c);
    for (int i = 0; i < c->nargs; i++) {
        const ir_arg *a = &c->args[i];
        if (a->kind == IR_ARG_INTS || a->kind == IR_ARG_INT32S || a->kind == IR_ARG_FLOATS) {
            storage[i] = malloc(sizeof(int64_t) * (size_t)a->count + 1);
            if (!storage[i]) ax_out_of_memory(0);
        }
        args[i] = host_arg(s, a, storage[i]);
    }
    fn(args);
    for (int i = 0; i < c->nargs; i++)
        free(storage[i]);
}

void cg_plan_host_run(const ir_graph *g, int id, const cg_plan_host *h, float *const *values, float *y)
{
    const ir_quant *q = g->nodes[id].quant;
    host_state s = {.g = g, .id = id, .h = h, .values = values, .y = y, .scratch = malloc(h->scratch_bytes + 1)};
    s.rq = (axrt_requant){q->bias, q->float_out ? NULL : q->mult, q->shift, q->fscale, q->out_zp, q->lo, q->hi,
                          q->out_scale, q->tflite_rounding ? AXRT_Q8_TFLITE : 0};
    if (!s.scratch) ax_out_of_memory(0);
    for (int k = 0; k < (g->nodes[id].op == IR_OP_concat ? q->nin : 1) && k < 16 && q->nin; k++) {
        s.ew[k] = q->ew[k];
        s.ew[k].flags &= ~AXRT_Q8_OUT_BYTES;
    }
    for (int c = 0; c < h->plan->ncalls; c++)
        run_call(&s, &h->plan->calls[c]);
    free(s.scratch);
}
