/* outputs.c — the driver's leaves, used by every command: its error line
 * (axc_fail), the source name the generated files carry, and
 * --save-weights (io/weights.c writes the file).  They call no other file
 * of compiler/, so no command depends on another for them (make layers'
 * cycle check). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "weights.h"

void axc_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("axc: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *axc_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *axc_source_name(ax_arena *a, const axc_opts *o)
{
    for (int i = 0; i < o->nprefix_maps; i++) {
        const char *map = o->prefix_maps[i], *eq = strchr(map, '=');
        size_t len = (size_t)(eq - map);
        if (!strncmp(o->input, map, len)) return ax_sprintf(a, "%s%s", eq + 1, o->input + len);
    }
    return o->input[0] == '/' ? axc_base_name(o->input) : o->input;
}

int axc_save_weights(const axc_opts *o, const ir_graph *g)
{
    if (!weights_save_file(g, o->save_weights)) return AXC_OK;
    axc_fail("cannot write '%s': %s", o->save_weights, strerror(errno));
    return AXC_EUSAGE;
}
