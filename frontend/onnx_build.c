/* onnx_build.c — what the ONNX graph walk (onnx_import.c) and the op
 * handlers (onnx_ops*.c, onnx_quant.c) build the IR with: the value table,
 * located messages, the current node's attributes, IR nodes added with shape
 * inference, and the shapes the model declares.  A leaf of the importer: it
 * calls neither the walk nor a handler, so that the walk calls the handlers
 * and both call these helpers, never the other way (docs/internals.md#layers). */
#ifdef AXC_ONNX
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- values ------------------------------------------------------------- */

static size_t hash_name(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static ox_val *slot(ox_state *s, const char *name)
{
    size_t i = hash_name(name) & (s->cap - 1);
    while (s->vals[i].name && strcmp(s->vals[i].name, name) != 0) i = (i + 1) & (s->cap - 1);
    return &s->vals[i];
}

ox_val *ox_lookup(ox_state *s, const char *name)
{
    if (!s->cap) return NULL;
    ox_val *v = slot(s, name);
    return v->name ? v : NULL;
}

static void grow(ox_state *s)
{
    ox_val *old = s->vals;
    size_t oldcap = s->cap;
    s->cap = oldcap ? oldcap * 2 : 1024;
    s->vals = calloc(s->cap, sizeof *s->vals);
    if (!s->vals) ax_die("out of memory");
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].name) *slot(s, old[i].name) = old[i];
    free(old);
}

ox_val *ox_define(ox_state *s, const char *name)
{
    if (2 * (s->used + 1) > s->cap) grow(s);
    ox_val *v = slot(s, name);
    if (!v->name) s->used++;
    memset(v, 0, sizeof *v);
    v->name = name;
    v->node = IR_NONE;
    v->nchw = IR_NONE;
    return v;
}

/* ---- messages ------------------------------------------------------------ */

void ox_fail(ox_state *s, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *n = s->node;
    if (n)
        ax_error(s->ctx, ax_noloc(), "ONNX node '%s' (%s): %s", n->name && *n->name ? n->name : "?",
                 n->op_type ? n->op_type : "?", msg);
    else
        ax_error(s->ctx, ax_noloc(), "ONNX model: %s", msg);
}

void ox_unsupported(ox_state *s, const char *what)
{
    ox_fail(s, "unsupported: %s", what);
}

ox_val *ox_input(ox_state *s, int i, bool *ok)
{
    const Onnx__NodeProto *n = s->node;
    if (i >= (int)n->n_input || !n->input[i][0]) return NULL;
    ox_val *v = ox_lookup(s, n->input[i]);
    if (!v) {
        ox_fail(s, "input '%s' is not defined before this node (by an earlier node, an initializer "
                "or a graph input)", n->input[i]);
        *ok = false;
    }
    return v;
}

/* ---- attributes ---------------------------------------------------------- */

const Onnx__AttributeProto *ox_attr(ox_state *s, const char *name)
{
    for (size_t i = 0; i < s->node->n_attribute; i++)
        if (s->node->attribute[i]->name && !strcmp(s->node->attribute[i]->name, name))
            return s->node->attribute[i];
    return NULL;
}

int64_t ox_attr_int(ox_state *s, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    return a && a->has_i ? a->i : dflt;
}

double ox_attr_float(ox_state *s, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    return a && a->has_f ? a->f : dflt;
}

const char *ox_attr_str(ox_state *s, const char *name, const char *dflt)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    if (!a || !a->has_s) return dflt;
    char *t = ax_alloc(s->ctx->arena, a->s.len + 1);
    memcpy(t, a->s.data, a->s.len);
    return t;
}

int ox_attr_ints(ox_state *s, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = ox_attr(s, name);
    if (!a) return -1;
    int n = (int)(a->n_ints < (size_t)max ? a->n_ints : (size_t)max);
    for (int i = 0; i < n; i++) out[i] = a->ints[i];
    return a->n_ints > (size_t)max ? max + 1 : n;
}

/* ---- nodes ----------------------------------------------------------------- */

static const char *node_label(ox_state *s)
{
    const Onnx__NodeProto *n = s->node;
    if (!n) return NULL;
    return ax_sprintf(s->ctx->arena, "%s '%s'", n->op_type ? n->op_type : "?",
                      n->name && *n->name ? n->name : (n->n_output ? n->output[0] : "?"));
}

/* Linear in the node count: only the nodes added since the last call
 * (the whole graph after every node was quadratic). */
int ox_infer_new_nodes(ox_state *s)
{
    int first = s->inferred;
    s->inferred = s->g->nnodes;
    return s->infer(s->g, first);
}

int ox_add(ox_state *s, ir_op op, const int *src, int nsrc, const ir_attrs *attrs)
{
    int id = ir_add_imported(s->g, op, src, nsrc, attrs, node_label(s));
    if (id == IR_NONE) return IR_NONE;
    int errors = s->ctx->errors;
    if (ox_infer_new_nodes(s) || s->ctx->errors > errors) return IR_NONE;
    return id;
}

/* Gives param node id the file's weight scales of the value called name,
 * if it holds dequantised integers (ir_node file_wscale; onnx_quant.c
 * keeps them on the constant). */
static void quant_param(ox_state *s, int id, const char *name)
{
    ox_val *v = name ? ox_lookup(s, name) : NULL;
    if (!v || !v->c || !v->c->qscale) return;
    ir_node *n = ir_at(s->g, id);
    n->file_wscale = v->c->qscale;
    n->nfile_wscale = v->c->nqscale;
}

int ox_param(ox_state *s, const double *values, int rank, const int64_t *shape, const char *what)
{
    const int id = ir_add_param_data(s->g, what ? what : ax_sprintf(s->ctx->arena, "onnx_const_%d", s->counter++),
                                     values, rank, shape);
    quant_param(s, id, what);
    return id;
}

/* Whether perm keeps x's dimensions longer than 1 in their order: it then
 * moves no element, and the transpose is a reshape (which the IR aliases
 * to x's buffer instead of copying: BERT's [1, 128, 768] <-> [128, 1, 768]
 * around PyTorch's exported attention). */
static bool moves_only_unit_dims(const ir_node *x, const int *perm, int rank)
{
    int last = -1;
    if (x->rank != rank)
        return false;
    for (int i = 0; i < rank; i++) {
        if (x->shape[perm[i]] == 1)
            continue;
        if (perm[i] < last)
            return false;
        last = perm[i];
    }
    return true;
}

int ox_transpose(ox_state *s, int x, const int *perm, int rank)
{
    const ir_node *in = ir_at(s->g, x);
    int composed[IR_MAX_RANK];
    if (in->op == IR_OP_transpose && in->attrs.nperm == rank) {   /* one transpose, not two */
        for (int i = 0; i < rank; i++) composed[i] = in->attrs.perm[perm[i]];
        perm = composed;
        x = in->src[0];
    }
    bool identity = true;
    for (int i = 0; i < rank; i++) identity &= perm[i] == i;
    if (identity) return x;
    const ir_node *xn = ir_at(s->g, x);
    if (moves_only_unit_dims(xn, perm, rank)) {
        ir_attrs r = ir_attrs_unset();
        r.nnewshape = rank;
        for (int i = 0; i < rank; i++) r.newshape[i] = xn->shape[perm[i]];
        return ox_add(s, IR_OP_reshape, &x, 1, &r);
    }
    ir_attrs a = ir_attrs_unset();
    a.nperm = rank;
    memcpy(a.perm, perm, sizeof *perm * (size_t)rank);
    return ox_add(s, IR_OP_transpose, &x, 1, &a);
}

int ox_scalar(ox_state *s, double value) { return ir_add_scalar(s->g, value, ax_noloc()); }

int ox_node(ox_state *s, ox_val *v)
{
    if (v->c) {
        if (v->c->node == IR_NONE) {
            if (v->c->is_int) {
                ox_unsupported(s, "an integer constant used as a tensor");
                return IR_NONE;
            }
            if (v->c->rank == 0) return v->c->node = ox_scalar(s, v->c->v[0]);
            v->c->node = ox_param(s, v->c->v, v->c->rank, v->c->shape, ax_strdup(s->ctx->arena, v->name));
        }
        return v->c->node;
    }
    if (!v->nhwc) return v->node;
    static const int to_nchw[4] = {0, 3, 1, 2};
    if (v->nchw == IR_NONE) v->nchw = ox_transpose(s, v->node, to_nchw, 4);
    return v->nchw;
}

int ox_node_nhwc(ox_state *s, ox_val *v)
{
    if (!v->c && v->nhwc) return v->node;
    int x = ox_node(s, v);
    if (x == IR_NONE) return IR_NONE;
    if (ir_at(s->g, x)->rank != 4) {
        ox_unsupported(s, "an input that is not 4-D (N, C, H, W)");
        return IR_NONE;
    }
    static const int to_nhwc[4] = {0, 2, 3, 1};
    return ox_transpose(s, x, to_nhwc, 4);
}

int ox_shape(ox_state *s, ox_val *v, int64_t *shape)
{
    if (v->c) {
        memcpy(shape, v->c->shape, sizeof *shape * (size_t)v->c->rank);
        return v->c->rank;
    }
    const ir_node *n = ir_at(s->g, v->node);
    if (v->nhwc) {
        shape[0] = n->shape[0], shape[1] = n->shape[3], shape[2] = n->shape[1], shape[3] = n->shape[2];
        return 4;
    }
    memcpy(shape, n->shape, sizeof *shape * (size_t)n->rank);
    return n->rank;
}
/* ---- declared shapes, names read ----------------------------------------- */

/* The static dims of a declared value, or -1. */
static int static_dims(const Onnx__ValueInfoProto *vi, int64_t *shape)
{
    const Onnx__TypeProto *t = vi->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
        !t->tensor_type->shape || t->tensor_type->shape->n_dim > IR_MAX_RANK)
        return -1;
    const Onnx__TensorShapeProto *sh = t->tensor_type->shape;
    for (size_t i = 0; i < sh->n_dim; i++) {
        if (sh->dim[i]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || sh->dim[i]->dim_value < 1)
            return -1;
        shape[i] = sh->dim[i]->dim_value;
    }
    return (int)sh->n_dim;
}

int ox_declared_shape(ox_state *s, const char *name, int64_t *shape)
{
    const Onnx__GraphProto *gp = s->graph;
    for (size_t i = 0; gp && i < gp->n_output + gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = i < gp->n_output ? gp->output[i] : gp->value_info[i - gp->n_output];
        if (vi->name && !strcmp(vi->name, name)) return static_dims(vi, shape);
    }
    return -1;
}

/* The slot of name in the set of names read (hashed as the value table). */
static const char **used_slot(ox_state *s, const char *name)
{
    size_t i = hash_name(name) & (s->read_cap - 1);
    while (s->read_names[i] && strcmp(s->read_names[i], name) != 0) i = (i + 1) & (s->read_cap - 1);
    return &s->read_names[i];
}

/* Built once so that ox_value_used is a lookup, not a scan of the graph
 * per call. */
void ox_collect_used(ox_state *s, const Onnx__GraphProto *gp)
{
    size_t n = gp->n_output;
    for (size_t i = 0; i < gp->n_node; i++) n += gp->node[i]->n_input;
    s->read_cap = 16;
    while (s->read_cap < 2 * n + 2) s->read_cap *= 2;
    s->read_names = calloc(s->read_cap, sizeof *s->read_names);
    if (!s->read_names) ax_die("out of memory");
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++) *used_slot(s, gp->node[i]->input[k]) = gp->node[i]->input[k];
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name) *used_slot(s, gp->output[i]->name) = gp->output[i]->name;
}

bool ox_value_used(ox_state *s, const char *name)
{
    return s->read_names && *used_slot(s, name) != NULL;
}

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_build_left_out;
#endif
