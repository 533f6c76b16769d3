/* cg_c_literal.c — C99 literals of values for the C back end's files
 * (cg_c_internal.h, cg.h): reals exact or correctly rounded (half types as
 * their bits), and a parameter's bytes as string-literal lines.  A leaf of
 * the C printer: it prints nothing of the graph (docs/internals.md#layers). */
#include <math.h>
#include <string.h>

#include "cg_c_internal.h"
#include "ir_interp.h"

/* value as a C99 constant expression of type c_type (float or double):
 * exact for double, correctly rounded for float; an infinity or a NaN --
 * which %g would print as a bare inf or nan -- spelled with <math.h>'s
 * INFINITY and NAN (the generated code includes it). */
const char *cgc_real_text(ax_arena *a, const char *c_type, double value)
{
    if (isnan(value))
        return ax_sprintf(a, "((%s)NAN)", c_type);
    if (isinf(value))
        return ax_sprintf(a, "((%s)%sINFINITY)", c_type, value < 0 ? "-" : "");
    return ax_sprintf(a, "(%s)%.17g", c_type, value);
}

/* A compute-dtype literal: exact for double, correctly rounded for float;
 * a half type's bits, rounded once to nearest even, with the value in a
 * comment. */
const char *cgc_real_literal(const emitter *em, axrt_dtype dtype, double value)
{
    if (dtype == AXRT_F16 || dtype == AXRT_BF16) {
        uint16_t bits;
        ir_element_set(&bits, dtype, 0, value);
        return ax_sprintf(arena_of(em), "(uint16_t)0x%04x /* %.9g */", bits, value);
    }
    return cgc_real_text(arena_of(em), ctype(dtype), value);
}

/* ---- parameters' bytes ---------------------------------------------------- */

static bool host_is_little_endian(void)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 1;
}

/* The bytes of n elements of size esize as string-literal lines of
 * \xHH escapes, little-endian whatever the host. */
void cg_bytes_literal(ax_buf *out, const unsigned char *data, size_t n, size_t esize)
{
    static const char hex[] = "0123456789abcdef";
    const bool swap = !host_is_little_endian();
    const size_t per_line = 128;
    const size_t total = n * esize;
    char line[4 * 128 + 8];
    for (size_t start = 0; start < total; start += per_line) {
        size_t len = 0;
        line[len++] = '"';
        for (size_t b = start; b < total && b < start + per_line; b++) {
            size_t src = swap ? (b / esize) * esize + (esize - 1 - b % esize) : b;
            line[len++] = '\\';
            line[len++] = 'x';
            line[len++] = hex[data[src] >> 4];
            line[len++] = hex[data[src] & 15];
        }
        line[len++] = '"';
        line[len++] = '\n';
        ax_buf_put(out, line, len);
    }
}
