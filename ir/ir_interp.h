/* ir_interp.h — the reference interpreter (`axc run --interp`).  Naive and
 * independent of the code generators: it evaluates the graph node by node in
 * double precision and converts to each node's dtype only at the outputs.
 * Tests use it to cross-check generated code. */
#ifndef AX_IR_INTERP_H
#define AX_IR_INTERP_H

#include "ir.h"

/* inputs[i] holds graph input i in its declared dtype (g->nodes[g->inputs[i]]);
 * outputs[i] receives output i in its node's dtype.  Params must have data.
 * Returns 0, or -1 after an internal failure (out of memory). */
int ir_interp_run(const ir_graph *g, const void *const *inputs, void *const *outputs);
/* As ir_interp_run, calling observe with each node's value (count elements,
 * after its fused epilogue) as soon as it is computed; observe may change it
 * (what later nodes read): calibration and the int8 error estimate. */
typedef void ir_interp_observer(void *user, int id, double *values, int64_t count);
/* The interpreter's formula of UNARY op at x (NaN for another op). */
double ir_interp_unary(ir_op op, double alpha, double x);
int ir_interp_run_observed(const ir_graph *g, const void *const *inputs, void *const *outputs,
                           ir_interp_observer *observe, void *user);

/* Element i of data (of dtype) as a double; x stored as element i of data,
 * rounded once to nearest, ties to even (integers: truncated, saturated).
 * The compiler's conversions of constants to Float16/BFloat16 use these. */
double ir_element_get(const void *data, axrt_dtype dtype, int64_t i);
void ir_element_set(void *data, axrt_dtype dtype, int64_t i, double x);

#endif
