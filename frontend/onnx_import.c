/* onnx_import.c — ONNX bytes -> IR (onnx.h): the bounded model reader
 * (protobuf-c with size and nesting limits), the graph's inputs and
 * outputs, and the graph walk that hands each node to its op handler
 * (onnx_ops.c's table, onnx_quant.c's).  The walk and the handlers build
 * through onnx_build.c and onnx_tensor.c.  Without protobuf-c at build time
 * (AXC_ONNX undefined) onnx_import reports that the ONNX front end was left
 * out of this build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

bool onnx_is_model(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 5 && strcmp(path + n - 5, ".onnx") == 0;
}

#ifndef AXC_ONNX

bool onnx_available(void) { return false; }

ir_graph *onnx_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len,
                      onnx_infer_fn infer, const onnx_input_shape *shapes, int nshapes)
{
    (void)bytes; (void)len; (void)infer; (void)shapes; (void)nshapes;
    ax_error(ctx, ax_noloc(), "'%s' is an ONNX model, but this axc was built without the ONNX "
             "front end (install protobuf-c: sh scripts/deps.sh, then rebuild)", path);
    return NULL;
}

#else

#include "ir_names.h"
#include "onnx_internal.h"

bool onnx_available(void) { return true; }

/* A model is at most this many nodes / initializers / inputs. */
#define OX_MAX_NODES 100000

/* ---- the model ---------------------------------------------------------- */

/* "resnet18" from ".../resnet18.onnx", made a C identifier that the generated
 * code can carry (ir_names.h: "m_" before a reserved one). */
static const char *model_name(ax_arena *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    char *name = ax_strdup(a, slash ? slash + 1 : path);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    for (char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            *c = '_';
    if (!*name || (*name >= '0' && *name <= '9') || ir_model_name_problem(name))   /* axrt.onnx: m_axrt */
        return ax_sprintf(a, "m_%s", name);
    return name;
}

static const char *dir_of(ax_arena *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return ".";
    if (slash == path) return "/";
    char *d = ax_strdup(a, path);
    d[slash - path] = '\0';
    return d;
}

/* --shape's entry for input name, or NULL. */
static const onnx_input_shape *given_shape(const ox_state *s, const char *name)
{
    for (int i = 0; i < s->nshapes; i++)
        if (!strcmp(s->shapes[i].name, name)) return &s->shapes[i];
    return NULL;
}

/* The declared dims of input name as --shape text, a symbolic or unknown one as 1. */
static const char *shape_hint(ox_state *s, const Onnx__TensorShapeProto *shape)
{
    ax_buf b = {0};
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        const bool fixed = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0;
        ax_buf_printf(&b, "%s%lld", i ? "x" : "", fixed ? (long long)d->dim_value : 1LL);
    }
    const char *text = ax_strdup(s->ctx->arena, b.data ? b.data : "");
    ax_buf_free(&b);
    return text;
}

/* Input name's dims into dims: --shape NAME=... where given (it fixes the
 * symbolic ones, batch and sequence, and may change any: interface.md §9),
 * else the model's fixed ones. */
static bool input_dims(ox_state *s, const char *name, const Onnx__TensorShapeProto *shape, int64_t *dims)
{
    const onnx_input_shape *given = given_shape(s, name);
    if (given && given->rank != (int)shape->n_dim) {
        ox_fail(s, "--shape %s= gives %d dimensions, but input '%s' has %zu (e.g. --shape %s=%s)", name,
                given->rank, name, shape->n_dim, name, shape_hint(s, shape));
        return false;
    }
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        const bool fixed = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if (fixed && d->dim_value < 1 && !given) {
            ox_fail(s, "input '%s' has the non-positive dimension %zu (%lld)", name, i, (long long)d->dim_value);
            return false;
        }
        if (!fixed && !given) {
            const bool named = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param;
            ox_fail(s, "input '%s' has the symbolic dimension %zu%s%s%s: fix its shape at compile time with "
                    "--shape %s=%s (its size for '%s' in place of 1)", name, i, named ? " ('" : "",
                    named ? d->dim_param : "", named ? "')" : "", name, shape_hint(s, shape),
                    named ? d->dim_param : "that dimension");
            return false;
        }
        dims[i] = given ? given->dims[i] : d->dim_value;
    }
    return true;
}

/* Every --shape names an input of the graph (not an initializer). */
static bool shapes_name_inputs(ox_state *s, const Onnx__GraphProto *gp)
{
    for (int k = 0; k < s->nshapes; k++) {
        bool found = false;
        for (size_t i = 0; i < gp->n_input && !found; i++) {
            const char *name = gp->input[i]->name ? gp->input[i]->name : "";
            found = !strcmp(name, s->shapes[k].name) && !(ox_lookup(s, name) && ox_lookup(s, name)->c);
        }
        if (!found) {
            ax_buf list = {0};
            for (size_t i = 0; i < gp->n_input; i++) {
                const char *name = gp->input[i]->name ? gp->input[i]->name : "";
                if (!(ox_lookup(s, name) && ox_lookup(s, name)->c))
                    ax_buf_printf(&list, "%s'%s'", list.data && *list.data ? ", " : "", name);
            }
            ox_fail(s, "--shape names '%s', which is not an input of the model (its inputs: %s)",
                    s->shapes[k].name, list.data ? list.data : "none");
            ax_buf_free(&list);
            return false;
        }
    }
    return true;
}

static bool add_input(ox_state *s, const Onnx__ValueInfoProto *vi)
{
    const char *name = vi->name ? vi->name : "";
    if (ox_lookup(s, name) && ox_lookup(s, name)->c) return true;   /* an initializer */
    const Onnx__TypeProto *t = vi->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
        !t->tensor_type->shape) {
        ox_fail(s, "input '%s' is not a tensor of known shape", name);
        return false;
    }
    const Onnx__TypeProto__Tensor *tt = t->tensor_type;
    axrt_dtype dt = tt->elem_type == 1 ? AXRT_F32 : tt->elem_type == 7 ? AXRT_I64 :
                    tt->elem_type == 6 ? AXRT_I32 : AXRT_DTYPE_COUNT;
    if (dt == AXRT_DTYPE_COUNT) {
        ox_fail(s, "unsupported: input '%s' has ONNX element type %d (float32, int32 or int64 only)",
                name, (int)tt->elem_type);
        return false;
    }
    if (tt->shape->n_dim > IR_MAX_RANK) {
        ox_fail(s, "input '%s': rank over %d", name, IR_MAX_RANK);
        return false;
    }
    int id = ir_add(s->g, IR_OP_input, NULL, 0, ax_noloc());
    ir_node *n = ir_at(s->g, id);
    n->attrs = ir_attrs_unset();
    n->name = ax_strdup(s->ctx->arena, name);
    n->dtype = dt;
    n->rank = (int)tt->shape->n_dim;
    if (!input_dims(s, name, tt->shape, n->shape)) return false;
    ir_add_input(s->g, id);
    ox_val *v = ox_define(s, name);
    v->node = id;
    return ox_infer_new_nodes(s) == 0;
}

/* The handler of a default-domain op: the float table's, else the
 * quantised ops' (onnx_quant.c); NULL when neither has it. */
static ox_handler handler_of(const char *op_type)
{
    ox_handler h = ox_find_op(op_type);
    return h ? h : ox_find_quant_op(NULL, op_type);
}

/* Lists every node whose op has no handler in one error (docs/onnx.md). */
static bool check_ops(ox_state *s, const Onnx__GraphProto *gp)
{
    ax_buf b = {0};
    int missing = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        bool foreign = n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0;
        if (n->op_type && (foreign ? ox_find_quant_op(n->domain, n->op_type) != NULL : handler_of(n->op_type) != NULL))
            continue;
        if (missing++ < 20)
            ax_buf_printf(&b, "%s'%s' (%s%s%s, opset %lld)", missing > 1 ? ", " : "",
                          n->name && *n->name ? n->name : "?", foreign ? n->domain : "",
                          foreign ? "." : "", n->op_type ? n->op_type : "?", (long long)s->opset);
    }
    if (missing)
        ax_error(s->ctx, ax_noloc(), "unsupported ONNX operators in %d node%s: %.*s%s", missing,
                 missing > 1 ? "s" : "", (int)b.len, b.data, missing > 20 ? ", ..." : "");
    ax_buf_free(&b);
    return missing == 0;
}

static bool import_node(ox_state *s, const Onnx__NodeProto *n)
{
    s->node = n;
    if (n->n_output < 1 || n->n_input > 1000 || n->n_output > IR_SRC_ROOM) {
        ox_fail(s, "a node needs 1 to %d outputs and at most 1000 inputs", IR_SRC_ROOM);
        return false;
    }
    for (size_t i = 0; i < n->n_input; i++)
        if (n->input[i][0] && !ox_lookup(s, n->input[i])) {
            ox_fail(s, "input '%s' is not defined before this node (by an earlier node, an "
                    "initializer or a graph input)", n->input[i]);
            return false;
        }
    int errors = s->ctx->errors;
    bool ok = handler_of(n->op_type)(s) && s->ctx->errors == errors;
    if (!ok && s->ctx->errors == errors)   /* a handler that found a required input absent */
        ox_fail(s, "a required input is empty ('') or missing (%zu inputs given)", n->n_input);
    for (size_t i = 0; ok && i < n->n_output; i++)   /* one that nothing reads may stay undefined */
        if (n->output[i][0] && !ox_lookup(s, n->output[i]) && ox_value_used(s, n->output[i])) {
            ox_unsupported(s, "this output of the node");
            ok = false;
        }
    s->node = NULL;
    return ok;
}

/* The graph outputs, in NCHW, each a node of its own. */
static bool add_outputs(ox_state *s, const Onnx__GraphProto *gp)
{
    if (gp->n_output == 0 || gp->n_output > IR_SRC_ROOM) {
        ox_fail(s, "the graph has %zu outputs (1 to %d)", gp->n_output, IR_SRC_ROOM);
        return false;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        ox_val *v = ox_lookup(s, name);
        if (!v) {
            ox_fail(s, "output '%s' is computed by no node", name);
            return false;
        }
        int id = ox_node(s, v);
        if (id == IR_NONE) return false;
        const ir_node *n = ir_at(s->g, id);
        if (ir_ops[n->op].kind == IR_SOURCE || ir_is_output(s->g, id)) {   /* a copy of its own */
            ir_attrs a = ir_attrs_unset();
            a.nperm = n->rank;
            for (int k = 0; k < n->rank; k++) a.perm[k] = k;
            id = ox_add(s, IR_OP_transpose, &id, 1, &a);
            if (id == IR_NONE) return false;
        }
        ir_add_output(s->g, id, ax_strdup(s->ctx->arena, name));
    }
    return true;
}

static bool import_graph(ox_state *s, const Onnx__GraphProto *gp)
{
    if (gp->n_node > OX_MAX_NODES || gp->n_initializer > OX_MAX_NODES) {
        ox_fail(s, "the graph has more than %d nodes or initializers", OX_MAX_NODES);
        return false;
    }
    if (!check_ops(s, gp)) return false;
    s->graph = gp;
    ox_collect_used(s, gp);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        ox_const *c = ox_tensor(s, gp->initializer[i]);
        if (!c) return false;
        ox_define(s, gp->initializer[i]->name ? gp->initializer[i]->name : "")->c = c;
    }
    if (!shapes_name_inputs(s, gp)) return false;
    for (size_t i = 0; i < gp->n_input; i++)
        if (!add_input(s, gp->input[i])) return false;
    for (size_t i = 0; i < gp->n_node; i++)
        if (!import_node(s, gp->node[i])) return false;
    return add_outputs(s, gp);
}

static int64_t default_opset(const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain;
        if (!d || !*d || !strcmp(d, "ai.onnx")) return m->opset_import[i]->version;
    }
    return 1;
}

/* ---- nesting bound ------------------------------------------------------- */

/* protobuf-c unpacks a submessage by recursion: a GraphProto in an
 * attribute of a node of a GraphProto ... 3,000 deep overflows the stack.
 * Before unpacking, the wire format is scanned along the message fields of
 * onnx.proto that can nest (graphs in attributes, functions, training info,
 * sequence/map/optional types); past OX_MAX_NESTING levels it is refused.
 * The scan recurses at most that deep itself and reads each byte once. */
#define OX_MAX_NESTING 64

typedef enum {
    PB_MODEL, PB_GRAPH, PB_NODE, PB_ATTR, PB_TENSOR, PB_SPARSE, PB_VALUE_INFO, PB_TYPE,
    PB_TYPE_ELEM1, PB_TYPE_ELEM2, PB_FUNCTION, PB_TRAINING, PB_LEAF
} pb_kind;

/* The message kind of field number f of a message of kind k (PB_LEAF: a
 * message that nests nothing further, or not a message). */
static pb_kind pb_field_kind(pb_kind k, uint64_t f)
{
    switch (k) {
    case PB_MODEL: return f == 7 ? PB_GRAPH : f == 25 ? PB_FUNCTION : f == 20 ? PB_TRAINING : PB_LEAF;
    case PB_GRAPH: return f == 1 ? PB_NODE : f == 5 ? PB_TENSOR : f == 15 ? PB_SPARSE
                        : f == 11 || f == 12 || f == 13 ? PB_VALUE_INFO : PB_LEAF;
    case PB_NODE: return f == 5 ? PB_ATTR : PB_LEAF;
    case PB_ATTR: return f == 5 || f == 10 ? PB_TENSOR : f == 6 || f == 11 ? PB_GRAPH
                       : f == 22 || f == 23 ? PB_SPARSE : f == 14 || f == 15 ? PB_TYPE : PB_LEAF;
    case PB_SPARSE: return f == 1 || f == 2 ? PB_TENSOR : PB_LEAF;
    case PB_VALUE_INFO: return f == 2 ? PB_TYPE : PB_LEAF;
    case PB_TYPE: return f == 4 || f == 9 ? PB_TYPE_ELEM1 : f == 5 ? PB_TYPE_ELEM2 : PB_LEAF;
    case PB_TYPE_ELEM1: return f == 1 ? PB_TYPE : PB_LEAF;   /* sequence, optional: elem_type */
    case PB_TYPE_ELEM2: return f == 2 ? PB_TYPE : PB_LEAF;   /* map: value_type */
    case PB_FUNCTION: return f == 4 ? PB_NODE : f == 11 ? PB_ATTR : f == 12 ? PB_VALUE_INFO : PB_LEAF;
    case PB_TRAINING: return f == 1 || f == 2 ? PB_GRAPH : PB_LEAF;
    default: return PB_LEAF;
    }
}

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The deepest nesting of the message of kind k in [p, end), depth levels
 * above it; stops (returning more than OX_MAX_NESTING) once past the bound.
 * Malformed bytes end the scan: protobuf-c reports them. */
static int pb_depth(const uint8_t *p, const uint8_t *end, pb_kind k, int depth)
{
    int deepest = depth;
    while (p < end && deepest <= OX_MAX_NESTING) {
        uint64_t key, v;
        if (!pb_varint(&p, end, &key)) break;
        switch (key & 7) {
        case 0: if (!pb_varint(&p, end, &v)) return deepest; break;
        case 1: if (end - p < 8) return deepest; p += 8; break;
        case 5: if (end - p < 4) return deepest; p += 4; break;
        case 2: {
            if (!pb_varint(&p, end, &v) || v > (uint64_t)(end - p)) return deepest;
            pb_kind sub = pb_field_kind(k, key >> 3);
            if (sub != PB_LEAF) {
                int d = pb_depth(p, p + v, sub, depth + 1);
                if (d > deepest) deepest = d;
            }
            p += v;
            break;
        }
        default: return deepest;   /* groups: protobuf-c refuses them */
        }
    }
    return deepest;
}

ir_graph *onnx_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len,
                      onnx_infer_fn infer, const onnx_input_shape *shapes, int nshapes)
{
    if (len && pb_depth(bytes, (const uint8_t *)bytes + len, PB_MODEL, 0) > OX_MAX_NESTING) {
        ax_error(ctx, ax_noloc(), "'%s' nests graphs, attributes or types more than %d messages deep "
                 "(refused before parsing)", path, OX_MAX_NESTING);
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, bytes);
    if (!m || !m->graph) {
        ax_error(ctx, ax_noloc(), "'%s' is not a valid ONNX model (truncated or not a ModelProto)",
                 path);
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        return NULL;
    }
    ox_state s = {.ctx = ctx, .infer = infer, .dir = dir_of(ctx->arena, path), .shapes = shapes,
                  .nshapes = nshapes};
    s.opset = default_opset(m);
    s.g = ir_graph_new(ctx, model_name(ctx->arena, path), ax_noloc());
    s.g->wording = &onnx_wording;
    int errors = ctx->errors;
    if (s.opset < 1 || s.opset > OX_MAX_OPSET)
        ax_error(ctx, ax_noloc(), "'%s' uses ONNX opset %lld, which is unsupported: axc reads opsets up to %d", path,
                 (long long)s.opset, OX_MAX_OPSET);
    else
        import_graph(&s, m->graph);
    free(s.vals);
    free(s.read_names);
    onnx__model_proto__free_unpacked(m, NULL);
    if (ctx->errors > errors) {
        ir_graph_free_nodes(s.g);
        return NULL;
    }
    return s.g;
}

#endif
