/* main.c — entry point of `axc`: parse the command line, read the .ax file,
 * dispatch to compile or run.  Exit 0 success, 1 input errors (diagnostics
 * printed), 2 usage or I/O errors (a failed write to stdout included). */
#include <errno.h>
#include <string.h>

#include "driver.h"
#include "onnx.h"
#include "tflite.h"

/* rc, or AXC_EUSAGE when what was printed on stdout could not be written
 * (a full disk, /dev/full, a closed pipe). */
static int check_stdout(int rc)
{
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    axc_fail("cannot write to standard output: %s", strerror(errno ? errno : EIO));
    return rc ? rc : AXC_EUSAGE;
}

int main(int argc, char **argv)
{
    axc_opts o;
    bool exit_now;
    ax_handle_signals();
    if (argc > 1 && !strcmp(argv[1], "compare")) return check_stdout(axc_compare_main(argc - 2, argv + 2));
    int rc = axc_parse_args(argc, argv, &o, &exit_now);
    if (rc || exit_now) {
        axc_free_args(&o);
        return check_stdout(rc);
    }

    ax_ctx *ctx = ax_ctx_new();
    ctx->werror = o.werror;
    ctx->no_warnings = o.no_warnings;
    ctx->path = o.input;
    /* an ONNX model may hold its weights: up to protobuf's 2 GB */
    bool onnx = onnx_is_model(o.input), tflite = tflite_is_model(o.input);
    size_t limit = onnx ? ONNX_MAX_MODEL_BYTES : tflite ? TFLITE_MAX_MODEL_BYTES : AX_MAX_READ_BYTES;
    ctx->src = ax_read_file_max(ctx->arena, o.input, limit, &ctx->src_len);
    if (!ctx->src) {
        if (errno == EFBIG)
            axc_fail("cannot read '%s': larger than %zu MiB, the limit for %s", o.input, (limit + 1) >> 20,
                     onnx ? "an ONNX model (protobuf's; keep larger weights as external data)" :
                     tflite ? "a TFLite model (a flatbuffer's)" : "a source file");
        else
            axc_fail("cannot read '%s': %s", o.input, strerror(errno));
        ax_ctx_free(ctx);
        axc_free_args(&o);
        return AXC_EUSAGE;
    }
    rc = o.run ? axc_run(ctx, &o) : o.train ? axc_train(ctx, &o) : axc_compile(ctx, &o);
    if (rc == AXC_OK && ctx->errors) rc = AXC_EINPUT;
    ax_ctx_free(ctx);
    axc_free_args(&o);
    return check_stdout(rc);
}
