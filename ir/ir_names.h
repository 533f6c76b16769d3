/* ir_names.h — the one rule that turns the names a model brings (ONNX
 * value and file names, .ax identifiers) into identifiers of generated
 * code, and that says which model names generated code cannot carry.
 *
 * Generated C names a model's symbols NAME_forward, NAME_model, NAME_p<id>,
 * NAME_ARENA_BYTES ...: a model name with the prefix of the runtime's
 * symbols (axrt_*, AXRT_*) or of the generated code's own (axk_, axc_) would
 * collide with them, so such a name is refused (.ax) or mangled (ONNX file
 * names).  Arguments are bare identifiers: ir_identifier makes every name
 * one, injectively (a name that is reserved or already taken gets '_'
 * appended until it is free). */
#ifndef AX_IR_NAMES_H
#define AX_IR_NAMES_H

#include <stdbool.h>

#include "ax.h"

/* Why name cannot name a model in generated code, or NULL when it can:
 * it starts with a runtime prefix (ir_name_has_runtime_prefix) or is a
 * spelling C reserves ("__x", "_X"). */
const char *ir_model_name_problem(const char *name);
/* name is "axrt", "axk" or "axc", or starts with one and '_', in any case. */
bool ir_name_has_runtime_prefix(const char *name);
/* id cannot be a bare identifier of generated C: a C or C++ keyword, a
 * local of the generated functions, a name of a header the generated code
 * includes (memcpy, expf, INFINITY, int64_t, size_t ...), a fused loop's
 * pointer (x0_, y_), a spelling C reserves, or a runtime prefix. */
bool ir_c_name_reserved(const char *id);

/* Whether id is unavailable to the caller (reserved or already used). */
typedef bool ir_name_clash_fn(const char *id, const void *user);
/* name as an identifier: every character outside [A-Za-z0-9_] made '_',
 * `lead` put before an empty name or a leading digit, and 'v' before a name
 * with a reserved prefix (a runtime prefix, "__", "_X", or own_prefix and
 * '_' when own_prefix is not NULL: the model's own symbols) until it has
 * none; then '_' appended while clash says the
 * identifier is unavailable.  The caller's clash includes the identifiers
 * it already handed out, which makes the mapping injective ("a-b" and
 * "a_b" become a_b and a_b_). */
const char *ir_identifier(ax_arena *a, const char *name, const char *lead, const char *own_prefix,
                          ir_name_clash_fn *clash, const void *user);

#endif
