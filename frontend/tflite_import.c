/* tflite_import.c — TFLite flatbuffer -> IR (tflite.h): the graph inputs
 * and outputs, and the walk that hands each operator of subgraph 0 to its
 * handler (tflite_ops.c).  The walk and the handlers build through
 * tflite_build.c.  Without flatbuffers at build time (AXC_TFLITE undefined)
 * tflite_import reports that the TFLite front end was left out of this
 * build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tflite.h"

bool tflite_is_model(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 7 && strcmp(path + n - 7, ".tflite") == 0;
}

#ifndef AXC_TFLITE

bool tflite_available(void) { return false; }

ir_graph *tflite_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len, onnx_infer_fn infer)
{
    (void)bytes; (void)len; (void)infer;
    ax_error(ctx, ax_noloc(), "'%s' is a TFLite model, but this axc was built without the TFLite front end "
             "(install flatbuffers: sh scripts/deps.sh, then rebuild)", path);
    return NULL;
}

#else

#include "ir_names.h"
#include "tflite_internal.h"

bool tflite_available(void) { return true; }

/* ---- the model ------------------------------------------------------------ */

/* "mnet" from ".../mnet.tflite", a C identifier the generated code can carry. */
static const char *model_name(ax_arena *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    char *name = ax_strdup(a, slash ? slash + 1 : path);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    for (char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
    if (!*name || (*name >= '0' && *name <= '9') || ir_model_name_problem(name)) return ax_sprintf(a, "m_%s", name);
    return name;
}

/* A graph input: float32, or int8/uint8 read as its dequantised float
 * values (the file's scale and zero point on the node). */
static bool add_input(tfl_state *s, int t)
{
    if (!tfl_check_tensor(s, t, "a subgraph input")) return false;
    const tfl_tensor *x = tfl_tensor_at(s, t);
    if (x->type != TFL_FLOAT32 && x->type != TFL_INT8 && x->type != TFL_UINT8) {
        tfl_fail(s, "unsupported: input %d ('%s') has TFLite element type %d (float32, int8 or uint8 only)", t,
                 x->name, x->type);
        return false;
    }
    if (x->rank < 0 || x->rank > IR_MAX_RANK || tfl_element_count(x) < 1 || x->dynamic) {
        tfl_fail(s, "unsupported: input %d ('%s') has no static shape of rank at most %d", t, x->name, IR_MAX_RANK);
        return false;
    }
    if (s->node[t] != IR_NONE) return true;   /* listed twice */
    int id = ir_add(s->g, IR_OP_input, NULL, 0, ax_noloc());
    ir_node *n = ir_at(s->g, id);
    n->attrs = ir_attrs_unset();
    n->name = *x->name ? ax_strdup(s->ctx->arena, x->name) : ax_sprintf(s->ctx->arena, "input_%d", t);
    n->dtype = AXRT_F32;
    n->rank = x->rank;
    for (int d = 0; d < x->rank; d++) n->shape[d] = x->shape[d];
    ir_add_input(s->g, id);
    s->node[t] = id;
    int first = s->inferred;
    s->inferred = s->g->nnodes;
    return s->infer(s->g, first) == 0 && tfl_mark(s, t, id);
}

/* After operator s->op: whether its output tensor's node holds a value off
 * the tensor's int8 grid.  A QUANTIZE of a float value marks that value
 * (tfl_mark), which the int8 kernels reading it round at their door; the
 * data movement of such a value (RESHAPE, MAX_POOL_2D without a fused
 * activation, PAD: a concat with unmarked zeros) runs in float
 * (pass_quant shares_params only after an int8 result), so its result is
 * off the grid too.  Every other operator of an int8 tensor computes on the
 * integers (a CONCATENATION too: in a model from .tflite, pass_quant
 * ew_applies).  A DEQUANTIZE or a graph output of such a tensor rounds it
 * (tfl_on_grid). */
static void track_off_grid(tfl_state *s)
{
    const tfl_op *op = s->op;
    if (op->ninputs < 1 || op->noutputs < 1) return;
    const int32_t code = s->m->opcodes[op->opcode_index].builtin;
    int in = op->inputs[0];
    const int out = op->outputs[0];
    if (in < 0 || in >= s->m->ntensors || out < 0 || out >= s->m->ntensors) return;
    for (int hops = 0; s->alias[in] >= 0 && hops < s->m->ntensors; hops++) in = s->alias[in];
    const int in_type = tfl_tensor_at(s, in)->type;
    if (code == TFL_OP_QUANTIZE)
        s->off_grid[out] = (in_type != TFL_INT8 && in_type != TFL_UINT8) || s->off_grid[in];
    else if (code == TFL_OP_RESHAPE || code == TFL_OP_PAD || (code == TFL_OP_MAX_POOL_2D && op->opt.act == 0))
        s->off_grid[out] = s->off_grid[in];
}

static bool add_outputs(tfl_state *s)
{
    if (s->m->noutputs < 1) {
        tfl_fail(s, "the subgraph has no outputs");
        return false;
    }
    for (int i = 0; i < s->m->noutputs; i++) {
        const int t = s->m->outputs[i];
        if (!tfl_check_tensor(s, t, "a subgraph output")) return false;
        int r = t;
        for (int hops = 0; s->alias[r] >= 0 && hops < s->m->ntensors; hops++) r = s->alias[r];
        int id = tfl_node(s, r);
        if (id != IR_NONE && s->off_grid[t]) id = tfl_on_grid(s, id, t);   /* an int8 output: its integers */
        if (id == IR_NONE) return false;
        const ir_node *n = ir_at(s->g, id);
        if (ir_ops[n->op].kind == IR_SOURCE || ir_is_output(s->g, id)) {   /* a copy of its own */
            ir_attrs a = ir_attrs_unset();
            a.nperm = n->rank;
            for (int k = 0; k < n->rank; k++) a.perm[k] = k;
            id = tfl_add(s, IR_OP_transpose, &id, 1, &a);
            if (id == IR_NONE) return false;
        }
        const tfl_tensor *x = tfl_tensor_at(s, t);
        ir_add_output(s->g, id, *x->name ? ax_strdup(s->ctx->arena, x->name) : ax_sprintf(s->ctx->arena, "output_%d", t));
    }
    return true;
}

/* Every operator is a builtin with a handler: else one error listing each
 * unsupported one (index and name), so a user sees them all at once. */
static bool check_ops(tfl_state *s)
{
    char list[400] = "";
    size_t used = 0;
    int bad = 0;
    for (int i = 0; i < s->m->nops; i++) {
        const tfl_op *op = &s->m->ops[i];
        const bool ok_code = op->opcode_index < (uint32_t)s->m->nopcodes;
        const tfl_opcode *c = ok_code ? &s->m->opcodes[op->opcode_index] : NULL;
        if (c && !c->custom && tfl_find_op(c->builtin)) continue;
        if (!c) {
            s->op = op, s->op_index = i;
            tfl_fail(s, "opcode index %u; the model has %d operator codes", op->opcode_index, s->m->nopcodes);
            s->op = NULL;
            return false;
        }
        const char *name = c->custom ? ax_sprintf(s->ctx->arena, "custom '%s'", c->custom) : tfl_op_name(s, c->builtin);
        if (bad++ < 8 && used < sizeof list - 1)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d (%s)", bad > 1 ? ", " : "", i, name);
    }
    if (!bad) return true;
    tfl_fail(s, "unsupported operator%s: %s%s (docs/tflite.md lists those axc reads)", bad > 1 ? "s" : "", list,
             bad > 8 ? ", ..." : "");
    return false;
}

static bool import_subgraph(tfl_state *s)
{
    const tfl_model *m = s->m;
    if (!check_ops(s)) return false;
    s->node = malloc(sizeof *s->node * (size_t)(m->ntensors ? m->ntensors : 1));
    s->alias = malloc(sizeof *s->alias * (size_t)(m->ntensors ? m->ntensors : 1));
    s->off_grid = calloc((size_t)(m->ntensors ? m->ntensors : 1), sizeof *s->off_grid);
    if (!s->node || !s->alias || !s->off_grid) ax_die("out of memory");
    for (int t = 0; t < m->ntensors; t++) s->node[t] = IR_NONE, s->alias[t] = -1;
    for (int i = 0; i < m->ninputs; i++)
        if (!add_input(s, m->inputs[i])) return false;
    for (int i = 0; i < m->nops; i++) {
        s->op = &m->ops[i];
        s->op_index = i;
        if (!tfl_find_op(m->opcodes[s->op->opcode_index].builtin)(s)) return false;
        track_off_grid(s);
    }
    s->op = NULL;
    s->op_index = -1;
    return add_outputs(s);
}

ir_graph *tflite_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len, onnx_infer_fn infer)
{
    tfl_model m;
    if (!tfl_read(bytes, len, &m)) {
        ax_error(ctx, ax_noloc(), "'%s' is not a readable TFLite model: %s", path, m.error);
        tfl_free(&m);
        return NULL;
    }
    tfl_state s = {.ctx = ctx, .infer = infer, .path = path, .m = &m, .op_index = -1};
    s.g = ir_graph_new(ctx, model_name(ctx->arena, path), ax_noloc());
    s.g->tflite_arith = true;
    int errors = ctx->errors;
    if (!import_subgraph(&s) && ctx->errors == errors)   /* a step that failed unsaid (a shape inference */
        tfl_fail(&s, "could not be imported");           /* refusing without an error): never a silent graph */
    free(s.node);
    free(s.alias);
    free(s.off_grid);
    tfl_free(&m);
    if (ctx->errors > errors) {
        ir_graph_free_nodes(s.g);
        return NULL;
    }
    return s.g;
}

#endif
