/* print_ax.h — an IR graph printed back as `.ax` source (print_ax.c), the
 * inverse of lower.c for the graphs the language can say; `--emit=ax` of the
 * driver prints imported (ONNX) models with it. */
#ifndef AXC_PRINT_AX_H
#define AXC_PRINT_AX_H

#include "ir.h"

/* Imported model g, unoptimised, as .ax source into out; renames its
 * parameters to the printed layers' (for --save-weights).  Returns 0, or -1
 * after located errors for what the language cannot say. */
int print_ax_model(ir_graph *g, ax_buf *out);

#endif
