/* ir_plan.c — a kernel-call plan as text (--emit=ir; ir_plan.h). */
#include "ir.h"

ir_arg *ir_call_arg(ir_call *c, ir_arg_kind kind)
{
    if (c->nargs == IR_CALL_MAX_ARGS)
        ax_die("ir_plan: more than %d arguments to %s", IR_CALL_MAX_ARGS, c->kernel);
    ir_arg *a = &c->args[c->nargs++];
    a->kind = kind;
    a->node = IR_NONE;
    return a;
}

/* axrt_act's names, in its order (runtime/axrt.h) */
static const char *const act_names[] = {"none", "relu", "relu6", "gelu", "swish", "hardswish"};

static void put_arg(ax_buf *out, const ir_arg *a)
{
    switch (a->kind) {
    case IR_ARG_VALUE:
        if (a->node == IR_NONE) ax_buf_puts(out, "null");
        else ax_buf_printf(out, "%%%d", a->node);
        return;
    case IR_ARG_ARENA: ax_buf_printf(out, "arena+%lld", (long long)a->value); return;
    case IR_ARG_SCALAR: ax_buf_printf(out, "%%%d[0]", a->node); return;
    case IR_ARG_SIZE:
    case IR_ARG_INT64:
    case IR_ARG_INT: ax_buf_printf(out, "%lld", (long long)a->value); return;
    case IR_ARG_ACT:
        ax_buf_puts(out, a->value >= 0 && a->value < (long long)(sizeof act_names / sizeof act_names[0])
                             ? act_names[a->value]
                             : "?");
        return;
    case IR_ARG_DTYPE: ax_buf_puts(out, ir_dtype_name(a->dtype)); return;
    case IR_ARG_REAL:
    case IR_ARG_FLOAT: ax_buf_printf(out, "%.9g", a->real); return;
    case IR_ARG_DOUBLE: ax_buf_printf(out, "%.17g", a->real); return;
    case IR_ARG_INT64_VALUE: ax_buf_printf(out, "i64:%%%d", a->node); return;
    case IR_ARG_BYTES: ax_buf_printf(out, "u8:arena+%lld", (long long)a->value); return;
    case IR_ARG_QWEIGHTS: ax_buf_printf(out, "q8_weights(%%%d)", a->node); return;
    case IR_ARG_REQUANT: ax_buf_printf(out, "requant(%%%d)", a->node); return;
    case IR_ARG_EW: ax_buf_printf(out, "ew(%%%d)[%lld]", a->node, (long long)a->value); return;
    case IR_ARG_FLOATS:
        ax_buf_printf(out, "%s{%d floats}", a->name, a->count);
        return;
    case IR_ARG_STATE:
        if (a->value < 0) ax_buf_puts(out, "null");
        else ax_buf_printf(out, "state+%lld", (long long)a->value);
        return;
    case IR_ARG_STATE_BYTES: ax_buf_printf(out, "u8:state+%lld", (long long)a->value); return;
    case IR_ARG_EMBEDDED: ax_buf_printf(out, "embedded(%%%d)", a->node); return;
    case IR_ARG_OPTIM: ax_buf_puts(out, a->value ? "optim" : "optim(state lr, momentum)"); return;
    case IR_ARG_LOCAL: ax_buf_puts(out, a->name); return;
    case IR_ARG_GRADS_IN:
    case IR_ARG_GRADS_OUT: ax_buf_printf(out, "grads+%lld", (long long)a->value); return;
    case IR_ARG_INTS:
    case IR_ARG_INT64S:
    case IR_ARG_INT32S:
    case IR_ARG_SIZES:
    case IR_ARG_POINTERS:
        ax_buf_printf(out, "%s{", a->name);
        for (int i = 0; i < a->count; i++)
            ax_buf_printf(out, "%s%s%lld", i ? ", " : "", a->kind == IR_ARG_POINTERS ? "%" : "",
                          (long long)a->values[i]);
        ax_buf_puts(out, "}");
        return;
    }
}

static void put_strides(ax_buf *out, const int64_t *strides, int n)
{
    ax_buf_puts(out, " @(");
    for (int d = 0; d < n; d++)
        ax_buf_printf(out, "%s%lld", d ? ", " : "", (long long)strides[d]);
    ax_buf_puts(out, ")");
}

static void put_loop_op(ax_buf *out, const ir_loop *l, int v)
{
    const ir_loop_op *o = &l->ops[v];
    ax_buf_printf(out, "        t%d = ", v);
    switch (o->kind) {
    case IR_LOOP_LOAD:
        ax_buf_printf(out, "load %%%d", l->input[o->arg[0]]);
        put_strides(out, l->in_strides[o->arg[0]], l->nloops);
        break;
    case IR_LOOP_CONST: ax_buf_printf(out, "%.9g", o->real); break;
    case IR_LOOP_UNARY:
    case IR_LOOP_DERIV:   /* f'(x): tanh'(t1) */
        ax_buf_printf(out, "%s%s(t%d", ir_ops[o->op].name, o->kind == IR_LOOP_DERIV ? "'" : "", o->arg[0]);
        if (o->real != 0)
            ax_buf_printf(out, ", alpha=%.9g", o->real);
        ax_buf_puts(out, ")");
        break;
    case IR_LOOP_BINARY: ax_buf_printf(out, "%s(t%d, t%d)", ir_ops[o->op].name, o->arg[0], o->arg[1]); break;
    }
    ax_buf_puts(out, "\n");
}

static void put_loop(ax_buf *out, const ir_loop *l)
{
    ax_buf_puts(out, "      loop [");
    for (int d = 0; d < l->nloops; d++)
        ax_buf_printf(out, "%s%lld", d ? ", " : "", (long long)l->dims[d]);
    ax_buf_printf(out, "] %s", ir_dtype_name(l->dtype));
    if (l->compute != l->dtype)
        ax_buf_printf(out, " in %s", ir_dtype_name(l->compute));
    ax_buf_puts(out, "\n");
    for (int v = 0; v < l->nops; v++)
        put_loop_op(out, l, v);
    ax_buf_printf(out, "        store %%%d", l->output);
    put_strides(out, l->out_strides, l->nloops);
    ax_buf_printf(out, " = t%d\n", l->store);
}

/* "call kernel(arg, ...)" */
static void put_call(ax_buf *out, const ir_call *call)
{
    ax_buf_printf(out, "call %s(", call->kernel);
    for (int i = 0; i < call->nargs; i++) {
        if (i) ax_buf_puts(out, ", ");
        put_arg(out, &call->args[i]);
    }
    ax_buf_puts(out, ")");
}

void ir_plan_print(const ir_plan *p, ax_buf *out)
{
    if (p && p->loop)
        put_loop(out, p->loop);
    for (int c = 0; p && c < p->ncalls; c++) {
        const ir_call *call = &p->calls[c];
        ax_buf_puts(out, "      ");
        put_call(out, call);
        ax_buf_puts(out, call->status ? " -> status" : "");
        ax_buf_puts(out, call->unless_aliased ? " unless aliased\n" : "\n");
    }
}

/* One statement of a training step's plan after "      LABEL ". */
static void put_step_op(ax_buf *out, const ir_step_op *op)
{
    switch (op->kind) {
    case IR_STEP_CALL:
        put_call(out, &op->call);
        if (op->note)
            ax_buf_printf(out, "  ; %s", op->note);
        return;
    case IR_STEP_READY:
        ax_buf_printf(out, "ready(grads+%lld, %lld bytes)", (long long)op->offset, (long long)op->bytes);
        return;
    case IR_STEP_CLIP_VALUE: ax_buf_printf(out, "clip_value %%%d to %.17g", op->node, op->real); return;
    case IR_STEP_CLIP_NORM:
        ax_buf_puts(out, "clip_norm(");
        for (int k = 0; k < op->count; k++)   /* a node sharing an earlier one's storage: scaled once */
            ax_buf_printf(out, "%s%%%d%s", k ? ", " : "", op->nodes[k], op->scaled[k] ? "" : " shared");
        ax_buf_printf(out, ") to %.17g", op->real);
        return;
    case IR_STEP_LOSS_SCALE:
        ax_buf_puts(out, "loss_scale unless every is finite:");
        for (int k = 0; k < op->count; k++) {
            ax_buf_puts(out, k ? ", " : " ");
            put_call(out, &op->calls[k]);
        }
        return;
    }
}

void ir_step_list_print(const ir_step_list *l, const char *label, ax_buf *out)
{
    for (int k = 0; l && k < l->nops; k++) {
        ax_buf_printf(out, "      %s ", label);
        put_step_op(out, &l->ops[k]);
        ax_buf_puts(out, "\n");
    }
}
