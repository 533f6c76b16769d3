/* ir.c — the op property table (generated from ops.def), graph construction
 * and small helpers on nodes (sizes, shape text, dtype names).
 *
 * The nodes array is heap memory grown with realloc so that graphs of any
 * size fit; node ids are indices, so they stay valid across growth (pointers
 * into the array do not).  Everything else a graph owns lives in the context
 * arena. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ir_opinfo ir_ops[IR_OP_COUNT] = {
#define OP(name, min, max, kind, inplace, family, shape, optional, flags) \
    [IR_OP_##name] = {#name, min, max, IR_##kind, IR_INPLACE_##inplace, optional, flags},
#include "ops.def"
#undef OP
};

const char *const ir_layout_names[IR_LAYOUT_COUNT] = {
    [IR_LAYOUT_PLAIN] = "plain", [IR_LAYOUT_DENSE] = "dense_panels",
    [IR_LAYOUT_CONV] = "conv_panels", [IR_LAYOUT_DEPTHWISE] = "depthwise_panels",
    [IR_LAYOUT_MHA_IN] = "mha_in_panels", [IR_LAYOUT_MHA_OUT] = "mha_out_panels",
    [IR_LAYOUT_GROUPED] = "grouped_conv_panels",
    [IR_LAYOUT_WINOGRAD] = "winograd_f4x4_panels",
    [IR_LAYOUT_WINOGRAD2] = "winograd_f2x2_panels",
};

const char *const ir_conv_algo_names[IR_CONV_ALGO_COUNT] = {
    [IR_CONV_AUTO] = "auto", [IR_CONV_DIRECT] = "direct", [IR_CONV_WINOGRAD] = "winograd",
    [IR_CONV_WINOGRAD2] = "winograd2",
};

const ir_target_info ir_targets[IR_TARGET_COUNT] = {
#define TARGET(name) [IR_TARGET_##name] = {#name},
#include "targets.def"
#undef TARGET
};

ir_target_id ir_target_parse(const char *name)
{
    for (int t = 0; t < IR_TARGET_COUNT; t++)
        if (strcmp(name, ir_targets[t].name) == 0)
            return (ir_target_id)t;
    return IR_TARGET_COUNT;
}

const char *ir_target_list(ax_arena *a, const char *sep, const char *last)
{
    const char *names[IR_TARGET_COUNT];
    ax_buf b = {0};
    for (int t = 0; t < IR_TARGET_COUNT; t++) names[t] = ir_targets[t].name;
    ax_buf_join(&b, names, IR_TARGET_COUNT, sep, last);
    const char *text = ax_strdup(a, b.data);
    ax_buf_free(&b);
    return text;
}

size_t ir_scratch_bytes(const ir_node *n, const ir_graph *g)
{
    return g->target ? g->target->scratch_bytes(n, g) : 0;
}

ir_graph *ir_graph_new(ax_ctx *ctx, const char *name, ax_loc loc)
{
    ir_graph *g = ax_alloc(ctx->arena, sizeof *g);
    g->name = name;
    g->dtype = AXRT_F32;
    g->backend = IR_TARGET_c;
    g->loc = loc;
    g->ctx = ctx;
    return g;
}

void ir_graph_free_nodes(ir_graph *g)
{
    free(g->nodes);
    g->nodes = NULL;
    g->nnodes = g->cap = 0;
}

/* Room for one more element in an arena array of elem-byte elements. */
static void *grow_arena_array(ax_arena *a, void *old, int count, int *cap, size_t elem)
{
    if (count < *cap)
        return old;
    int next = *cap ? 2 * *cap : 8;
    void *fresh = ax_alloc(a, (size_t)next * elem);
    if (count)
        memcpy(fresh, old, (size_t)count * elem);
    *cap = next;
    return fresh;
}

void ir_add_input(ir_graph *g, int id)
{
    g->inputs = grow_arena_array(g->ctx->arena, g->inputs, g->ninputs, &g->inputs_cap,
                                 sizeof *g->inputs);
    g->inputs[g->ninputs++] = id;
}

void ir_add_output(ir_graph *g, int id, const char *name)
{
    int cap = g->outputs_cap;
    g->outputs = grow_arena_array(g->ctx->arena, g->outputs, g->noutputs, &cap,
                                  sizeof *g->outputs);
    g->output_names = grow_arena_array(g->ctx->arena, (void *)g->output_names, g->noutputs,
                                       &g->outputs_cap, sizeof *g->output_names);
    g->outputs[g->noutputs] = id;
    g->output_names[g->noutputs++] = name;
}

static void reserve_node(ir_graph *g)
{
    if (g->nnodes < g->cap)
        return;
    int cap = g->cap ? 2 * g->cap : 64;
    ir_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes)
        ax_out_of_memory(0);
    g->nodes = nodes;
    g->cap = cap;
}

/* A fresh node with every attribute at its "not set" value. */
ir_attrs ir_attrs_unset(void)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    a.act = IR_NONE;
    a.residual = IR_NONE;
    a.axis = -1;
    a.stride[0] = a.stride[1] = 1;
    a.dilation[0] = a.dilation[1] = 1;
    a.groups = 1;
    return a;
}

static ir_node blank_node(ir_op op, ax_loc loc)
{
    ir_node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.dtype = AXRT_F32;
    n.loc = loc;
    n.offset = -1;
    n.scratch_offset = -1;
    n.inplace_of = IR_NONE;
    n.attrs = ir_attrs_unset();
    n.attrs.axis = 0;
    return n;
}

/* A fresh operand array holding src[0..nsrc), zeros after it up to IR_SRC_ROOM. */
static int *new_operands(ax_arena *arena, const int *src, int nsrc)
{
    const int room = nsrc > IR_SRC_ROOM ? nsrc : IR_SRC_ROOM;
    int *ids = ax_alloc(arena, sizeof *ids * (size_t)room);
    memset(ids, 0, sizeof *ids * (size_t)room);
    if (nsrc > 0)
        memcpy(ids, src, sizeof *ids * (size_t)nsrc);
    return ids;
}

void ir_set_operands(const ir_graph *g, ir_node *n, const int *src, int nsrc)
{
    if (nsrc < 0)
        ax_die("ir_set_operands: %d operands", nsrc);
    n->src = new_operands(g->ctx->arena, src, nsrc);
    n->nsrc = nsrc;
}

void ir_own_operands(const ir_graph *g, ir_node *n)
{
    ir_set_operands(g, n, n->src, n->nsrc);
}

static void check_operands(const ir_graph *g, ir_op op, const int *src, int nsrc, int limit)
{
    if ((unsigned)op >= IR_OP_COUNT)
        ax_die("ir_add: bad op %d", (int)op);
    if (nsrc < 0)
        ax_die("ir_add: %s with %d operands", ir_ops[op].name, nsrc);
    for (int i = 0; i < nsrc; i++)
        if (src[i] != IR_NONE && (src[i] < 0 || src[i] >= limit))
            ax_die("ir_add: %s operand %d is %%%d, not defined before %%%d (graph %s)",
                   ir_ops[op].name, i, src[i], limit, g->name ? g->name : "?");
}

int ir_add(ir_graph *g, ir_op op, const int *src, int nsrc, ax_loc loc)
{
    check_operands(g, op, src, nsrc, g->nnodes);
    reserve_node(g);
    ir_node n = blank_node(op, loc);
    n.nsrc = nsrc;
    n.src = new_operands(g->ctx->arena, src, nsrc);
    n.context = g->ctx ? g->ctx->context : NULL;   /* the block instance being lowered */
    g->nodes[g->nnodes] = n;
    return g->nnodes++;
}

int ir_add_scalar(ir_graph *g, double value, ax_loc loc)
{
    int id = ir_add(g, IR_OP_scalar, NULL, 0, loc);
    ir_node *n = ir_at(g, id);
    n->attrs = ir_attrs_unset();
    n->attrs.scalar = value;
    n->dtype = AXRT_F32;
    n->rank = 0;
    return id;
}

int ir_add_imported(ir_graph *g, ir_op op, const int *src, int nsrc, const ir_attrs *attrs, const char *name)
{
    for (int i = 0; i < nsrc; i++)
        if (src[i] == IR_NONE && (i >= 32 || !(ir_ops[op].optional & (1u << i)))) return IR_NONE;
    int id = ir_add(g, op, src, nsrc, ax_noloc());
    ir_node *n = ir_at(g, id);
    n->attrs = attrs ? *attrs : ir_attrs_unset();
    n->name = name;
    n->dtype = AXRT_F32;
    return id;
}

int ir_add_param_data(ir_graph *g, const char *name, const double *values, int rank, const int64_t *shape)
{
    int id = ir_add(g, IR_OP_param, NULL, 0, ax_noloc());
    ir_node *n = ir_at(g, id);
    n->attrs = ir_attrs_unset();
    n->name = name;
    n->dtype = AXRT_F32;
    n->role = IR_PARAM_ZEROS;
    n->rank = rank;
    int64_t count = 1;
    for (int i = 0; i < rank; i++) count *= (n->shape[i] = shape[i]);
    float *data = ax_alloc(g->ctx->arena, sizeof *data * (size_t)(count ? count : 1));
    for (int64_t i = 0; i < count; i++) data[i] = (float)values[i];
    n->data = data;
    return id;
}

static int shifted_id(int id, int pos)
{
    return id != IR_NONE && id >= pos ? id + 1 : id;
}

/* Renumbers every reference after an insertion at pos. */
static void remap_after_insert(ir_graph *g, int pos)
{
    for (int i = 0; i < g->nnodes; i++) {
        if (i == pos)
            continue;
        ir_node *n = &g->nodes[i];
        for (int s = 0; s < n->nsrc; s++)
            n->src[s] = shifted_id(n->src[s], pos);
    }
    for (int i = 0; i < g->ninputs; i++)
        g->inputs[i] = shifted_id(g->inputs[i], pos);
    for (int i = 0; i < g->noutputs; i++)
        g->outputs[i] = shifted_id(g->outputs[i], pos);
}

int ir_insert(ir_graph *g, int pos, ir_op op, const int *src, int nsrc, ax_loc loc)
{
    if (pos < 0 || pos > g->nnodes)
        ax_die("ir_insert: position %d outside 0..%d", pos, g->nnodes);
    check_operands(g, op, src, nsrc, pos);
    reserve_node(g);
    memmove(&g->nodes[pos + 1], &g->nodes[pos], (size_t)(g->nnodes - pos) * sizeof *g->nodes);
    ir_node n = blank_node(op, loc);
    n.nsrc = nsrc;
    n.src = new_operands(g->ctx->arena, src, nsrc);
    g->nodes[pos] = n;
    g->nnodes++;
    remap_after_insert(g, pos);
    return pos;
}

bool ir_same_shape(const ir_node *a, const ir_node *b)
{
    return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->rank) == 0;
}

int ir_output_index(const ir_graph *g, int id)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == id)
            return i;
    return -1;
}

void ir_result_extent(const ir_graph *g, const ir_node *r, int64_t *start, int64_t *size)
{
    const ir_node *p = &g->nodes[r->src[0]];
    const int64_t dim = p->shape[p->attrs.axis];
    const int64_t part = p->attrs.parts > 0 ? (dim + p->attrs.parts - 1) / p->attrs.parts : dim;
    *start = (int64_t)r->attrs.index * part;
    *size = *start >= dim ? 0 : dim - *start < part ? dim - *start : part;
}

int ir_result_node(const ir_graph *g, int id, int k)
{
    for (int r = id + 1; r < g->nnodes; r++) {
        const ir_node *n = &g->nodes[r];
        if (!n->dead && n->op == IR_OP_result && n->src[0] == id && n->attrs.index == k)
            return r;
    }
    return IR_NONE;
}

int64_t ir_numel(const ir_node *n)
{
    int64_t count = 1;
    for (int i = 0; i < n->rank; i++)
        count *= n->shape[i];
    return count;
}

void ir_upsample_source(int64_t dst, int64_t in, int s, int mode, int64_t *i0, int64_t *i1, double *frac)
{
    if (mode == IR_UPSAMPLE_NEAREST) {
        *i0 = *i1 = dst / s;
        *frac = 0;
        return;
    }
    double src = mode == IR_UPSAMPLE_BILINEAR_CORNERS
                 ? (in * s > 1 ? (double)dst * (double)(in - 1) / (double)(in * s - 1) : 0)
                 : ((double)dst + 0.5) / s - 0.5;
    if (src < 0) src = 0;
    *i0 = (int64_t)src;
    if (*i0 > in - 1) *i0 = in - 1;
    *i1 = *i0 + 1 < in ? *i0 + 1 : in - 1;
    *frac = src - (double)*i0;
}

int64_t ir_slice_strides(const ir_attrs *attrs, const int64_t *x_shape, int rank, int64_t *strides)
{
    int64_t x_stride = 1, offset = 0;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = x_stride * attrs->step[d];
        offset += attrs->begin[d] * x_stride;
        x_stride *= x_shape[d];
    }
    return offset;
}

size_t ir_nbytes(const ir_node *n)
{
    return (size_t)ir_numel(n) * axrt_dtype_size(n->dtype);
}

size_t ir_value_bytes(const ir_node *n)
{
    return n->quant && n->quant->out_q8 ? (size_t)ir_numel(n) : ir_nbytes(n);
}

axrt_pool2d_params ir_pool2d_params(const ir_graph *g, const ir_node *n)
{
    const ir_node *x = &g->nodes[n->src[0]];
    const ir_attrs *a = &n->attrs;
    return (axrt_pool2d_params){(int)x->shape[0], (int)x->shape[1], (int)x->shape[2], (int)x->shape[3],
                                (int)n->shape[1], (int)n->shape[2], a->kernel[0], a->kernel[1], a->stride[0],
                                a->stride[1], a->pad[0], a->pad[1], a->pad[2], a->pad[3]};
}

const char *ir_shape_str(const int64_t *shape, int rank, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                 (long long)shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

const ir_dtype_info ir_dtypes[AXRT_DTYPE_COUNT] = {
#define DTYPE_ROW(E, name, short_name, ctype, bytes, st, npy, is_float) \
    [AXRT_##E] = {name, short_name, #ctype, "AXRT_" #E, bytes, st, npy, is_float},
    AXRT_DTYPES(DTYPE_ROW)
#undef DTYPE_ROW
};

const char *ir_dtype_name(axrt_dtype dtype)
{
    return (unsigned)dtype < AXRT_DTYPE_COUNT ? ir_dtypes[dtype].name : "?";
}

axrt_dtype ir_integer_result(const ir_graph *g, const ir_node *n)
{
    if (n->op == IR_OP_argmax)
        return AXRT_I64;
    if (n->op == IR_OP_reshape && n->nsrc == 1 && n->src[0] != IR_NONE) {
        const ir_node *x = &g->nodes[n->src[0]];
        if (!ir_dtype_is_float(x->dtype) && ir_ops[x->op].kind != IR_SOURCE)
            return x->dtype;
    }
    return AXRT_DTYPE_COUNT;
}

bool ir_dtype_parse(const char *name, axrt_dtype *out)
{
    for (int i = 0; i < AXRT_DTYPE_COUNT; i++) {
        if (strcmp(name, ir_dtypes[i].name) == 0 || strcmp(name, ir_dtypes[i].short_name) == 0) {
            *out = (axrt_dtype)i;
            return true;
        }
    }
    return false;
}

static const char *op_name(ir_op op)
{
    return (unsigned)op < IR_OP_COUNT ? ir_ops[op].name : "?";
}

const char *ir_describe_layer(const ir_graph *g, const ir_node *n, char *buf, size_t size)
{
    if (g->wording)
        g->wording->layer(g, n, buf, size);
    else
        snprintf(buf, size, "%s%s%s%s", op_name(n->op), n->name ? " '" : "", n->name ? n->name : "",
                 n->name ? "'" : "");
    return buf;
}

const char *ir_describe_ctor(const ir_graph *g, ir_op op)
{
    return g->wording ? g->wording->ctor(op) : op_name(op);
}

const char *ir_describe_binary(const ir_graph *g, ir_op op)
{
    return g->wording ? g->wording->binary_symbol(op) : op_name(op);
}
