/* tflite.h — the third front end: a TensorFlow Lite flatbuffer
 * (docs/tflite.md) -> the same graph IR as the .ax and ONNX front ends.
 * The file is read by flatc's generated C++ code behind its Verifier
 * (tflite_reader.cpp, with a C interface); its subgraph 0 is imported
 * in TFLite's own NHWC layout, float32 and int8 (the file's scales and zero
 * points on the IR values, compiled to int8 by axc_quantize_file as a
 * quantised ONNX model is).  Errors name the file, the operator's index and
 * its op name. */
#ifndef AX_TFLITE_H
#define AX_TFLITE_H

#include <stdbool.h>
#include <stddef.h>

#include "onnx.h"

/* The largest .tflite read: a flatbuffer's 2 GiB (larger models keep their
 * buffers after it, at offsets the flatbuffer gives, which is read too up
 * to this size). */
#define TFLITE_MAX_MODEL_BYTES ((size_t)INT32_MAX)

/* Whether this axc was built with the TFLite front end (flatbuffers present). */
bool tflite_available(void);
/* Whether path names a TFLite model: its extension is .tflite. */
bool tflite_is_model(const char *path);
/* Imports subgraph 0 of the model in bytes (read from path, named in
 * messages); shapes are inferred by infer as the ONNX importer's are.  NULL
 * after reporting errors. */
ir_graph *tflite_import(ax_ctx *ctx, const char *path, const void *bytes, size_t len, onnx_infer_fn infer);

#endif
