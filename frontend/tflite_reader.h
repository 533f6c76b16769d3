/* tflite_reader.h — the C interface of the TFLite flatbuffer reader
 * (tflite_reader.cpp): flatc's generated C++ code for tflite_schema.fbs and
 * its Verifier read the file; this header hands the importer
 * (tflite_import.c) plain C structs.  Nothing here is trusted beyond what
 * the Verifier checked: indices (buffers, tensors, operator codes) are
 * range-checked by the importer, which reports them located. */
#ifndef AX_TFLITE_READER_H
#define AX_TFLITE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TFLite's TensorType values read (schema's enum). */
enum { TFL_FLOAT32 = 0, TFL_FLOAT16 = 1, TFL_INT32 = 2, TFL_UINT8 = 3, TFL_INT64 = 4, TFL_INT8 = 9 };

/* The ranks a tensor may have (axc's IR_MAX_RANK bounds what is imported). */
#define TFL_MAX_SHAPE 8

typedef struct tfl_tensor {
    const char *name;          /* "" when the file gives none */
    int type;                  /* TensorType */
    int rank;                  /* -1: rank over TFL_MAX_SHAPE */
    int32_t shape[TFL_MAX_SHAPE];
    bool dynamic;              /* shape_signature has a -1 */
    uint32_t buffer;           /* index into tfl_model.buffers (0: none) */
    int nscale;                /* quantisation: scales, zero points (nzp), */
    const float *scale;        /* along quantized_dimension qdim */
    int nzp;
    const int64_t *zero_point;
    int qdim;
    bool custom_quant;         /* QuantizationDetails given (not the affine parameters) */
    bool sparse, variable;
} tfl_tensor;

/* One operator's builtin options (those of the ops axc maps), defaults
 * where the file gives none. */
typedef struct tfl_options {
    int type;                  /* BuiltinOptions union type (0: none) */
    int padding;               /* 0 SAME, 1 VALID */
    int stride_w, stride_h, dilation_w, dilation_h;
    int filter_w, filter_h, depth_multiplier;
    int act;                   /* ActivationFunctionType */
    int axis;                  /* concatenation */
    float beta;                /* softmax */
    bool keep_dims;            /* mean (ReducerOptions), fully connected keep_num_dims */
    int weights_format;        /* fully connected: 0 default */
} tfl_options;

typedef struct tfl_op {
    uint32_t opcode_index;
    int ninputs, noutputs;
    int32_t *inputs, *outputs; /* tensor indices; -1: an optional input left out */
    tfl_options opt;
} tfl_op;

typedef struct tfl_opcode {
    int32_t builtin;           /* max(deprecated_builtin_code, builtin_code) */
    const char *custom;        /* custom_code, NULL for a builtin */
    int version;
} tfl_opcode;

typedef struct tfl_buffer {
    const uint8_t *data;       /* into the file's bytes (not aligned); NULL when empty */
    uint64_t size;
} tfl_buffer;

typedef struct tfl_model {
    uint32_t version;
    int nsubgraphs;
    int ntensors, nops, ninputs, noutputs, nopcodes, nbuffers;   /* of subgraph 0 */
    tfl_tensor *tensors;
    tfl_op *ops;
    int32_t *inputs, *outputs;
    tfl_opcode *opcodes;
    tfl_buffer *buffers;
    char error[256];           /* why tfl_read returned false */
} tfl_model;

/* Reads the flatbuffer bytes[0..len) (kept alive by the caller: names and
 * buffer data point into it) into *m after the Verifier accepts it.  False
 * with m->error set when it is not a TFLite model, fails verification or
 * keeps data where the file does not reach; tfl_free(m) either way. */
bool tfl_read(const void *bytes, size_t len, tfl_model *m);
void tfl_free(tfl_model *m);
/* Whether bytes start like a TFLite flatbuffer (file identifier "TFL3"). */
bool tfl_has_identifier(const void *bytes, size_t len);

#ifdef __cplusplus
}
#endif
#endif
