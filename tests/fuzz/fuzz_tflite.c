/* fuzz_tflite.c — libFuzzer harness for the TFLite front end: arbitrary
 * bytes as a .tflite file go through the same pipeline as
 * `axc FILE.tflite -o F.c` (the flatbuffer Verifier and reader of
 * tflite_reader.cpp, tflite_import with pass_shape_from, the optimising
 * passes, the int8 mapping of a quantised model, the memory plan via
 * axc_build_models) and, when that succeeds, cg_c_emit into memory
 * buffers.  Diagnostics go to /dev/null: a user error is an expected
 * outcome; a crash, a sanitizer report, a leak or an internal error is a
 * finding.  Seeds: corpus_tflite/ (the float32 and int8 fixtures of
 * tests/tflite/models). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg.h"
#include "driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *null_sink(void)
{
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    return sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ax_ctx *ctx = ax_ctx_new();
    ctx->diag_out = null_sink();
    ctx->path = "fuzz.tflite";
    char *src = ax_alloc(ctx->arena, size + 1);   /* the arena's alignment, as a file read */
    memcpy(src, data, size);
    ctx->src = src;
    ctx->src_len = size;

    axc_opts o;
    memset(&o, 0, sizeof o);
    o.input = "fuzz.tflite";
    o.output = "fuzz.c";
    o.opt_level = 2;
    ir_graph *models[AXC_MAX_MODELS];
    int n = 0;
    if (axc_build_models(ctx, &o, models, &n) == AXC_OK && n > 0) {
        ax_buf c = {0}, h = {0};
        cg_request req = {.models = models, .nmodels = n, .header_name = "fuzz.h", .source_name = "fuzz.tflite"};
        cg_c_emit(&req, &c, &h);
        ax_buf_free(&c);
        ax_buf_free(&h);
    }
    axc_free_models(models, n);
    ax_ctx_free(ctx);
    return 0;
}
