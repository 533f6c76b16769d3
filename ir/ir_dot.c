/* ir_dot.c — the graph as Graphviz (--emit=dot, --emit=svg): one box per
 * node labelled with its op, name, shape and arena placement; parameters
 * and scalars small and grey so the data flow stands out.  What the passes
 * decided is drawn: a fused elementwise loop is a cluster of its steps, an
 * epilogue (residual add, activation) a cluster around its layer, a result
 * computed in place over an operand a bold edge labelled "in place", and the
 * node where the most bytes are live (the caller passes the memory plan's
 * peak) a red border. */
#include <string.h>

#include "ir.h"

static void put_escaped(ax_buf *out, const char *text)
{
    for (const char *p = text; *p; p++) {   /* escape for a DOT string */
        if (*p == '"' || *p == '\\') ax_buf_puts(out, "\\");
        ax_buf_put(out, p, 1);
    }
}

static void put_label(ax_buf *out, const ir_node *n, int id)
{
    char shape[128];
    ir_shape_str(n->shape, n->rank, shape, sizeof shape);
    ax_buf_printf(out, "%%%d %s", id, ir_ops[n->op].name);
    if (n->name) {
        ax_buf_puts(out, " ");
        put_escaped(out, n->name);
    }
    ax_buf_printf(out, "\\n%s%s", ir_dtype_name(n->dtype), shape);
    if (n->offset >= 0)
        ax_buf_printf(out, "\\narena %lld..%lld", (long long)n->offset,
                      (long long)(n->offset + (int64_t)ir_nbytes(n)));
    if (n->scratch_offset >= 0)
        ax_buf_printf(out, "\\nscratch at %lld", (long long)n->scratch_offset);
    if (n->rows_fused)
        ax_buf_puts(out, "\\nrows made inside its reader");
    if (n->scale_folded)
        ax_buf_puts(out, "\\nfolded into its reader's weight");
    if (n->op == IR_OP_param && n->layout != IR_LAYOUT_PLAIN)
        ax_buf_printf(out, "\\n%s", ir_layout_names[n->layout]);
}

/* A fused loop's steps as small nodes inside its cluster. */
static void put_fused_steps(ax_buf *out, const ir_node *n, int id)
{
    for (int s = 0; s < n->attrs.nsteps; s++) {
        const ir_fused_step *step = &n->attrs.steps[s];
        if (step->op == IR_OP_scalar)
            ax_buf_printf(out, "    n%d_s%d [label=\"%g\", shape=plaintext];\n", id, s, step->value);
        else
            ax_buf_printf(out, "    n%d_s%d [label=\"%s\", shape=ellipse];\n", id, s, ir_ops[step->op].name);
        for (int a = 0; a < 2 && step->op != IR_OP_scalar; a++) {
            if (a == 1 && ir_ops[step->op].kind != IR_BINARY)
                break;
            if (step->arg[a] >= 0)
                ax_buf_printf(out, "    n%d_s%d -> n%d_s%d;\n", id, step->arg[a], id, s);
        }
    }
    if (n->attrs.nsteps > 0)
        ax_buf_printf(out, "    n%d_s%d -> n%d [style=dotted];\n", id, n->attrs.nsteps - 1, id);
}

static void put_node(ax_buf *out, const ir_graph *g, int id, int peak)
{
    const ir_node *n = &g->nodes[id];
    const bool fused = n->op == IR_OP_fused_elementwise;
    const bool epilogue = n->attrs.act != IR_NONE || n->attrs.residual != IR_NONE;
    if (fused || epilogue) {
        ax_buf_printf(out, "  subgraph cluster_%d {\n    style=rounded; color=blue; label=\"%s\";\n", id,
                      fused ? "fused loop" : "fused epilogue");
        if (fused)
            put_fused_steps(out, n, id);
    }
    ax_buf_printf(out, "  n%d [label=\"", id);
    put_label(out, n, id);
    if (n->attrs.residual != IR_NONE)
        ax_buf_puts(out, "\\n+ residual");
    if (n->attrs.act != IR_NONE)
        ax_buf_printf(out, "\\n-> %s", ir_ops[n->attrs.act].name);
    bool minor = n->op == IR_OP_param || n->op == IR_OP_scalar;
    ax_buf_printf(out, "\"%s%s];\n", minor ? ", color=grey, fontcolor=grey, fontsize=9" : "",
                  id == peak ? ", color=red, penwidth=2, xlabel=\"peak\"" : "");
    if (fused || epilogue)
        ax_buf_puts(out, "  }\n");
    for (int k = 0; k < n->nsrc; k++) {
        if (n->src[k] == IR_NONE) continue;
        const bool over = k == n->inplace_of && ir_ops[n->op].inplace != IR_INPLACE_ALIAS;
        ax_buf_printf(out, "  n%d -> n%d%s;\n", n->src[k], id,
                      over ? " [style=bold, color=darkgreen, label=\"in place\"]" : "");
    }
}

void ir_dump_dot(const ir_graph *g, int peak, size_t peak_bytes, ax_buf *out)
{
    ax_buf_printf(out, "digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n"
                       "  label=\"%s: arena %zu bytes, peak %zu bytes live at %%%d\"; labelloc=t;\n",
                  g->name, g->name, g->arena_bytes, peak_bytes, peak);
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead) put_node(out, g, i, peak);
    for (int k = 0; k < g->noutputs; k++) {
        ax_buf_printf(out, "  out%d [label=\"", k);
        put_escaped(out, g->output_names[k] ? g->output_names[k] : "out");
        ax_buf_printf(out, "\", shape=oval];\n  n%d -> out%d;\n", g->outputs[k], k);
    }
    ax_buf_puts(out, "}\n");
}
