/* ir_dot.c — the graph as Graphviz (--emit=dot): one box per node labelled
 * with its op, name and shape; parameters and scalars drawn small and grey
 * so the data flow stands out. */
#include <string.h>

#include "ir.h"

static void put_label(ax_buf *out, const ir_node *n, int id)
{
    char shape[128];
    ir_shape_str(n->shape, n->rank, shape, sizeof shape);
    ax_buf_printf(out, "%%%d %s", id, ir_ops[n->op].name);
    if (n->name) {
        ax_buf_puts(out, " ");
        for (const char *p = n->name; *p; p++) {   /* escape for a DOT string */
            if (*p == '"' || *p == '\\') ax_buf_puts(out, "\\");
            ax_buf_put(out, p, 1);
        }
    }
    ax_buf_printf(out, "\\n%s%s", ir_dtype_name(n->dtype), shape);
}

void ir_dump_dot(const ir_graph *g, ax_buf *out)
{
    ax_buf_printf(out, "digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n", g->name);
    for (int i = 0; i < g->nnodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->dead) continue;
        ax_buf_printf(out, "  n%d [label=\"", i);
        put_label(out, n, i);
        bool minor = n->op == IR_OP_param || n->op == IR_OP_scalar;
        ax_buf_printf(out, "\"%s];\n", minor ? ", color=grey, fontcolor=grey, fontsize=9" : "");
        for (int k = 0; k < n->nsrc; k++)
            if (n->src[k] != IR_NONE) ax_buf_printf(out, "  n%d -> n%d;\n", n->src[k], i);
    }
    for (int k = 0; k < g->noutputs; k++)
        ax_buf_printf(out, "  out%d [label=\"%s\", shape=oval];\n  n%d -> out%d;\n",
                      k, g->output_names[k], g->outputs[k], k);
    ax_buf_puts(out, "}\n");
}
