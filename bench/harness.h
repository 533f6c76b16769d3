/* harness.h — what the benchmark harness (harness.c) and the systems it times
 * (axc_rows.c, blas_rows.c, dnnl_rows.c) agree on.  Every system implements a
 * row as a setup that binds the row's weights and its fixed input and output
 * buffers, and a run that computes one forward pass; the harness alone owns
 * the timing loop, so all C systems are measured by the same code. */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <stddef.h>

/* A safetensors file held in memory (float32 tensors only). */
typedef struct bench_tensors {
    char *header;          /* the JSON header, NUL-terminated */
    unsigned char *data;   /* the byte buffer after the header */
    size_t data_bytes;
} bench_tensors;

/* Loads path; returns 0 on success, else prints why and returns -1. */
int bench_tensors_load(bench_tensors *t, const char *path);
void bench_tensors_free(bench_tensors *t);

/* The F32 tensor called name, which must hold exactly count elements; NULL
 * (with a message on stderr) when it is absent, of another dtype or size. */
const float *bench_tensor(const bench_tensors *t, const char *name, size_t count);

/* Elements of the F32 tensor name (0 when absent). */
size_t bench_tensor_count(const bench_tensors *t, const char *name);

/* bench_tensor for "<layer>.<param>" (e.g. "bn1", "running_var"). */
const float *bench_param(const bench_tensors *t, const char *layer, const char *param, size_t count);

/* 64-byte aligned, zeroed memory for count floats; exits when out of memory.
 * Lives as long as the process (setups run once per row). */
float *bench_floats(size_t count);

/* One system's implementation of one benchmark row. */
typedef struct bench_impl {
    const char *row;     /* "R1" .. "R6" */
    const char *system;  /* "axc", "openblas", "onednn" */
    /* binds weights w and the buffers x (input) and y (output) that every
       later run uses; returns NULL when ready, else a short reason why this
       system cannot run the row (reported as n/a) */
    const char *(*setup)(const bench_tensors *w, const float *x, float *y);
    void (*run)(void);
} bench_impl;

/* Each system's rows, terminated by an entry whose row is NULL. */
extern const bench_impl bench_axc_rows[];
extern const bench_impl bench_blas_rows[];
extern const bench_impl bench_dnnl_rows[];

/* One line describing each library's build, for the machine line. */
const char *bench_blas_version(void);
const char *bench_dnnl_version(void);

#endif
