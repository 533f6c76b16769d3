/* ir_names.c — the one rule for names a model brings into generated code
 * (ir_names.h).  Both front ends, the C and training-step printers and the
 * .ax printer reach it, so a name is mangled or refused the same way
 * whichever path it takes. */
#include <ctype.h>
#include <string.h>

#include "ir_names.h"

/* The prefixes of the runtime's and the generated code's own symbols
 * (axrt_*, AXRT_*, the GPU kernels' axk_*, axc_profile_clock), matched
 * case-insensitively because the printers also write a model's name in
 * upper case (NAME_ARENA_BYTES). */
static const char *const runtime_prefixes[] = {"axrt", "axk", "axc"};

bool ir_name_has_runtime_prefix(const char *name)
{
    for (size_t i = 0; i < sizeof runtime_prefixes / sizeof *runtime_prefixes; i++) {
        size_t n = strlen(runtime_prefixes[i]);
        bool same = true;
        for (size_t k = 0; k < n && same; k++)
            same = tolower((unsigned char)name[k]) == runtime_prefixes[i][k];
        if (same && (name[n] == '\0' || name[n] == '_')) return true;
    }
    return false;
}

/* C11 7.1.3: identifiers starting with "__" or "_" and an upper-case
 * letter are reserved everywhere. */
static bool c_reserved_spelling(const char *id)
{
    return id[0] == '_' && (id[1] == '_' || isupper((unsigned char)id[1]));
}

const char *ir_model_name_problem(const char *name)
{
    if (ir_name_has_runtime_prefix(name))
        return "it starts with a prefix of the runtime's symbols (axrt, axk, axc, in any case), so the "
               "generated NAME_forward, NAME_model ... could collide with them";
    if (c_reserved_spelling(name))
        return "C reserves identifiers that start with '__' or '_' and an upper-case letter";
    return NULL;
}

/* Words a bare identifier of the generated C must not be: C and C++
 * keywords, the locals of the generated functions, and what the headers
 * the generated code includes (<stddef.h>, <stdint.h>, <string.h>,
 * <math.h>) declare and the generated code may call or name. */
static const char *const c_words[] = {
    /* C99/C11 and C++ keywords (the header is also included from C++) */
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "bool", "class", "delete", "new", "this", "template", "typename", "namespace",
    "private", "public", "protected", "virtual", "operator", "friend", "try", "catch", "throw", "using",
    "true", "false", "and", "or", "not", "xor", "asm", "mutable", "explicit", "export", "wchar_t", "nullptr",
    "alignas", "alignof", "noexcept", "static_assert", "thread_local", "decltype", "constexpr", "char16_t",
    "char32_t", "const_cast", "dynamic_cast", "reinterpret_cast", "static_cast", "typeid", "and_eq",
    "bitand", "bitor", "compl", "not_eq", "or_eq", "xor_eq",
    /* the generated functions' locals */
    "arena", "status", "state", "step", "params", "i_",
    /* <stddef.h>, <string.h> */
    "NULL", "offsetof", "memcpy", "memmove", "memset", "memcmp", "memchr", "strcpy", "strncpy", "strcat",
    "strncat", "strcmp", "strncmp", "strlen", "strchr", "strrchr", "strstr", "strtok", "strerror", "strspn",
    "strcspn", "strpbrk", "strcoll", "strxfrm", "errno",
    /* <math.h> macros */
    "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "isfinite", "isinf", "isnan", "isnormal",
    "signbit", "fpclassify", "isgreater", "isgreaterequal", "isless", "islessequal", "islessgreater",
    "isunordered", "math_errhandling", "MATH_ERRNO", "MATH_ERREXCEPT",
};

/* <math.h> functions: each also with an 'f' and an 'l' suffix. */
static const char *const math_functions[] = {
    "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh",
    "exp", "exp2", "expm1", "frexp", "ilogb", "ldexp", "log", "log10", "log1p", "log2", "logb", "modf",
    "scalbn", "scalbln", "cbrt", "fabs", "hypot", "pow", "sqrt", "erf", "erfc", "lgamma", "tgamma", "ceil",
    "floor", "nearbyint", "rint", "lrint", "llrint", "round", "lround", "llround", "trunc", "fmod",
    "remainder", "remquo", "copysign", "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma",
};

static bool is_math_function(const char *id)
{
    size_t n = strlen(id);
    for (size_t i = 0; i < sizeof math_functions / sizeof *math_functions; i++) {
        size_t m = strlen(math_functions[i]);
        if (!strncmp(id, math_functions[i], m) &&
            (n == m || (n == m + 1 && (id[m] == 'f' || id[m] == 'l'))))
            return true;
    }
    return false;
}

/* Type and macro families of <stdint.h>/<stddef.h>/<math.h>: any name
 * ending in "_t" (int64_t, size_t, float_t; POSIX reserves the suffix),
 * INTn_MAX/UINT.._C and the like, and the FP_ and glibc M_ constants. */
static const char *const math_macros[] = {
    "FP_NAN", "FP_INFINITE", "FP_ZERO", "FP_SUBNORMAL", "FP_NORMAL", "FP_FAST_FMA", "FP_FAST_FMAF",
    "FP_FAST_FMAL", "FP_ILOGB0", "FP_ILOGBNAN", "M_E", "M_LOG2E", "M_LOG10E", "M_LN2", "M_LN10", "M_PI",
    "M_PI_2", "M_PI_4", "M_1_PI", "M_2_PI", "M_2_SQRTPI", "M_SQRT2", "M_SQRT1_2", "SIZE_MAX", "PTRDIFF_MAX",
    "PTRDIFF_MIN",
};

static bool is_header_family(const char *id)
{
    size_t n = strlen(id);
    if (n >= 2 && !strcmp(id + n - 2, "_t")) return true;
    for (size_t i = 0; i < sizeof math_macros / sizeof *math_macros; i++) {
        size_t m = strlen(math_macros[i]);
        if (!strncmp(id, math_macros[i], m) && (id[m] == '\0' || (id[m] == 'l' && id[m + 1] == '\0')))
            return true;
    }
    const char *rest = !strncmp(id, "UINT", 4) ? id + 4 : !strncmp(id, "INT", 3) ? id + 3 : NULL;
    const char *under = rest ? strrchr(rest, '_') : NULL;
    return under && (!strcmp(under, "_MAX") || !strcmp(under, "_MIN") || !strcmp(under, "_C"));
}

/* The pointers a fused loop declares (cg_c.c emit_fused): y_ and x0_,
 * x1_, ...; an argument of that name would be shadowed. */
static bool is_fused_pointer(const char *id)
{
    size_t n = strlen(id);
    if (!strcmp(id, "y_")) return true;
    if (n < 3 || id[0] != 'x' || id[n - 1] != '_') return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!isdigit((unsigned char)id[i])) return false;
    return true;
}

bool ir_c_name_reserved(const char *id)
{
    for (size_t i = 0; i < sizeof c_words / sizeof *c_words; i++)
        if (!strcmp(id, c_words[i])) return true;
    return is_math_function(id) || is_header_family(id) || is_fused_pointer(id) || c_reserved_spelling(id) ||
           ir_name_has_runtime_prefix(id);
}

/* Reservations by prefix, which appending cannot lift: a runtime prefix,
 * a spelling C reserves, or the caller's own prefix followed by '_'. */
static bool prefix_reserved(const char *id, const char *own_prefix)
{
    size_t n = own_prefix ? strlen(own_prefix) : 0;
    return ir_name_has_runtime_prefix(id) || c_reserved_spelling(id) ||
           (own_prefix && !strncmp(id, own_prefix, n) && id[n] == '_');
}

const char *ir_identifier(ax_arena *a, const char *name, const char *lead, const char *own_prefix,
                          ir_name_clash_fn *clash, const void *user)
{
    name = name ? name : "";
    const bool needs_lead = !name[0] || isdigit((unsigned char)name[0]);
    char *id = ax_sprintf(a, "%s%s", needs_lead ? lead : "", name);
    for (char *c = id; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_') *c = '_';
    /* ends: once more 'v's lead than a prefix is long, a prefix cannot
     * match; the names taken are finitely many, and each turn lengthens id.
     * An appended '_' can make a reserved spelling ("_" -> "__"), so the
     * leads are checked again after each. */
    for (;;) {
        while (prefix_reserved(id, own_prefix))
            id = ax_sprintf(a, "v%s", id);
        if (!clash(id, user))
            return id;
        id = ax_sprintf(a, "%s_", id);
    }
}
