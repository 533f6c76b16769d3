/* onnx.h — the second front end: an ONNX model (docs/onnx.md) -> the same
 * graph IR the .ax front end builds.  Bounded parser (protobuf-c, generated
 * at build time from onnx.proto into build/gen); float32 models with static
 * shapes.  Shape-computing subgraphs (Shape, Gather, Unsqueeze, Concat,
 * Range, Constant, small integer arithmetic) are folded at import.  NCHW
 * tensors stay NCHW at the model's inputs and outputs; around Conv and the
 * pools the importer transposes to the IR's NHWC and keeps that layout
 * through elementwise ops and batch norms.  Errors name the ONNX node and
 * op type; every unsupported op of the model is listed in one error. */
#ifndef AX_ONNX_H
#define AX_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

/* Shape inference of nodes first.. of the graph built so far (those before
 * are inferred already; pass_shape_from), given by the driver: the importer
 * needs shapes to fold Shape and resolve Reshape, and the passes live above
 * the front ends.  Called once per added node with only the new nodes, so
 * import is linear in the node count.  Returns the number of errors. */
typedef int (*onnx_infer_fn)(ir_graph *g, int first);

/* The largest ONNX model file read: protobuf's 2 GB limit on one message
 * (a model whose weights are inside it, torch.onnx.export's default below
 * that size); larger models keep their weights as external data. */
#define ONNX_MAX_MODEL_BYTES ((size_t)INT32_MAX)

/* --shape NAME=1x3x224x224: the whole shape of input NAME at compile time,
 * fixing its symbolic dimensions (batch, sequence); it may change fixed
 * ones too (interface.md §9). */
typedef struct onnx_input_shape {
    const char *name;
    int rank;
    int64_t dims[IR_MAX_RANK];
} onnx_input_shape;

/* Whether this axc was built with the ONNX front end (protobuf-c present). */
bool onnx_available(void);
/* Whether the file at path with these bytes is an ONNX model: its extension
 * is .onnx (the bytes are not checked: a model has no magic number). */
bool onnx_is_model(const char *path);
/* Imports the model in bytes (read from path; external data is read from
 * path's directory and never outside it), its inputs shaped by shapes[0..nshapes)
 * where given (each must name an input).  NULL after reporting errors. */
ir_graph *onnx_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len,
                      onnx_infer_fn infer, const onnx_input_shape *shapes, int nshapes);

#endif
