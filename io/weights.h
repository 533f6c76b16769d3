/* weights.h — a model's parameters: loaded from safetensors (--weights),
 * initialised deterministically (--seed), saved (--save-weights).  Parameter
 * data is stored in param nodes (ir_node.data) in the node's dtype. */
#ifndef AX_WEIGHTS_H
#define AX_WEIGHTS_H

#include <stdint.h>

#include "ir.h"

/* Fills every param of g from the safetensors file at path.  Names and
 * shapes must match exactly; every missing, unexpected and misshapen tensor
 * is reported (all of them, one diagnostic each, located at the file; a
 * missing param is paired with the leftover tensor it probably is), and
 * "*.num_batches_tracked" is ignored.  Stored dtypes convert to the param's
 * dtype.  Returns the number of errors, or -1 without a diagnostic when the
 * file cannot be read (errno says why; the caller reports the I/O error). */
int weights_load(ir_graph *g, const char *path);

/* Deterministic initialisation from seed: Glorot-uniform for IR_PARAM_GLOROT
 * (fan_in/fan_out as PyTorch computes them), zeros, ones. */
void weights_init(ir_graph *g, uint64_t seed);

/* Serialises every param (PyTorch names and layouts, model dtype) as a
 * safetensors file into out, in graph order. */
void weights_save(const ir_graph *g, ax_buf *out);
/* weights_save written to path atomically (a reader sees the old file or
 * the whole new one, never a part: a failed run leaves the last good file).
 * 0, or -1 with errno set (the caller reports the I/O error). */
int weights_save_file(const ir_graph *g, const char *path);

#endif
