/* test_fastmath.c — the runtime's float32 fast path (runtime/axrt_fast.inc)
 * against double-precision references computed here with libm.
 *
 * The runtime is built twice into shared objects: as shipped (AVX2+FMA on
 * x86-64 CPUs that have it) and with -DAXRT_NO_SIMD (the portable C path
 * firmware runs), so both implementations of every packed kernel are
 * checked.  Bounds: exp within 2 ulp on [-87, 88.7]; tanh, sigmoid and
 * swish within 2.5, 3 and 3.5 ulp (libm's float functions and the SIMD
 * ones alike, but AVX2's swish within 4: its cheaper exp puts it at 3.87 ulp
 * at x = -3.2320812, in the band of every float swept below); erf within 3e-7 relative; the SIMD GELU within 1.5e-6
 * relative for x >= -5 and 5e-6 down to -13 (the exponent -x^2 / 2 rounds
 * in float: its error grows with x^2); softplus, mish, ELU, SELU and log
 * within 2e-7, 4e-7, 1.5e-7, 2.5e-7 and 1e-7 relative, the SIMD forms never
 * subnormal;
 * GEMM-based kernels within 1e-5 relative to the largest magnitude of
 * their output. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "axrt.h"
#include "axrt_cpu.h"

typedef void unary_fn(const float *, float *, size_t);
typedef void dense_fn(const float *, const float *, const float *, float *, size_t, size_t, size_t);
typedef void pack_dense_fn(const float *, float *, size_t, size_t);
typedef void conv_fn(const float *, const float *, const float *, float *, const axrt_conv2d_params *);
typedef void pack_conv_fn(const float *, float *, const axrt_conv2d_params *);
typedef void matmul_fn(const float *, const int64_t *, const float *, const int64_t *, float *,
                       const int64_t *, int, size_t, size_t, size_t);
typedef void softmax_fn(const float *, float *, size_t, size_t, size_t);
typedef void layernorm_fn(const float *, const float *, const float *, float *, size_t, size_t, float);

/* Two builds of the runtime: as shipped (the build's lib/libaxrt.a when
 * AXC_BUILD names one, as tests/run.sh does; else every .c file of runtime/
 * compiled here) and with -DAXRT_NO_SIMD (the portable C firmware runs).
 * A variant is a build and the instruction set forced in it (axrt_set_isa);
 * those this CPU lacks are left out at setup. */
static const char *const builds[2] = {"", "-DAXRT_NO_SIMD"};
static void *runtimes[2];
typedef struct variant {
    int build;
    const char *isa; /* NULL: the build's own choice */
} variant;
static const variant all_variants[] = {{0, "avx512"}, {0, "avx2"}, {0, "portable"}, {1, NULL}};
static variant variants[4];
static int n_variants;
static char workdir[256];

typedef int set_isa_fn(const char *);

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static int setup(void **state)
{
    char root[2048], cmd[8192];
    (void)state;
    snprintf(workdir, sizeof workdir, "%s/axc_fastmath_XXXXXX", env_or("TMPDIR", "/tmp"));
    if (!mkdtemp(workdir) || !realpath(env_or("AXC_ROOT", "."), root))
        return -1;
    for (int v = 0; v < 2; v++) {
        snprintf(cmd, sizeof cmd, "%s/lib/libaxrt.a", env_or("AXC_BUILD", "/nonexistent"));
        if (v == 0 && access(cmd, R_OK) == 0) /* as shipped: the build's own library */
            snprintf(cmd, sizeof cmd,
                     "%s -shared -Wl,--whole-archive %s/lib/libaxrt.a -Wl,--no-whole-archive -o %s/rt0.so -lm -lpthread",
                     env_or("CC", "gcc"), env_or("AXC_BUILD", ""), workdir);
        else
            snprintf(cmd, sizeof cmd,
                     "%s -std=c99 -O2 -fPIC -shared %s -I%s/runtime %s/runtime/*.c -o %s/rt%d.so -lm -lpthread",
                     env_or("CC", "gcc"), builds[v], root, root, workdir, v);
        if (system(cmd) != 0)
            return -1;
        snprintf(cmd, sizeof cmd, "%s/rt%d.so", workdir, v);
        runtimes[v] = dlopen(cmd, RTLD_NOW | RTLD_LOCAL);
        if (!runtimes[v])
            return -1;
    }
    for (size_t i = 0; i < sizeof all_variants / sizeof all_variants[0]; i++) {
        set_isa_fn *set_isa = (set_isa_fn *)dlsym(runtimes[all_variants[i].build], "axrt_set_isa");
        if (!set_isa || set_isa(all_variants[i].isa) == 0)
            variants[n_variants++] = all_variants[i];
    }
    return 0;
}

static int teardown(void **state)
{
    char cmd[512];
    (void)state;
    for (int v = 0; v < 2; v++)
        if (runtimes[v])
            dlclose(runtimes[v]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Function name of variant v, with v's instruction set forced. */
static void *symbol(int v, const char *name)
{
    void *handle = runtimes[variants[v].build];
    set_isa_fn *set_isa = (set_isa_fn *)dlsym(handle, "axrt_set_isa");
    void *f = dlsym(handle, name);
    if (!set_isa || set_isa(variants[v].isa) != 0)
        fail_msg("variant %d: cannot force %s (%s)", v, variants[v].isa, set_isa ? "unsupported" : dlerror());
    if (!f)
        fail_msg("%s missing from the runtime", name);
    return f;
}

/* Whether variant v runs vectorised kernels (AVX2 or AVX-512). */
static int is_simd(int v) { return variants[v].isa && strcmp(variants[v].isa, "portable") != 0; }

/* A variant that runs the portable loops. */
static int portable_variant(void)
{
    int v = 0;
    while (v < n_variants - 1 && is_simd(v)) v++;
    return v;
}

/* Printable name of variant v. */
static const char *variant_name(int v)
{
    return variants[v].isa ? variants[v].isa : "no-simd build";
}

/* Deterministic values in [lo, hi). */
static void fill(float *x, size_t n, float lo, float hi, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = lo + (hi - lo) * (float)((seed >> 8) & 0xffff) / 65536.0f;
    }
}

/* One float ulp at v: 2^-149 for subnormal results and 0. */
static double ulp_of(double v) { return v == 0 ? ldexp(1.0, -149) : fmax(ldexp(1.0, ilogb(v) - 23), ldexp(1.0, -149)); }

static void test_exp_ulp(void **state)
{
    enum { N = 200001 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    (void)state;
    for (int v = 0; v < n_variants; v++) {
        double worst = 0;
        for (size_t i = 0; i < N; i++) x[i] = -87.0f + (float)i * (88.7f + 87.0f) / (N - 1);
        ((unary_fn *)symbol(v, "axrt_exp_f32"))(x, y, N);
        for (size_t i = 0; i < N; i++) {
            const double ref = exp((double)x[i]), err = fabs(y[i] - ref) / ulp_of(ref);
            if (err > worst) worst = err;
        }
        print_message("%s exp: max error %.2f ulp\n", variant_name(v), worst);
        assert_true(worst <= 2.0);
        x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 89.0f, x[4] = -200.0f, x[5] = 0.0f;
        ((unary_fn *)symbol(v, "axrt_exp_f32"))(x, y, 6);
        assert_true(isnan(y[0]) && isinf(y[1]) && y[2] == 0.0f && isinf(y[3]) && y[4] == 0.0f);
        assert_true(y[5] == 1.0f);
    }
    free(x), free(y);
}

/* Softmax's exp (axrt_x86_simd.inc v_exp_softmax), through the table's
 * softmax_block with the running max 0 and scale 1, which then leaves
 * s = exp(s): every float32 x in [-87.33, -2^-26] (the results that are
 * normal floats; every reduced argument r = x - n ln 2 the softmax's x <= 0
 * reaches), against exp in double.  Bound: 2 ulp on AVX2 (measured: below
 * 1); the AVX-512 table's table-driven exp states 1.1 ulp plus 2.8e-9 |x|
 * relative (0.047 |x| ulp), checked as 2 ulp beyond that.  Below that range, results are below 2^-126
 * and at least 0; -0 and x above -2^-26 give 1 or its float predecessor.
 * The portable table's is libm's expf: not tested here. */
static double ulp_fast(double ref)
{
    uint64_t bits, e;
    memcpy(&bits, &ref, sizeof bits);
    e = (bits >> 52 & 0x7ff) - 23;
    bits = e << 52;
    memcpy(&ref, &bits, sizeof ref);
    return ref;
}

static void test_exp_softmax_exhaustive(void **state)
{
    enum { CHUNK = 4096 };
    typedef const axrt_cpu_ops *cpu_in_use_fn(void);
    static float x[CHUNK], s[CHUNK];
    const uint32_t first = 0xb2800000u /* -2^-26 */, normal_end = 0xc2aeac4fu /* -87.33654 */;
    const uint32_t last = 0xc2b00000u /* -88 */;
    (void)state;
    for (int v = 0; v < n_variants; v++) {
        const axrt_cpu_ops *ops;
        const int avx512 = variants[v].isa && strcmp(variants[v].isa, "avx512") == 0;
        double worst = 0, worst_x = 0;
        if (!is_simd(v))
            continue;
        ops = ((cpu_in_use_fn *)symbol(v, "axrt_cpu_in_use"))();
        for (uint32_t at = first; at <= last; at += CHUNK) {
            const uint32_t n = last - at + 1 < CHUNK ? last - at + 1 : CHUNK;
            float max = 0.0f, sum = 0.0f, alpha = 0.0f;
            for (uint32_t i = 0; i < n; i++) {
                const uint32_t bits = at + i;
                memcpy(&x[i], &bits, sizeof bits);
            }
            memcpy(s, x, n * sizeof *s);
            ops->softmax_block(s, 1, n, 1.0f, &max, &sum, &alpha);
            if (alpha != 1.0f || max != 0.0f)
                fail_msg("%s softmax_block: max 0 moved", variant_name(v));
            for (uint32_t i = 0; i < n; i++) {
                const double ref = exp((double)x[i]);
                if (at + i <= normal_end) {
                    const double err = fabs(s[i] - ref) / ulp_fast(ref) - (avx512 ? 0.047 * fabs(x[i]) : 0.0);
                    if (err > worst) worst = err, worst_x = x[i];
                } else if (!(s[i] >= 0.0f && s[i] <= FLT_MIN)) {
                    fail_msg("%s exp(%.9g) = %.9g, not in [0, 2^-126]", variant_name(v), x[i], s[i]);
                }
            }
        }
        print_message("%s softmax exp: max error %.3f ulp (at %.9g)%s\n", variant_name(v), worst, worst_x,
                      avx512 ? " beyond 0.047 |x|" : "");
        assert_true(worst <= 2.0);
        {
            float max = 0.0f, sum = 0.0f, alpha;
            s[0] = -0.0f, s[1] = -1e-30f, s[2] = -0x1p-27f, s[3] = -INFINITY, s[4] = -1000.0f;
            ops->softmax_block(s, 1, 5, 1.0f, &max, &sum, &alpha);
            assert_true(s[0] == 1.0f && s[1] == 1.0f && (s[2] == 1.0f || s[2] == 1.0f - 0x1p-24f));
            assert_true(s[3] == 0.0f && s[4] == 0.0f && sum >= 2.0f && sum <= 3.0f);
            s[0] = -1.0f, s[1] = NAN, max = 0.0f, sum = 0.0f; /* a NaN score: the row's sum NaN */
            ops->softmax_block(s, 1, 2, 1.0f, &max, &sum, &alpha);
            assert_true(isnan(sum));
        }
    }
}

/* softmax_block over 7 rows at once (the SIMD tables take them in groups,
 * the rest one by one) gives each row the bits of that row alone: rows of
 * 37 scores (vectors and a tail), one all -inf, one with a NaN, one whose
 * running max is already above its block's, one whose max grows. */
static void test_softmax_block_rows(void **state)
{
    typedef const axrt_cpu_ops *cpu_in_use_fn(void);
    enum { ROWS = 7, N = 37 };
    static float s[ROWS * N], one[ROWS * N];
    (void)state;
    for (int v = 0; v < n_variants; v++) {
        const axrt_cpu_ops *ops = ((cpu_in_use_fn *)symbol(v, "axrt_cpu_in_use"))();
        float max[ROWS], sum[ROWS], alpha[ROWS], max1[ROWS], sum1[ROWS], alpha1[ROWS];
        for (int i = 0; i < ROWS * N; i++) s[i] = (float)((i * 37) % 101) / 13.0f - 3.0f;
        for (int j = 0; j < N; j++) s[2 * N + j] = -INFINITY;
        s[4 * N + 5] = NAN;
        for (int r = 0; r < ROWS; r++) max[r] = r == 5 ? 50.0f : r == 6 ? 1.0f : -INFINITY, sum[r] = r >= 5 ? 2.0f : 0.0f;
        memcpy(one, s, sizeof s), memcpy(max1, max, sizeof max), memcpy(sum1, sum, sizeof sum);
        ops->softmax_block(s, ROWS, N, 0.7f, max, sum, alpha);
        for (int r = 0; r < ROWS; r++) ops->softmax_block(one + r * N, 1, N, 0.7f, &max1[r], &sum1[r], &alpha1[r]);
        if (memcmp(s, one, sizeof s) || memcmp(max, max1, sizeof max) || memcmp(sum, sum1, sizeof sum) ||
            memcmp(alpha, alpha1, sizeof alpha))
            fail_msg("%s softmax_block: 7 rows at once differ from one at a time", variant_name(v));
        assert_true(alpha[2] == 1.0f && s[2 * N] == 0.0f && sum[2] == 0.0f && isnan(sum[4]));
        assert_true(max[5] == 50.0f && alpha[5] == 1.0f && alpha[6] < 1.0f && alpha[0] == 0.0f);
    }
}

/* The largest relative error of variant v's GELU on 100003 points from lo
   to hi, against 0.5 x erfc(-x / sqrt 2) in double. */
static double gelu_error(int v, float lo, float hi)
{
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    double worst = 0;
    for (size_t i = 0; i < N; i++) x[i] = lo + (float)i * (hi - lo) / (N - 1);
    ((unary_fn *)symbol(v, "axrt_gelu_f32"))(x, y, N);
    for (size_t i = 0; i < N; i++) {
        const double xd = x[i], ref = 0.5 * xd * erfc(-xd / sqrt(2.0));
        if (ref != 0 && fabs(y[i] - ref) / fabs(ref) > worst) worst = fabs(y[i] - ref) / fabs(ref);
    }
    free(x), free(y);
    return worst;
}

/* The SIMD GELU below x = -13, to -1e30: within 1.2e-37 of 0.5 x erfc(-x /
   sqrt 2) and never subnormal (its exp is clamped so that no step is: a
   subnormal costs a microcode assist, axrt_x86_simd.inc's v_gelu). */
static void gelu_far_tail(int v)
{
    enum { N = 4099 };
    float x[N], y[N];
    for (int i = 0; i < N - 1; i++) x[i] = -13.0f - (float)i * 0.05f;
    x[N - 1] = -1e30f;
    ((unary_fn *)symbol(v, "axrt_gelu_f32"))(x, y, N);
    for (int i = 0; i < N; i++) {
        const double ref = 0.5 * (double)x[i] * erfc(-(double)x[i] / sqrt(2.0));
        if (fabs(y[i] - ref) > 1.2e-37 || fpclassify(y[i]) == FP_SUBNORMAL)
            fail_msg("%s: gelu(%g) = %g, expected %g and normal or 0", variant_name(v), x[i], y[i], ref);
    }
}

/* erf and GELU, both variants, against libm in double. */
static void test_erf_gelu(void **state)
{
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    (void)state;
    for (int v = 0; v < n_variants; v++) {
        double worst_erf = 0;
        for (size_t i = 0; i < N; i++) x[i] = -6.0f + (float)i * 12.0f / (N - 1);
        ((unary_fn *)symbol(v, "axrt_erf_f32"))(x, y, N);
        for (size_t i = 0; i < N; i++) {
            const double ref = erf((double)x[i]);
            if (ref != 0 && fabs(y[i] - ref) / fabs(ref) > worst_erf) worst_erf = fabs(y[i] - ref) / fabs(ref);
        }
        const double worst_gelu = gelu_error(v, -5, 10), worst_tail = gelu_error(v, -13, -5);
        print_message("%s: erf max rel %.3g, gelu max rel %.3g, %.3g in [-13, -5]\n",
                      variant_name(v), worst_erf, worst_gelu, worst_tail);
        assert_true(worst_erf <= 3e-7);
        if (is_simd(v)) { /* the portable GELU is libm's 1 + erf, which cancels far left */
            assert_true(worst_gelu <= 1.5e-6 && worst_tail <= 5e-6);
            gelu_far_tail(v);
        }
    }
    free(x), free(y);
}

static double softplus_ref(double x) { return x > 20 ? x : log1p(exp(x)); }
static double mish_ref(double x) { return x * tanh(softplus_ref(x)); }

/* The largest relative error of variant v's function f on n points from lo
   to hi against ref (where |ref| is a normal float), and the largest absolute
   one below; fails on a subnormal result (the SIMD forms clamp so that no
   step is: a microcode assist each). */
static double unary_error(int v, const char *f, double (*ref)(double), float lo, float hi, double *abs_below,
                          float below)
{
    enum { N = 200003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    double worst = 0;
    for (size_t i = 0; i < N; i++) x[i] = lo + (float)i * (hi - lo) / (N - 1);
    for (size_t i = 0; i < N; i += 100) /* 20 below `below` in steps of 0.01, every tenth to 2e6 below */
        x[i] = below - (i % 1000 ? 0.01f * (float)(i / 100) : 10.0f * (float)i);
    ((unary_fn *)symbol(v, f))(x, y, N);
    *abs_below = 0;
    for (size_t i = 0; i < N; i++) {
        const double r = ref(x[i]);
        if (fpclassify(y[i]) == FP_SUBNORMAL && is_simd(v))
            fail_msg("%s %s(%g) = %g: subnormal", variant_name(v), f, x[i], y[i]);
        if (x[i] < below) *abs_below = fmax(*abs_below, fabs(y[i] - r));
        else if (fabs(r) >= FLT_MIN) worst = fmax(worst, fabs(y[i] - r) / fabs(r));
    }
    free(x), free(y);
    return worst;
}

/* torch.nn.SELU's and ELU's (alpha 0.3) negative side in double. */
static double selu_ref(double x)
{
    return (double)1.0507009873554804934f * (x > 0 ? x : (double)1.6732632423543772848f * expm1(x));
}
static double elu_ref(double x) { return x > 0 ? x : (double)0.3f * expm1(x); }

typedef void elu_fn(const float *, float *, size_t, float);

/* ELU with alpha 0.3 on [-120, 10] within 1.5e-7 relative, never
   subnormal (its alpha does not fit unary_error's signature). */
static void check_elu(int v)
{
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (size_t i = 0; i < N; i++) x[i] = -120.0f + (float)i * 130.0f / (N - 1);
    ((elu_fn *)symbol(v, "axrt_elu_f32"))(x, y, N, 0.3f);
    for (size_t i = 0; i < N; i++)
        if (fabs(y[i] - elu_ref(x[i])) > 1.5e-7 * fabs(elu_ref(x[i])) || fpclassify(y[i]) == FP_SUBNORMAL)
            fail_msg("%s elu(%g, 0.3) = %.9g, expected %.9g", variant_name(v), x[i], y[i], elu_ref(x[i]));
    free(x), free(y);
}

/* log within 1e-7 relative on 1 << 20 positive floats spread over every
   binade, subnormals included, and exactly 0 at 1. */
static void check_log(int v)
{
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (size_t i = 0; i < N; i++) {
        const uint32_t bits = (uint32_t)((uint64_t)i * 0x7F800000u / N) + 1;
        memcpy(&x[i], &bits, sizeof bits);
    }
    x[0] = 1.0f;
    ((unary_fn *)symbol(v, "axrt_log_f32"))(x, y, N);
    for (size_t i = 0; i < N; i++)
        if (fabs(y[i] - log(x[i])) > 1e-7 * fabs(log(x[i])))
            fail_msg("%s log(%g) = %.9g, expected %.9g", variant_name(v), x[i], y[i], log(x[i]));
    free(x), free(y);
}

/* Softplus and Mish within 2e-7 and 4e-7 relative above -87 (SIMD: below,
   within 1.7e-38 and 1.5e-36 absolute, never subnormal), PyTorch's
   threshold of 20 included; SELU within 2.5e-7; ELU and log (check_elu,
   check_log); the SIMD hardswish, hardsigmoid and reciprocal the portable
   loop's bits, NaN, infinities, +-3 and +-0 included. */
static void test_more_activations(void **state)
{
    static const float specials[] = {NAN, INFINITY, -INFINITY, 3.0f, -3.0f, -0.0f, 0.0f, 2.9999998f, -2.9999998f};
    enum { N = 4003, S = sizeof specials / sizeof specials[0] };
    float x[N + S], y[N + S], want[N + S];
    (void)state;
    for (int v = 0; v < n_variants; v++) {
        double soft_below, mish_below;
        const double soft = unary_error(v, "axrt_softplus_f32", softplus_ref, -87, 90, &soft_below, -87);
        const double mish = unary_error(v, "axrt_mish_f32", mish_ref, -87, 90, &mish_below, -87);
        print_message("%s: softplus max rel %.3g (below -87 %.3g), mish %.3g (%.3g)\n", variant_name(v), soft,
                      soft_below, mish, mish_below);
        double selu_below; /* below -120: -1.758..., within an ulp */
        const double selu = unary_error(v, "axrt_selu_f32", selu_ref, -120, 10, &selu_below, -120);
        print_message("%s: selu max rel %.3g\n", variant_name(v), selu);
        assert_true(soft <= 2e-7 && mish <= 4e-7 && soft_below <= 1.7e-38 && mish_below <= 1.5e-36);
        assert_true(selu <= 2.5e-7 && selu_below <= 1.2e-7);
        check_elu(v), check_log(v);
        for (int i = 0; i < N; i++) x[i] = -10.0f + 20.0f * (float)i / (N - 1);
        memcpy(x + N, specials, sizeof specials);
        for (int f = 0; f < 3; f++) {
            const char *name = f == 2 ? "axrt_reciprocal_f32" : f ? "axrt_hardsigmoid_f32" : "axrt_hardswish_f32";
            ((unary_fn *)symbol(v, name))(x, y, N + S);
            ((unary_fn *)symbol(portable_variant(), name))(x, want, N + S);
            for (int i = 0; i < N + S; i++)
                if (memcmp(&y[i], &want[i], sizeof y[i]) && !(isnan(y[i]) && isnan(want[i])))
                    fail_msg("%s %s(%g) = %.9g, the portable loop's %.9g", variant_name(v), name, x[i], y[i],
                             want[i]);
        }
    }
}

/* The logistic family in double: sigmoid in the form that cannot overflow. */
typedef double ref_fn(double);
static double sigmoid_ref(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
static double swish_ref(double x) { return x * sigmoid_ref(x); }

/* Largest error of f over x[0, n) in ulp of the reference. */
static double worst_ulp(unary_fn *f, ref_fn *ref, const float *x, float *y, size_t n)
{
    double worst = 0;
    f(x, y, n);
    for (size_t i = 0; i < n; i++) {
        const double r = ref(x[i]), err = fabs(y[i] - r) / ulp_of(r);
        worst = err > worst ? err : worst;
    }
    return worst;
}

/* The worst error of f over every float32 in [-4, -3) (2^22 of them), the
 * band where the logistic family's worst cases lie (a grid misses them:
 * AVX2's swish reads 2.89 ulp on test_tanh_sigmoid_swish's, 3.87 here). */
static double every_float_band_ulp(unary_fn *f, ref_fn *ref, float *x, float *y, size_t chunk)
{
    double worst = 0;
    uint32_t bits = 0xC0400000u; /* -3.0f; -4.0f is 0xC0800000 */
    while (bits < 0xC0800000u) {
        size_t n = 0;
        for (; n < chunk && bits < 0xC0800000u; n++, bits++) memcpy(&x[n], &bits, sizeof bits);
        const double w = worst_ulp(f, ref, x, y, n);
        worst = w > worst ? w : worst;
    }
    return worst;
}

/* x: n points from -104 to -87, where exp(x) is subnormal or 0. */
static void fill_tail_grid(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = -104.0f + (float)i * 17.0f / (float)(n - 1);
}

/* The largest |swish(x) - x sigmoid(x)| of f over fill_tail_grid's points. */
static double worst_swish_tail(unary_fn *f, float *x, float *y, size_t n)
{
    double worst = 0;
    fill_tail_grid(x, n);
    f(x, y, n);
    for (size_t i = 0; i < n; i++) {
        const double err = fabs(y[i] - swish_ref(x[i]));
        worst = err > worst ? err : worst;
    }
    return worst;
}

/* tanh, sigmoid and swish, both variants: a linear grid over [-87, 87]
 * (normal results) and magnitudes in [2^-149, 2^6) of both signs (tanh(x) = x
 * and swish(x) = x/2 keep relative accuracy for tiny x); sigmoid and swish
 * over every float in [-4, -3); the SIMD sigmoid also over [-104, -87],
 * where its results are subnormal, and swish there within 3e-37 absolute. */
static void test_tanh_sigmoid_swish(void **state)
{
    enum { LINEAR = 200003, LOG = 2 * 155 * 64 };
    static const char *const names[3] = {"axrt_tanh_f32", "axrt_sigmoid_f32", "axrt_swish_f32"};
    static ref_fn *const refs[3] = {tanh, sigmoid_ref, swish_ref};
    static const double bound_ulp[3] = {2.5, 3.0, 3.5};
    float *x = malloc(LINEAR * sizeof *x), *y = malloc(LINEAR * sizeof *y);
    (void)state;
    for (int v = 0; v < n_variants; v++)
        for (int f = 0; f < 3; f++) {
            unary_fn *fn = (unary_fn *)symbol(v, names[f]);
            const double bound = bound_ulp[f];
            double linear, tiny, tail = 0, swish_tail = 0;
            const double band = f ? every_float_band_ulp(fn, refs[f], x, y, LINEAR) : 0;
            for (size_t i = 0; i < LINEAR; i++) x[i] = -87.0f + (float)i * 174.0f / (LINEAR - 1);
            linear = worst_ulp(fn, refs[f], x, y, LINEAR);
            for (size_t i = 0; i < LOG; i++)
                x[i] = (i % 2 ? -1.0f : 1.0f) * ldexpf(1.0f + (float)(i / 2 % 64) / 64.0f,
                                                         (int)(i / 128) - 149);
            tiny = worst_ulp(fn, refs[f], x, y, LOG);
            if (is_simd(v) && f == 1) {
                fill_tail_grid(x, LINEAR);
                tail = worst_ulp(fn, refs[f], x, y, LINEAR);
            }
            if (f == 2) /* swish below -87, absolute (AVX2's form, axrt_x86_logistic.inc) */
                swish_tail = worst_swish_tail(fn, x, y, LINEAR);
            print_message("%s %s: max %.2f ulp on [-87, 87], %.2f on tiny |x|, %.2f in the tail, %.2f on every "
                          "float in [-4, -3); swish below -87 within %.2g\n",
                          variant_name(v), names[f], linear, tiny, tail, band, swish_tail);
            assert_true(linear <= bound && tiny <= bound && tail <= bound && band <= bound && swish_tail <= 3e-37);
        }
    free(x), free(y);
}

/* Infinities, NaN, signed zeros, a subnormal and huge arguments, both
 * variants, as PyTorch gives them (swish(-inf) = -inf / (1 + inf) is NaN). */
static void test_tanh_sigmoid_swish_special(void **state)
{
    enum { N = 9 };
    static const float x[N] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-40f, 1e30f, -1e30f, -FLT_MAX};
    static const float tanh_ref[N] = {1, -1, NAN, 0.0f, -0.0f, 1e-40f, 1, -1, -1};
    static const float sigmoid_ref_values[N] = {1, 0, NAN, 0.5f, 0.5f, 0.5f, 1, 0, 0};
    static const float swish_ref_values[N] = {INFINITY, NAN, NAN, 0.0f, -0.0f, 5e-41f, 1e30f, -0.0f, -0.0f};
    static const char *const names[3] = {"axrt_tanh_f32", "axrt_sigmoid_f32", "axrt_swish_f32"};
    const float *const refs[3] = {tanh_ref, sigmoid_ref_values, swish_ref_values};
    float y[N];
    (void)state;
    for (int v = 0; v < n_variants; v++)
        for (int f = 0; f < 3; f++) {
            ((unary_fn *)symbol(v, names[f]))(x, y, N);
            for (int i = 0; i < N; i++)
                if (isnan(refs[f][i]) ? !isnan(y[i])
                                      : y[i] != refs[f][i] || signbit(y[i]) != signbit(refs[f][i]))
                    fail_msg("%s variant %s: f(%.9g) = %.9g, expected %.9g", names[f], variant_name(v), x[i], y[i],
                             refs[f][i]);
        }
}

static double max_abs(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

static void assert_close(const float *got, const double *ref, size_t n, double rel)
{
    const double scale = max_abs(ref, n);
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - ref[i]) > rel * scale)
            fail_msg("element %zu: %.9g, reference %.9g", i, got[i], ref[i]);
}

/* Odd sizes: partial row tiles (AVX2's 8 and 14 rows end in two tiles of
 * 4, axrt_fast.inc row_tile_height), a narrow last panel, several K blocks. */
static void test_dense_packed(void **state)
{
    enum { ROWS = 14, IN = 600, OUT = 37 };
    static const size_t row_counts[] = {1, 7, 8, ROWS};
    static float x[ROWS * IN], w[OUT * IN], packed[OUT * IN], bias[OUT], y[ROWS * OUT];
    static double ref[ROWS * OUT];
    (void)state;
    fill(x, ROWS * IN, -1, 1, 1), fill(w, OUT * IN, -1, 1, 2), fill(bias, OUT, -1, 1, 3);
    for (int r = 0; r < ROWS; r++)
        for (int o = 0; o < OUT; o++) {
            double acc = bias[o];
            for (int i = 0; i < IN; i++) acc += (double)x[r * IN + i] * w[o * IN + i];
            ref[r * OUT + o] = acc;
        }
    for (int v = 0; v < n_variants; v++)
        for (size_t c = 0; c < sizeof row_counts / sizeof row_counts[0]; c++) {
            const size_t rows = row_counts[c];
            ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w, packed, IN, OUT);
            ((dense_fn *)symbol(v, "axrt_dense_packed_f32"))(x, packed, bias, y, rows, IN, OUT);
            assert_close(y, ref, rows * OUT, 1e-5);
        }
}

/* conv2d in double with its epilogue (below). */
static void conv_ref(const float *x, const float *w, const float *bias, const float *residual,
                     axrt_act act, double *y, const axrt_conv2d_params *p);

/* 3x3 stride 2 with padding everywhere, a stem-like 7x7 stride 2 on 3
 * channels whose interior tiles take a whole tap row per segment, and a
 * 7x7 image with a weight over 1 MiB (ResNet's last layers): tiles of 7
 * rows (AVX-512), four column blocks, each prefetched while the one
 * before runs. */
static void test_conv_packed(void **state)
{
    const axrt_conv2d_params shapes[3] = {{2, 9, 7, 5, 5, 4, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1},
                                          {1, 37, 41, 3, 19, 21, 36, 7, 7, 2, 2, 1, 1, 3, 3, 1},
                                          {1, 7, 7, 256, 7, 7, 160, 3, 3, 1, 1, 1, 1, 1, 1, 1}};
    enum { X = 7 * 7 * 256, W = 160 * 256 * 9, Y = 19 * 21 * 36, OC = 160 };
    static float x[X], w[W], packed[W], bias[OC], y[Y], no_residual[Y];
    static double ref[Y];
    (void)state;
    for (int sh = 0; sh < 3; sh++) {
        const axrt_conv2d_params *p = &shapes[sh];
        fill(x, X, -1, 1, 4), fill(w, W, -1, 1, 5), fill(bias, OC, -1, 1, 6);
        conv_ref(x, w, bias, no_residual, AXRT_ACT_NONE, ref, p);
        for (int v = 0; v < n_variants; v++) {
            ((pack_conv_fn *)symbol(v, "axrt_pack_conv2d_f32"))(w, packed, p);
            ((conv_fn *)symbol(v, "axrt_conv2d_packed_f32"))(x, packed, bias, y, p);
            assert_close(y, ref, (size_t)p->n * p->oh * p->ow * p->oc, 1e-5);
        }
    }
}

/* The row-major GEMM's two loop orders (row tiles outermost while the B
 * block fits in L2, column panels outermost beyond) and its tiles: AVX-512's
 * two-vector-wide one full, narrow (17..31 columns) and on 4 rows or fewer,
 * the one-panel tile for a last 16 columns or fewer. */
static void test_matmul_shapes(void **state)
{
    static const int shapes[][3] = {{12, 40, 70}, {5, 33, 48}, {9, 7, 17}, {20, 260, 200}, {3, 300, 150}};
    enum { MAX = 64000 };
    static float a[MAX], b[MAX], y[MAX];
    static double ref[MAX];
    (void)state;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int M = shapes[k][0], K = shapes[k][1], N = shapes[k][2];
        fill(a, (size_t)M * K, -1, 1, 20 + (int)k), fill(b, (size_t)K * N, -1, 1, 30 + (int)k);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int p = 0; p < K; p++) acc += (double)a[i * K + p] * b[p * N + j];
                ref[i * N + j] = acc;
            }
        for (int v = 0; v < n_variants; v++) {
            ((matmul_fn *)symbol(v, "axrt_matmul_f32"))(a, NULL, b, NULL, y, NULL, 0, M, K, N);
            assert_close(y, ref, (size_t)M * N, 1e-5);
        }
    }
}

static void test_matmul_softmax_layernorm(void **state)
{
    enum { M = 13, K = 300, N = 21 };
    static float a[M * K], b[K * N], y[M * N], g[N], beta[N], z[M * N];
    static double ref[M * N];
    (void)state;
    fill(a, M * K, -1, 1, 7), fill(b, K * N, -1, 1, 8), fill(g, N, 0.5f, 1.5f, 9);
    fill(beta, N, -1, 1, 10), fill(z, M * N, -3, 5, 11);
    for (int v = 0; v < n_variants; v++) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int p = 0; p < K; p++) acc += (double)a[i * K + p] * b[p * N + j];
                ref[i * N + j] = acc;
            }
        ((matmul_fn *)symbol(v, "axrt_matmul_f32"))(a, NULL, b, NULL, y, NULL, 0, M, K, N);
        assert_close(y, ref, M * N, 1e-5);
        for (int i = 0; i < M; i++) { /* softmax of the product's rows, in place */
            double max = ref[i * N], sum = 0;
            for (int j = 0; j < N; j++) max = y[i * N + j] > max ? y[i * N + j] : max;
            for (int j = 0; j < N; j++) sum += exp(y[i * N + j] - max);
            for (int j = 0; j < N; j++) ref[i * N + j] = exp(y[i * N + j] - max) / sum;
        }
        ((softmax_fn *)symbol(v, "axrt_softmax_f32"))(y, y, M, N, 1);
        for (int i = 0; i < M * N; i++) assert_true(fabs(y[i] - ref[i]) <= 1e-6 * ref[i] + 1e-12);
        for (int i = 0; i < M; i++) {
            double mean = 0, var = 0;
            for (int j = 0; j < N; j++) mean += z[i * N + j] / (double)N;
            for (int j = 0; j < N; j++) var += (z[i * N + j] - mean) * (z[i * N + j] - mean) / N;
            for (int j = 0; j < N; j++)
                ref[i * N + j] = (z[i * N + j] - mean) / sqrt(var + 1e-5) * g[j] + beta[j];
        }
        ((layernorm_fn *)symbol(v, "axrt_layernorm_f32"))(z, g, beta, y, M, N, 1e-5f);
        assert_close(y, ref, M * N, 1e-5);
    }
}

/* LayerNorm over row counts that exercise every way rows are grouped (the
 * SIMD kernels normalise one group of rows while gathering the next one's
 * statistics, then end with single rows), widths with and without a tail
 * and below one vector, in place and not, rows with a common offset 10^4
 * times their spread (E[x^2] - E[x]^2 in float would lose the variance
 * whole): within 2e-6 of the largest output against double, plus what
 * summing a far-off mean in float may leave (d 2^-24 |mean| / sigma: the
 * portable kernel's plain sum), and every row bit for bit what a call on
 * that row alone gives. */
static void test_layernorm_groups(void **state)
{
    static const int widths[] = {5, 16, 21, 64, 200};
    enum { MAXR = 9, MAXD = 200 };
    static float x[MAXR * MAXD], x2[MAXR * MAXD], y[MAXR * MAXD], one[MAXD], g[MAXD], b[MAXD];
    static double ref[MAXR * MAXD];
    (void)state;
    fill(g, MAXD, 0.5f, 1.5f, 71), fill(b, MAXD, -1, 1, 72);
    for (int v = 0; v < n_variants; v++)
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
            for (int rows = 1; rows <= MAXR; rows++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    const int d = widths[wi];
                    double top = 0, err = 0, slack[MAXR];
                    fill(x, (size_t)rows * d, -3, 5, 73 + (unsigned)(rows * d));
                    for (int i = 0; i < rows * d; i += 3 * d) /* every third row far off 0 */
                        for (int j = 0; j < d; j++) x[i + j] = 1e4f + x[i + j];
                    for (int r = 0; r < rows; r++) {
                        double mean = 0, var = 0;
                        for (int j = 0; j < d; j++) mean += x[r * d + j] / (double)d;
                        for (int j = 0; j < d; j++) var += (x[r * d + j] - mean) * (x[r * d + j] - mean) / d;
                        slack[r] = ldexp(fabs(mean), -24) * (d + 1) / sqrt(var + 1e-5);
                        for (int j = 0; j < d; j++) {
                            ref[r * d + j] = (x[r * d + j] - mean) / sqrt(var + 1e-5) * g[j] + b[j];
                            top = fmax(top, fabs(ref[r * d + j]));
                        }
                    }
                    memcpy(x2, x, sizeof x);
                    float *out = inplace ? x2 : y;
                    ((layernorm_fn *)symbol(v, "axrt_layernorm_f32"))(x2, g, b, out, (size_t)rows, (size_t)d, 1e-5f);
                    for (int i = 0; i < rows * d; i++) err = fmax(err, fabs(out[i] - ref[i]) - slack[i / d]);
                    if (!(err <= 2e-6 * top))
                        fail_msg("%s: layernorm %d x %d%s: error %g of %g", variant_name(v), rows, d,
                                 inplace ? " in place" : "", err, top);
                    for (int r = 0; r < rows; r++) {
                        ((layernorm_fn *)symbol(v, "axrt_layernorm_f32"))(x + r * d, g, b, one, 1, (size_t)d, 1e-5f);
                        if (memcmp(one, out + r * d, (size_t)d * sizeof *one) != 0)
                            fail_msg("%s: layernorm %d x %d: row %d differs from that row alone", variant_name(v),
                                     rows, d, r);
                    }
                }
}

typedef void dense_ep_fn(const float *, const float *, const float *, const float *, axrt_act,
                         float *, size_t, size_t, size_t);
typedef void conv_ep_fn(const float *, const float *, const float *, const float *, axrt_act,
                        float *, const axrt_conv2d_params *);

/* The epilogue in double: act(v + residual). */
#include "act_ref.h"

/* conv2d in double over NHWC, weight [oc, c/groups, kh, kw], then the epilogue. */
static void conv_ref(const float *x, const float *w, const float *bias, const float *residual,
                     axrt_act act, double *y, const axrt_conv2d_params *p)
{
    const int cg = p->c / p->groups, og = p->oc / p->groups;
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++)
                for (int o = 0; o < p->oc; o++) {
                    const size_t at = (((size_t)n * p->oh + oy) * p->ow + ox) * p->oc + o;
                    double acc = bias[o];
                    for (int ky = 0; ky < p->kh; ky++)
                        for (int kx = 0; kx < p->kw; kx++) {
                            const int iy = oy * p->stride_h - p->pad_top + ky * p->dilation_h;
                            const int ix = ox * p->stride_w - p->pad_left + kx * p->dilation_w;
                            if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
                            for (int c = 0; c < cg; c++)
                                acc += (double)x[(((size_t)n * p->h + iy) * p->w + ix) * p->c +
                                                 (size_t)(o / og) * cg + c] *
                                       w[(((size_t)o * cg + c) * p->kh + ky) * p->kw + kx];
                        }
                    y[at] = act_ref(acc + residual[at], act);
                }
}

/* Row counts 1..7 (the 1-, 2-, 4- and 6-row tiles) and 59 (many tiles and
 * a 5-row tail), a narrow panel, three K blocks; residual and each
 * activation applied in the epilogue. */
static void test_dense_epilogue(void **state)
{
    enum { ROWS = 59, IN = 600, OUT = 37 };
    static float x[ROWS * IN], w[OUT * IN], packed[OUT * IN], bias[OUT], res[ROWS * OUT];
    static float y[ROWS * OUT];
    static double ref[ROWS * OUT];
    static const size_t row_counts[] = {1, 2, 3, 4, 5, 6, 7, ROWS};
    (void)state;
    fill(x, ROWS * IN, -1, 1, 21), fill(w, OUT * IN, -0.2f, 0.2f, 22), fill(bias, OUT, -1, 1, 23);
    fill(res, ROWS * OUT, -4, 4, 24);
    for (int v = 0; v < n_variants; v++) {
        ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w, packed, IN, OUT);
        for (int act = AXRT_ACT_NONE; act <= AXRT_ACT_HARDSWISH; act++) {
            for (int r = 0; r < ROWS; r++)
                for (int o = 0; o < OUT; o++) {
                    double acc = bias[o];
                    for (int i = 0; i < IN; i++) acc += (double)x[r * IN + i] * w[o * IN + i];
                    ref[r * OUT + o] = act_ref(acc + res[r * OUT + o], (axrt_act)act);
                }
            for (size_t i = 0; i < sizeof row_counts / sizeof row_counts[0]; i++) {
                ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(
                    x, packed, bias, res, (axrt_act)act, y, row_counts[i], IN, OUT);
                assert_close(y, ref, row_counts[i] * OUT, 1e-5);
            }
        }
    }
}

/* One row (a matrix-vector product, whose full panels the vectorised
 * tables take two or three at a time, in turn from the first panel on one
 * call and from the last on the next): 5 full panels and a narrow one, an
 * odd reduction length, with and without bias, residual and GELU; each
 * call twice, both walks within 1e-5 of the double reference and bit for
 * bit the same. */
static void assert_same_bits(const float *got, const float *want, size_t n, const char *what, int v);
static void test_dense_one_row(void **state)
{
    enum { IN = 601, OUT = 5 * 16 + 3 };
    static float x[IN], w[OUT * IN], packed[OUT * IN], bias[OUT], res[OUT], y[OUT], again[OUT];
    static double ref[OUT];
    (void)state;
    fill(x, IN, -1, 1, 25), fill(w, OUT * IN, -0.2f, 0.2f, 26), fill(bias, OUT, -1, 1, 27);
    fill(res, OUT, -4, 4, 28);
    for (int v = 0; v < n_variants; v++) {
        ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w, packed, IN, OUT);
        for (int with = 0; with < 2; with++) {
            const axrt_act act = with ? AXRT_ACT_GELU : AXRT_ACT_NONE;
            for (int o = 0; o < OUT; o++) {
                double acc = with ? bias[o] + res[o] : 0;
                for (int i = 0; i < IN; i++) acc += (double)x[i] * w[o * IN + i];
                ref[o] = act_ref(acc, act);
            }
            ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(x, packed, with ? bias : NULL,
                                                                   with ? res : NULL, act, y, 1, IN, OUT);
            assert_close(y, ref, OUT, 1e-5);
            ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(x, packed, with ? bias : NULL,
                                                                   with ? res : NULL, act, again, 1, IN, OUT);
            assert_close(again, ref, OUT, 1e-5);
            assert_same_bits(again, y, OUT, "one row, the other walk", v);
        }
    }
}

/* The last full panels and the narrow one after them, one tile call where
 * the table has tile_tail (AVX-512): the results of layers of 24, 40 and
 * 88 outputs (1, 2 and 5 full panels) bit for bit those of the same weight
 * rows as the first outputs of a 96-output layer (full panels only), and
 * within 1e-5 of the double reference; each activation, with residual,
 * row counts from one tile to several. */
static void test_dense_tail_panel(void **state)
{
    enum { ROWS = 21, IN = 70, WIDE = 96 };
    static const size_t row_counts[] = {2, 8, ROWS}, outs[] = {24, 40, 88};
    static float x[ROWS * IN], w[WIDE * IN], packed[WIDE * IN], bias[WIDE], res[ROWS * WIDE];
    static float res_n[ROWS * WIDE], y_n[ROWS * WIDE], y_wide[ROWS * WIDE], first[ROWS * WIDE];
    static double ref[ROWS * WIDE];
    (void)state;
    fill(x, ROWS * IN, -1, 1, 91), fill(w, WIDE * IN, -0.3f, 0.3f, 92), fill(bias, WIDE, -1, 1, 93);
    fill(res, ROWS * WIDE, -2, 2, 94);
    for (int v = 0; v < n_variants; v++)
        for (int act = AXRT_ACT_NONE; act <= AXRT_ACT_HARDSWISH; act++)
            for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++)
                for (size_t c = 0; c < sizeof row_counts / sizeof row_counts[0]; c++) {
                    const size_t rows = row_counts[c], out = outs[o];
                    for (size_t r = 0; r < rows; r++) {
                        memcpy(res_n + r * out, res + r * WIDE, out * sizeof *res);
                        for (size_t j = 0; j < out; j++) {
                            double acc = bias[j] + res_n[r * out + j];
                            for (int i = 0; i < IN; i++) acc += (double)x[r * IN + i] * w[j * IN + i];
                            ref[r * out + j] = act_ref(acc, (axrt_act)act);
                        }
                    }
                    ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w, packed, IN, out);
                    ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(x, packed, bias, res_n, (axrt_act)act,
                                                                           y_n, rows, IN, out);
                    assert_close(y_n, ref, rows * out, 1e-5);
                    ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w, packed, IN, WIDE);
                    ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(x, packed, bias, res, (axrt_act)act,
                                                                           y_wide, rows, IN, WIDE);
                    for (size_t r = 0; r < rows; r++) memcpy(first + r * out, y_wide + r * WIDE, out * sizeof *y_wide);
                    assert_same_bits(y_n, first, rows * out, "narrow-ended layer against a wider one's first", v);
                }
}

/* 7x7 taps (more than one tile call accumulates in registers) over 600
 * channels (more than one channel chunk: 512 a chunk), stride 2, dilation
 * 2, residual and ReLU6 in the epilogue. */
static void test_conv_epilogue(void **state)
{
    const axrt_conv2d_params p = {1, 15, 13, 600, 5, 4, 20, 7, 7, 2, 2, 2, 2, 4, 3, 1};
    enum { X = 15 * 13 * 600, W = 20 * 600 * 49, Y = 5 * 4 * 20 };
    static float x[X], w[W], packed[W], bias[20], res[Y], y[Y];
    static double ref[Y];
    (void)state;
    fill(x, X, -1, 1, 31), fill(w, W, -0.05f, 0.05f, 32), fill(bias, 20, -1, 1, 33);
    fill(res, Y, -3, 3, 34);
    conv_ref(x, w, bias, res, AXRT_ACT_RELU6, ref, &p);
    for (int v = 0; v < n_variants; v++) {
        ((pack_conv_fn *)symbol(v, "axrt_pack_conv2d_f32"))(w, packed, &p);
        ((conv_ep_fn *)symbol(v, "axrt_conv2d_packed_ep_f32"))(x, packed, bias, res,
                                                               AXRT_ACT_RELU6, y, &p);
        assert_close(y, ref, Y, 1e-5);
    }
}

/* Depthwise: 19 channels (a masked tail of lanes), stride 2, dilation 2,
 * asymmetric padding, residual and ReLU. */
static void test_depthwise(void **state)
{
    const axrt_conv2d_params p = {2, 11, 9, 19, 5, 4, 19, 3, 3, 2, 2, 2, 2, 1, 0, 19};
    enum { X = 2 * 11 * 9 * 19, W = 19 * 9, Y = 2 * 5 * 4 * 19 };
    static float x[X], w[W], packed[W], bias[19], res[Y], y[Y];
    static double ref[Y];
    (void)state;
    fill(x, X, -1, 1, 41), fill(w, W, -1, 1, 42), fill(bias, 19, -1, 1, 43), fill(res, Y, -1, 1, 44);
    conv_ref(x, w, bias, res, AXRT_ACT_RELU, ref, &p);
    for (int v = 0; v < n_variants; v++) {
        ((pack_conv_fn *)symbol(v, "axrt_pack_depthwise_f32"))(w, packed, &p);
        ((conv_ep_fn *)symbol(v, "axrt_conv2d_depthwise_f32"))(x, packed, bias, res,
                                                               AXRT_ACT_RELU, y, &p);
        assert_close(y, ref, Y, 1e-5);
    }
}

/* Depthwise shapes through each row kernel: 3x3 and 5x5 (the unrolled
 * ones, interior and edge pixels, 40 and 48 channels; a 14-pixel row, one
 * block on AVX-512), a 3x7 dilated one
 * and a 17x1 one taller than AXRT_DWCONV_MAX_KH (the generic loops); with
 * stride 1 and the output the input's size, the in-place kernel too. */
typedef void dw_inplace_fn(float *, const float *, int, const float *, axrt_act, float *,
                           const axrt_conv2d_params *);
static void test_depthwise_shapes(void **state)
{
    static const axrt_conv2d_params shapes[] = {
        {1, 9, 20, 40, 9, 20, 40, 3, 3, 1, 1, 1, 1, 1, 1, 40},
        {1, 5, 14, 40, 5, 14, 40, 3, 3, 1, 1, 1, 1, 1, 1, 40},
        {2, 12, 11, 48, 6, 6, 48, 5, 5, 2, 2, 1, 1, 2, 2, 48},
        {1, 7, 30, 24, 7, 30, 24, 3, 7, 1, 1, 1, 2, 1, 6, 24},
        {1, 20, 6, 16, 4, 6, 16, 17, 1, 1, 1, 1, 1, 0, 0, 16},
    };
    enum { MAX = 2 * 12 * 30 * 48, MAX_W = 48 * 25 };
    static float x[MAX], xy[MAX], w[MAX_W], packed[MAX_W], bias[48], zero[MAX], y[MAX],
        ring[MAX];
    static double ref[MAX];
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const axrt_conv2d_params *p = &shapes[s];
        const size_t nx = (size_t)p->n * p->h * p->w * p->c, ny = (size_t)p->n * p->oh * p->ow * p->c;
        const int inplace = p->stride_h == 1 && p->stride_w == 1 && p->oh == p->h &&
                            p->ow == p->w && p->kh <= AXRT_DWCONV_MAX_KH;
        fill(x, nx, -1, 1, 45 + (unsigned)s), fill(w, (size_t)p->c * p->kh * p->kw, -1, 1, 46);
        fill(bias, (size_t)p->c, -1, 1, 47);
        conv_ref(x, w, bias, zero, AXRT_ACT_RELU6, ref, p);
        for (int v = 0; v < n_variants; v++) {
            ((pack_conv_fn *)symbol(v, "axrt_pack_depthwise_f32"))(w, packed, p);
            ((conv_ep_fn *)symbol(v, "axrt_conv2d_depthwise_f32"))(x, packed, bias, NULL,
                                                                   AXRT_ACT_RELU6, y, p);
            assert_close(y, ref, ny, 1e-5);
            if (!inplace)
                continue;
            memcpy(xy, x, nx * sizeof *x);
            ((dw_inplace_fn *)symbol(v, "axrt_dwconv_inplace_f32"))(xy, packed, 1, bias,
                                                                    AXRT_ACT_RELU6, ring, p);
            assert_close(xy, ref, ny, 1e-5);
        }
    }
}

#include "test_fastmath_blocks.inc"
#include "test_fastmath_softmax.inc"

/* Attention without the scores (axrt_mha_flash_f32, runtime/axrt_flash.inc)
 * against the kernel that keeps them (axrt_mha_packed_masked_f32) in the
 * same variant: several blocks of query rows (24) and of keys (128),
 * lengths no multiple of either; self-attention (the fused projection),
 * causal, a key mask that hides the first key blocks of one batch element
 * entirely (the online softmax's nothing-yet rows), and cross-attention
 * with the weights as stored (packed 0).  Within 1e-5 of the output's
 * largest magnitude; NaN exactly where the reference has it. */
typedef void mha_flash_fn(const float *, const float *, const float *, const float *, const float *,
                          const float *, const float *, const float *, float *, float *,
                          const axrt_mha_params *, int);
typedef void mha_plain_fn(const float *, const float *, const float *, const float *, const float *,
                          const float *, const float *, const float *, float *, float *,
                          const axrt_mha_params *);

static void flash_case(int v, const axrt_mha_params *p, int self, int masked, int packed)
{
    const size_t d = (size_t)p->d, nq = (size_t)(p->n * p->lq) * d, nk = (size_t)(p->n * p->lk) * d;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *vv = malloc(nk * sizeof *vv);
    float *w = malloc(4 * d * d * sizeof *w), *pw = malloc(4 * d * d * sizeof *pw), *b = malloc(4 * d * sizeof *b);
    float *mask = malloc((size_t)(p->n * p->lk) * sizeof *mask), *want = malloc(nq * sizeof *want);
    float *got = malloc(nq * sizeof *got);
    float *scratch = malloc(axrt_mha_scratch_elems(p) * sizeof *scratch);
    double top = 0, worst = 0;
    fill(q, nq, -2, 2, 11), fill(k, nk, -2, 2, 12), fill(vv, nk, -1, 1, 13);
    fill(w, 4 * d * d, -0.3f, 0.3f, 14), fill(b, 4 * d, -0.5f, 0.5f, 15);
    for (int j = 0; j < p->n * p->lk; j++) /* batch 1: its first 2/3 of keys padding */
        mask[j] = j % 5 == 2 || (j >= p->lk && j - p->lk < 2 * p->lk / 3) ? 0.0f : 1.0f;
    for (size_t part = 0; part < 4; part++)
        ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w + part * d * d, pw + part * d * d, d, d);
    const float *kk = self ? q : k, *vx = self ? q : vv;
    ((mha_plain_fn *)symbol(v, "axrt_mha_packed_masked_f32"))(q, kk, vx, masked ? mask : NULL, pw, b, pw + 3 * d * d,
                                                              b + 3 * d, want, scratch, p);
    if (axrt_mha_flash_scratch_elems(p) > axrt_mha_scratch_elems(p)) fail_msg("flash scratch above the scores'");
    for (size_t i = 0; i < axrt_mha_scratch_elems(p); i++) scratch[i] = NAN; /* nothing read before written */
    ((mha_flash_fn *)symbol(v, "axrt_mha_flash_f32"))(q, kk, vx, masked ? mask : NULL, packed ? pw : w, b,
                                                      packed ? pw + 3 * d * d : w + 3 * d * d, b + 3 * d, got,
                                                      scratch, p, packed);
    for (size_t i = 0; i < nq; i++)
        if (!isnan(want[i]) && fabs(want[i]) > top) top = fabs(want[i]);
    for (size_t i = 0; i < nq; i++) {
        if (isnan(want[i]) != isnan(got[i])) fail_msg("%s flash: NaN at %zu differs", variant_name(v), i);
        if (!isnan(want[i]) && fabs(got[i] - want[i]) > worst) worst = fabs(got[i] - want[i]);
    }
    print_message("%s flash lq %d lk %d self %d masked %d causal %d packed %d: max err %.3g of %.3g\n",
                  variant_name(v), p->lq, p->lk, self, masked, p->causal, packed, worst, top);
    assert_true(top > 0 && worst <= 1e-5 * top);
    free(q), free(k), free(vv), free(w), free(pw), free(b), free(mask), free(want), free(got), free(scratch);
}

static void test_mha_flash(void **state)
{
    const axrt_mha_params self = {2, 301, 301, 64, 4, 0}, causal = {2, 301, 301, 64, 4, 1};
    const axrt_mha_params cross = {2, 50, 333, 48, 3, 0}, short_keys = {1, 30, 9, 32, 2, 0};
    (void)state;
    for (int v = 0; v < n_variants; v++) {
        flash_case(v, &self, 1, 0, 1);
        flash_case(v, &causal, 1, 1, 1);
        flash_case(v, &cross, 0, 1, 1);
        flash_case(v, &cross, 0, 0, 0);
        flash_case(v, &short_keys, 0, 0, 1);
    }
}

/* ---- NaN and infinities, as PyTorch gives them -------------------------------- */

static double exp_ref(double x) { return exp(x); }
static double erf_ref(double x) { return erf(x); }
static double gelu_ref(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double sigmoid_plain(double x) { return 1 / (1 + exp(-x)); }
static double swish_plain(double x) { return x / (1 + exp(-x)); }
static double relu_ref(double x) { return x < 0 ? 0 : x; }
static double relu6_ref(double x) { return x < 0 ? 0 : x > 6 ? 6 : x; }

/* Whether got is ref: both NaN, or equal within rel (exactly, for infinities). */
static int same_special(float got, double ref, double rel)
{
    if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
    if (isinf(ref) || isinf(got)) return got == ref;
    return fabs(got - ref) <= rel * fabs(ref) + 1e-30;
}

/* Every vectorised unary function, both variants, on NaN (both signs), +-inf
 * and ordinary values, at every lane of a full vector and of a masked tail
 * (n = 19: two full 8-lane vectors, a 3-lane tail; one 16-lane and a tail). */
static void test_unary_special_values(void **state)
{
    enum { N = 19 };
    static const char *const names[] = {"axrt_exp_f32", "axrt_erf_f32", "axrt_gelu_f32",
                                        "axrt_tanh_f32", "axrt_sigmoid_f32", "axrt_swish_f32",
                                        "axrt_relu_f32", "axrt_relu6_f32", "axrt_softplus_f32",
                                        "axrt_mish_f32", "axrt_log_f32"};
    static ref_fn *const refs[] = {exp_ref, erf_ref, gelu_ref, tanh, sigmoid_plain,
                                   swish_plain, relu_ref, relu6_ref, softplus_ref, mish_ref, log};
    const float specials[5] = {NAN, -NAN, INFINITY, -INFINITY, 0.75f};
    float x[N], y[N];
    (void)state;
    for (int v = 0; v < n_variants; v++)
        for (size_t f = 0; f < sizeof names / sizeof names[0]; f++)
            for (int shift = 0; shift < 5; shift++) {
                for (int i = 0; i < N; i++) x[i] = specials[(i + shift) % 5];
                ((unary_fn *)symbol(v, names[f]))(x, y, N);
                for (int i = 0; i < N; i++)
                    if (!same_special(y[i], refs[f](x[i]), 1e-5))
                        fail_msg("%s variant %d: f(%g) = %.9g at %d, expected %.9g", names[f], v,
                                 x[i], y[i], i, refs[f](x[i]));
            }
}

/* Softmax rows (n = 21: vectors and a tail): -inf logits and logits more
 * than 88 below the max give 0 (or their subnormal exp), a NaN or +inf
 * logit makes the row NaN; LayerNorm rows with NaN or inf are NaN. */
static void test_softmax_layernorm_special(void **state)
{
    enum { N = 21 };
    float x[3 * N], y[3 * N], g[N], b[N];
    (void)state;
    fill(x, 3 * N, -2, 2, 61), fill(g, N, 0.5f, 1.5f, 62), fill(b, N, -1, 1, 63);
    x[3] = -INFINITY, x[17] = -INFINITY, x[20] = -INFINITY, x[5] = -95.0f, x[19] = -150.0f;
    x[N + 18] = NAN, x[2 * N + 20] = INFINITY;
    for (int v = 0; v < n_variants; v++) {
        double max = -INFINITY, sum = 0;
        ((softmax_fn *)symbol(v, "axrt_softmax_f32"))(x, y, 3, N, 1);
        for (int i = 0; i < N; i++) max = x[i] > max ? x[i] : max;
        for (int i = 0; i < N; i++) sum += exp(x[i] - max);
        for (int i = 0; i < N; i++) {
            const double ref = exp(x[i] - max) / sum;
            if (isinf(x[i]) ? y[i] != 0.0f : fabs(y[i] - ref) > 1e-6 * ref + 1e-42)
                fail_msg("variant %d: softmax element %d of x = %g: %.9g, reference %.9g", v, i,
                         x[i], y[i], ref);
        }
        for (int i = N; i < 3 * N; i++)
            if (!isnan(y[i])) fail_msg("variant %d: softmax element %d not NaN: %g", v, i, y[i]);
        ((layernorm_fn *)symbol(v, "axrt_layernorm_f32"))(x + N, g, b, y + N, 2, N, 1e-5f);
        for (int i = N; i < 3 * N; i++)
            if (!isnan(y[i])) fail_msg("variant %d: layernorm element %d not NaN: %g", v, i, y[i]);
    }
}

/* The epilogues of dense and depthwise kernels: a NaN input makes every
 * output that reads it NaN after each activation (ReLU, ReLU6, GELU, swish). */
static void test_epilogue_nan(void **state)
{
    enum { ROWS = 3, IN = 5, OUT = 19 };
    const axrt_conv2d_params p = {1, 1, 3, 19, 1, 3, 19, 1, 1, 1, 1, 1, 1, 0, 0, 19};
    float x[ROWS * IN], xd[3 * 19], w[OUT * IN], packed[OUT * IN], y[ROWS * OUT];
    (void)state;
    fill(x, ROWS * IN, -1, 1, 71), fill(w, OUT * IN, -1, 1, 72), fill(xd, 3 * 19, -1, 1, 73);
    x[IN + 2] = NAN, xd[19 + 2] = NAN;
    for (int v = 0; v < n_variants; v++)
        for (int act = AXRT_ACT_RELU; act <= AXRT_ACT_HARDSWISH; act++) {
            ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w, packed, IN, OUT);
            ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(x, packed, NULL, NULL,
                                                                   (axrt_act)act, y, ROWS, IN, OUT);
            for (int i = 0; i < ROWS * OUT; i++)
                if (isnan(y[i]) != (i / OUT == 1))
                    fail_msg("variant %d act %d: dense element %d = %g", v, act, i, y[i]);
            ((pack_conv_fn *)symbol(v, "axrt_pack_depthwise_f32"))(w, packed, &p);
            ((conv_ep_fn *)symbol(v, "axrt_conv2d_depthwise_f32"))(xd, packed, NULL, NULL,
                                                                   (axrt_act)act, y, &p);
            for (int i = 0; i < 3 * 19; i++)
                if (isnan(y[i]) != (i == 19 + 2))
                    fail_msg("variant %d act %d: depthwise element %d = %g", v, act, i, y[i]);
        }
}

/* The exactly rounded elementwise kernels, every variant, against the same
 * operation in float here (bit-exact, -0 included): n = 37 (vectors and a
 * masked tail), a broadcast form, and gelu_tanh within 1e-6. */
typedef void binary_fn(const float *, const float *, float *, size_t);
typedef void scalar_b_fn(const float *, float, float *, size_t);
typedef void scalar_a_fn(float, const float *, float *, size_t);
typedef void bcast_fn(const float *, const int64_t *, const float *, const int64_t *, float *,
                      const int64_t *, int);
typedef void leaky_fn(const float *, float *, size_t, float);

static float op_apply(int op, float a, float b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    default: return a / b;
    }
}

static void assert_same_bits(const float *got, const float *want, size_t n, const char *what, int v)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0 && !(isnan(got[i]) && isnan(want[i])))
            fail_msg("%s, variant %s: element %zu = %.9g, expected %.9g", what, variant_name(v), i,
                     got[i], want[i]);
}

static void test_elementwise_exact(void **state)
{
    enum { N = 37 };
    static const char *const ops[4] = {"add", "sub", "mul", "div"};
    float a[N], b[N], y[N], want[N];
    char name[64];
    (void)state;
    fill(a, N, -3, 3, 81), fill(b, N, -3, 3, 82);
    a[4] = -0.0f, a[30] = 0.0f, b[7] = 0.0f, a[35] = NAN;
    for (int v = 0; v < n_variants; v++) {
        static const char *const unary[5] = {"relu", "relu6", "neg", "abs", "sqrt"};
        for (int f = 0; f < 5; f++) {
            for (int i = 0; i < N; i++) {
                const float x = a[i] * 3;
                want[i] = f == 0 ? (x < 0 ? 0.0f : x) : f == 1 ? (x < 0 ? 0.0f : x > 6 ? 6.0f : x)
                        : f == 2 ? -x : f == 3 ? fabsf(x) : sqrtf(x);
                b[i] = x;
            }
            snprintf(name, sizeof name, "axrt_%s_f32", unary[f]);
            ((unary_fn *)symbol(v, name))(b, y, N);
            assert_same_bits(y, want, N, name, v);
        }
        fill(b, N, -3, 3, 82), b[7] = 0.0f;
        for (int i = 0; i < N; i++) want[i] = a[i] < 0 ? 0.125f * a[i] : a[i];
        ((leaky_fn *)symbol(v, "axrt_leaky_relu_f32"))(a, y, N, 0.125f);
        assert_same_bits(y, want, N, "leaky_relu", v);
        for (int op = 0; op < 4; op++) {
            const int64_t shape[2] = {1, N}, sa[2] = {0, 1}, sb[2] = {0, 0};
            for (int i = 0; i < N; i++) want[i] = op_apply(op, a[i], b[i]);
            snprintf(name, sizeof name, "axrt_%s_f32", ops[op]);
            ((binary_fn *)symbol(v, name))(a, b, y, N);
            assert_same_bits(y, want, N, name, v);
            for (int i = 0; i < N; i++) want[i] = op_apply(op, a[i], b[3]);
            snprintf(name, sizeof name, "axrt_%s_scalar_b_f32", ops[op]);
            ((scalar_b_fn *)symbol(v, name))(a, b[3], y, N);
            assert_same_bits(y, want, N, name, v);
            snprintf(name, sizeof name, "axrt_%s_bcast_f32", ops[op]);
            ((bcast_fn *)symbol(v, name))(a, sa, b + 3, sb, y, shape, 2);
            assert_same_bits(y, want, N, name, v);
            for (int i = 0; i < N; i++) want[i] = op_apply(op, b[3], a[i]);
            snprintf(name, sizeof name, "axrt_%s_scalar_a_f32", ops[op]);
            ((scalar_a_fn *)symbol(v, name))(b[3], a, y, N);
            assert_same_bits(y, want, N, name, v);
        }
        ((unary_fn *)symbol(v, "axrt_gelu_tanh_f32"))(a, y, N);
        for (int i = 0; i < N; i++) {
            const double x = a[i];
            const double ref = 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
            if (!same_special(y[i], ref, 1e-6) && fabs(y[i] - ref) > 1e-7)
                fail_msg("gelu_tanh variant %s: f(%g) = %.9g, expected %.9g", variant_name(v), x,
                         y[i], ref);
        }
    }
}

/* Broadcasting add/sub/mul/div (split into rows of the last dim, each row
 * a same-shape, scalar or strided call), every variant, against the index
 * loop written out here, bit for bit: y [3, 5, 2, 37] from a and b viewed
 * through strides, with each row kind: a squeeze-and-excitation scale
 * (b [1, 1, 1, 37]), a row-scalar b ([3, 5, 2, 1]), a row-scalar a, and b
 * read transposed (its last-dim stride 10, not 0 or 1). */
static void test_bcast_exact(void **state)
{
    enum { D0 = 3, D1 = 5, D2 = 2, C = 37, N = D0 * D1 * D2 * C };
    static const char *const ops[4] = {"add", "sub", "mul", "div"};
    static const int64_t shape[4] = {D0, D1, D2, C};
    static const int64_t kinds[4][2][4] = {
        {{D1 * D2 * C, D2 * C, C, 1}, {0, 0, 0, 1}},       /* rows of a, one row of b */
        {{D1 * D2 * C, D2 * C, C, 1}, {D1 * D2, D2, 1, 0}}, /* b one value per row */
        {{D1 * D2, D2, 1, 0}, {D1 * D2 * C, D2 * C, C, 1}}, /* a one value per row */
        {{D1 * D2 * C, D2 * C, C, 1}, {1, D0, D0 * D1 * C, D0 * D1}}, /* b's last dim strided */
    };
    static float a[N], b[N], y[N], want[N];
    char name[64];
    (void)state;
    fill(a, N, -3, 3, 71), fill(b, N, -3, 3, 72);
    a[5] = NAN, b[40] = 0.0f, b[11] = -0.0f;
    for (int v = 0; v < n_variants; v++)
        for (int op = 0; op < 4; op++)
            for (int k = 0; k < 4; k++) {
                const int64_t *sa = kinds[k][0], *sb = kinds[k][1];
                size_t at = 0;
                for (int64_t i = 0; i < D0; i++)
                    for (int64_t j = 0; j < D1; j++)
                        for (int64_t l = 0; l < D2; l++)
                            for (int64_t c = 0; c < C; c++, at++)
                                want[at] = op_apply(op, a[i * sa[0] + j * sa[1] + l * sa[2] + c * sa[3]],
                                                    b[i * sb[0] + j * sb[1] + l * sb[2] + c * sb[3]]);
                for (int i = 0; i < N; i++) y[i] = 1e30f;
                snprintf(name, sizeof name, "axrt_%s_bcast_f32", ops[op]);
                ((bcast_fn *)symbol(v, name))(a, sa, b, sb, y, shape, 4);
                snprintf(name, sizeof name, "axrt_%s_bcast_f32 kind %d", ops[op], k);
                assert_same_bits(y, want, N, name, v);
            }
}

/* Max pooling, every variant, against the window loop written out here:
 * bit-identical, NaN propagating and the first of equal zeros kept; 37
 * channels (a vector tail) and 133 (more than one block of registers),
 * padding and stride 2. */
typedef void pool_fn(const float *, float *, const axrt_pool2d_params *);

static void test_maxpool_exact(void **state)
{
    enum { CMAX = 133, X = 2 * 7 * 6 * CMAX, Y = 2 * 4 * 3 * CMAX };
    static float x[X], y[Y], want[Y];
    (void)state;
    for (int C = 37; C <= CMAX; C += CMAX - 37) {
        const axrt_pool2d_params p = {2, 7, 6, C, 4, 3, 3, 3, 2, 2, 1, 1, 1, 1};
        const int xn = 2 * 7 * 6 * C, yn = 2 * 4 * 3 * C;
        fill(x, (size_t)xn, -3, 3, 61);
        for (int i = 0; i < xn; i += 11) x[i] = (i / 11) % 3 == 0 ? NAN : (i / 11) % 3 == 1 ? -0.0f : 0.0f;
        for (int i = 5; i < xn; i += 13) x[i] = -INFINITY;
        for (int n = 0; n < p.n; n++)
            for (int oy = 0; oy < p.oh; oy++)
                for (int ox = 0; ox < p.ow; ox++)
                    for (int c = 0; c < p.c; c++) {
                        float m = -INFINITY;
                        for (int iy = oy * 2 - 1; iy < oy * 2 + 2; iy++)
                            for (int ix = ox * 2 - 1; ix < ox * 2 + 2; ix++) {
                                float v;
                                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                                v = x[((n * p.h + iy) * p.w + ix) * p.c + c];
                                if (v > m || v != v) m = v;
                            }
                        want[((n * p.oh + oy) * p.ow + ox) * p.c + c] = m;
                    }
        for (int v = 0; v < n_variants; v++) {
            ((pool_fn *)symbol(v, "axrt_maxpool_f32"))(x, y, &p);
            assert_same_bits(y, want, (size_t)yn, "maxpool", v);
        }
    }
}

/* Convolution with padding, every variant, against the same convolution of
 * the input zero-padded by hand (no padding: every tile takes a tap row per
 * segment): bit-identical, so tiles whose windows cross the left or right
 * edge (tap rows copied zero-padded, or a segment per tap) add the same
 * products in the same order.  A 7x7 stride-2 stem on 3 channels and a 3x3
 * on 64 (tap rows of 192 floats), oc 20 (a narrow panel). */
static void test_conv_padding_exact(void **state)
{
    const axrt_conv2d_params shapes[2] = {{1, 23, 30, 3, 12, 15, 20, 7, 7, 2, 2, 1, 1, 3, 3, 1},
                                          {2, 9, 11, 64, 9, 11, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1}};
    enum { X = 2 * 29 * 36 * 64, W = 20 * 64 * 49, Y = 2 * 12 * 15 * 20 };
    static float x[X], padded[X], w[W], packed[W], bias[20], y[Y], want[Y];
    (void)state;
    for (int sh = 0; sh < 2; sh++) {
        const axrt_conv2d_params p = shapes[sh];
        const int pad = p.pad_top, hp = p.h + 2 * pad, wp = p.w + 2 * pad;
        const axrt_conv2d_params q = {p.n, hp, wp, p.c, p.oh, p.ow, p.oc, p.kh, p.kw, p.stride_h, p.stride_w, 1, 1, 0, 0, 1};
        const size_t yn = (size_t)p.n * p.oh * p.ow * p.oc;
        fill(x, X, -1, 1, 70), fill(w, W, -1, 1, 71), fill(bias, 20, -1, 1, 72);
        memset(padded, 0, sizeof padded);
        for (int n = 0; n < p.n; n++)
            for (int iy = 0; iy < p.h; iy++)
                memcpy(padded + (((size_t)n * hp + iy + pad) * wp + pad) * p.c, x + ((size_t)n * p.h + iy) * p.w * p.c,
                       (size_t)p.w * p.c * sizeof *x);
        for (int v = 0; v < n_variants; v++) {
            ((pack_conv_fn *)symbol(v, "axrt_pack_conv2d_f32"))(w, packed, &p);
            ((conv_fn *)symbol(v, "axrt_conv2d_packed_f32"))(padded, packed, bias, want, &q);
            ((conv_fn *)symbol(v, "axrt_conv2d_packed_f32"))(x, packed, bias, y, &p);
            assert_same_bits(y, want, yn, "conv padding", v);
        }
    }
}

/* Global mean pooling, every variant, against the loop written out here:
 * each channel summed over the pixels in order from 0.0f, then divided by
 * their count (none when there is one), bit-identical; 37 channels (a
 * block and a tail) and 133 (more than one pass of registers holds), NaN,
 * infinities and signed zeros, and one pixel; and 2500 pixels, which
 * pool_chunks (axrt_kernels.inc) folds in three runs of pixels, each summed
 * so, the runs' sums added in order. */
typedef void globalpool_fn(const float *, float *, size_t, size_t, size_t);

static void test_globalmeanpool_exact(void **state)
{
    enum { N = 2, HW = 2500, CMAX = 133 };
    static const int hws[3] = {1, 29, HW}; /* 2500: 3 runs of 834, 833, 833 pixels */
    static float x[N * HW * CMAX], y[N * CMAX], want[N * CMAX];
    (void)state;
    for (int C = 37; C <= CMAX; C += CMAX - 37)
        for (int h = 0; h < 3; h++)
            for (int v = 0; v < n_variants; v++) {
                const int hw = hws[h], runs = hw == HW ? 3 : 1;
                const int bounds[4] = {0, hw == HW ? 834 : hw, 1667, 2500};
                fill(x, N * HW * C, -3, 3, 63);
                for (int i = 0; i < N * HW * C; i++) x[i] *= 0.70710678f; /* full mantissas: sums round */
                for (int i = 0; i < 29 * C; i += 17) /* in the first image's first 29 pixels */
                    x[i] = (i / 17) % 3 == 0 ? NAN : (i / 17) % 3 == 1 ? -0.0f : INFINITY;
                for (int n = 0; n < N; n++)
                    for (int c = 0; c < C; c++) {
                        float total = 0.0f;
                        for (int r = 0; r < runs; r++) {
                            float sum = 0.0f;
                            for (int px = bounds[r]; px < bounds[r + 1]; px++) sum += x[((size_t)n * hw + px) * C + c];
                            total = r ? total + sum : sum;
                        }
                        want[n * C + c] = hw == 1 ? total : total / (float)hw;
                    }
                ((globalpool_fn *)symbol(v, "axrt_globalmeanpool_f32"))(x, y, N, hw, C);
                assert_same_bits(y, want, N * C, "globalmeanpool", v);
            }
}

/* Swish in the epilogue of dense, conv and depthwise (EfficientNet's
 * layers) gives the bits of the kernel without it followed by
 * axrt_swish_f32, every variant. */
static void test_swish_epilogue_bits(void **state)
{
    const axrt_conv2d_params cp = {1, 9, 7, 40, 9, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    const axrt_conv2d_params dp = {1, 9, 7, 40, 5, 4, 40, 3, 3, 2, 2, 1, 1, 1, 1, 40};
    enum { X = 9 * 7 * 40, W = 24 * 40 * 9, Y = 9 * 7 * 24 };
    static float x[X], w[W], packed[W], bias[40], y[Y], want[Y];
    (void)state;
    fill(x, X, -2, 2, 81), fill(w, W, -0.3f, 0.3f, 82), fill(bias, 40, -1, 1, 83);
    for (int v = 0; v < n_variants; v++) {
        ((pack_dense_fn *)symbol(v, "axrt_pack_dense_f32"))(w, packed, 40, 24);
        ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(x, packed, bias, NULL, AXRT_ACT_NONE, want, 21, 40, 24);
        ((unary_fn *)symbol(v, "axrt_swish_f32"))(want, want, 21 * 24);
        ((dense_ep_fn *)symbol(v, "axrt_dense_packed_ep_f32"))(x, packed, bias, NULL, AXRT_ACT_SWISH, y, 21, 40, 24);
        assert_same_bits(y, want, 21 * 24, "dense+swish", v);
        ((pack_conv_fn *)symbol(v, "axrt_pack_conv2d_f32"))(w, packed, &cp);
        ((conv_ep_fn *)symbol(v, "axrt_conv2d_packed_ep_f32"))(x, packed, bias, NULL, AXRT_ACT_NONE, want, &cp);
        ((unary_fn *)symbol(v, "axrt_swish_f32"))(want, want, Y);
        ((conv_ep_fn *)symbol(v, "axrt_conv2d_packed_ep_f32"))(x, packed, bias, NULL, AXRT_ACT_SWISH, y, &cp);
        assert_same_bits(y, want, Y, "conv+swish", v);
        ((pack_conv_fn *)symbol(v, "axrt_pack_depthwise_f32"))(w, packed, &dp);
        ((conv_ep_fn *)symbol(v, "axrt_conv2d_depthwise_f32"))(x, packed, bias, NULL, AXRT_ACT_NONE, want, &dp);
        ((unary_fn *)symbol(v, "axrt_swish_f32"))(want, want, 5 * 4 * 40);
        ((conv_ep_fn *)symbol(v, "axrt_conv2d_depthwise_f32"))(x, packed, bias, NULL, AXRT_ACT_SWISH, y, &dp);
        assert_same_bits(y, want, 5 * 4 * 40, "depthwise+swish", v);
    }
}

/* Sigmoid and swish of a lane do not depend on the other lanes of its
 * vector: AVX2 takes exp(-|x|) lanes whose result is subnormal apart from
 * the rest, so such a lane (x = -95) in every vector of 8 leaves the
 * others' bits as they are without it. */
static void test_logistic_lanes_independent(void **state)
{
    enum { N = 4096 };
    static const char *const names[2] = {"axrt_sigmoid_f32", "axrt_swish_f32"};
    static float x[N], alone[N], mixed[N];
    (void)state;
    fill(x, N, -8, 8, 91);
    for (int v = 0; v < n_variants; v++)
        for (int f = 0; f < 2; f++) {
            unary_fn *fn = (unary_fn *)symbol(v, names[f]);
            for (size_t i = 5; i < N; i += 8) x[i] = 0.5f;
            fn(x, alone, N);
            for (size_t i = 5; i < N; i += 8) x[i] = -95.0f;
            fn(x, mixed, N);
            for (size_t i = 5; i < N; i += 8) alone[i] = mixed[i];
            assert_same_bits(mixed, alone, N, names[f], v);
        }
}

#include "test_fastmath_train.inc"
#include "test_fastmath_transpose.inc"
#include "test_fastmath_threads.inc"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exp_ulp),
        cmocka_unit_test(test_exp_softmax_exhaustive),
        cmocka_unit_test(test_softmax_block_rows),
        cmocka_unit_test(test_erf_gelu),
        cmocka_unit_test(test_more_activations),
        cmocka_unit_test(test_tanh_sigmoid_swish),
        cmocka_unit_test(test_tanh_sigmoid_swish_special),
        cmocka_unit_test(test_dense_packed),
        cmocka_unit_test(test_conv_packed),
        cmocka_unit_test(test_dense_epilogue),
        cmocka_unit_test(test_dense_one_row),
        cmocka_unit_test(test_dense_tail_panel),
        cmocka_unit_test(test_conv_epilogue),
        cmocka_unit_test(test_swish_epilogue_bits),
        cmocka_unit_test(test_logistic_lanes_independent),
        cmocka_unit_test(test_depthwise),
        cmocka_unit_test(test_depthwise_shapes),
        cmocka_unit_test(test_depthwise_blocks),
        cmocka_unit_test(test_expand_depthwise),
        cmocka_unit_test(test_expand_dw_project),
        cmocka_unit_test(test_expand_kxk),
        cmocka_unit_test(test_softmax_edges),
        cmocka_unit_test(test_softmax_long_lines),
        cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_softmax_rising_max),
        cmocka_unit_test(test_mha_flash),
        cmocka_unit_test(test_matmul_softmax_layernorm),
        cmocka_unit_test(test_layernorm_groups),
        cmocka_unit_test(test_unary_special_values),
        cmocka_unit_test(test_softmax_short_rows),
        cmocka_unit_test(test_softmax_layernorm_special),
        cmocka_unit_test(test_epilogue_nan),
        cmocka_unit_test(test_elementwise_exact),
        cmocka_unit_test(test_bcast_exact),
        cmocka_unit_test(test_maxpool_exact),
        cmocka_unit_test(test_conv_padding_exact),
        cmocka_unit_test(test_globalmeanpool_exact),
        cmocka_unit_test(test_training_kernels),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_transpose_exact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
