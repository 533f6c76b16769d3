/* fuzz_frontend.c — libFuzzer harness for the whole front end: arbitrary
 * bytes as a .ax file go through the same pipeline as `axc FILE.ax -o F.c`
 * (ast_parse, lower_model, pass_shape, pass_dtype, weights_init,
 * pass_memplan, ir_verify via axc_build_models) and, when that succeeds,
 * cg_c_emit into memory buffers.  Diagnostics go to /dev/null: a user error
 * is an expected outcome, while a crash, a sanitizer report, a leak or an
 * internal error (ax_die aborts) is a finding.
 * Build and run: `make fuzz` (tests/fuzz/fuzz.mk).  Seeds: corpus_frontend/. */
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

/* Code generation of successfully built models, into buffers thrown away. */
static void emit_c(ir_graph **models, int n)
{
    ax_buf c = {0}, h = {0};
    cg_request req = {.models = models, .nmodels = n, .header_name = "fuzz.h", .source_name = "fuzz.ax"};
    cg_c_emit(&req, &c, &h);
    ax_buf_free(&c);
    ax_buf_free(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ax_ctx *ctx = ax_ctx_new();
    ctx->diag_out = null_sink();
    ctx->path = "fuzz.ax";
    char *src = ax_alloc(ctx->arena, size + 1);
    memcpy(src, data, size);
    ctx->src = src;
    ctx->src_len = size;

    axc_opts o;
    memset(&o, 0, sizeof o);
    o.input = "fuzz.ax";
    o.output = "fuzz.c";
    o.opt_level = 2;
    /* a valid model of up to 4 GiB of parameters holds them twice while
       initialised and writes them again as C text: far past libFuzzer's
       2 GB memory limit, so here the limit's located error comes sooner */
    o.param_limit = (size_t)16 << 20;
    ir_graph *models[AXC_MAX_MODELS];
    int n = 0;
    if (axc_build_models(ctx, &o, models, &n) == AXC_OK && n > 0) emit_c(models, n);
    axc_free_models(models, n);
    ax_ctx_free(ctx);
    return 0;
}
