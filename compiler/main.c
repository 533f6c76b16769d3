/* main.c — entry point of `axc`: parse the command line, read the .ax file,
 * dispatch to compile or run.  Exit 0 success, 1 input errors (diagnostics
 * printed), 2 usage or I/O errors. */
#include <errno.h>
#include <string.h>

#include "driver.h"

int main(int argc, char **argv)
{
    axc_opts o;
    bool exit_now;
    if (argc > 1 && !strcmp(argv[1], "compare")) return axc_compare_main(argc - 2, argv + 2);
    int rc = axc_parse_args(argc, argv, &o, &exit_now);
    if (rc || exit_now) {
        axc_free_args(&o);
        return rc;
    }

    ax_ctx *ctx = ax_ctx_new();
    ctx->werror = o.werror;
    ctx->no_warnings = o.no_warnings;
    ctx->path = o.input;
    ctx->src = ax_read_file(ctx->arena, o.input, &ctx->src_len);
    if (!ctx->src) {
        axc_fail("cannot read '%s': %s", o.input, strerror(errno));
        ax_ctx_free(ctx);
        axc_free_args(&o);
        return AXC_EUSAGE;
    }
    rc = o.run ? axc_run(ctx, &o) : axc_compile(ctx, &o);
    if (rc == AXC_OK && ctx->errors) rc = AXC_EINPUT;
    ax_ctx_free(ctx);
    axc_free_args(&o);
    return rc;
}
