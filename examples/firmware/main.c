/* Bare-metal test harness for one axc model on a Cortex-M4F (QEMU mps2-an386,
 * newlib semihosting).  It fills every input with a fixed, exactly
 * representable pattern (tests/firmware/run.sh rebuilds the same inputs for
 * the host run), runs the model once through its axrt_model descriptor with
 * the model's own static arena, and prints, over semihosting:
 *
 *   <output name>[<flat index>] <value, %.9g>     one line per output element
 *   stack <bytes>                                 stack the model call used
 *   expected: max |device - host| <d> (<r> of max |host|)  with AXC_EXPECTED
 *   RESULT: PASS | RESULT: FAIL
 *
 * Built with -DAXC_EXPECTED (the Makefile does), it compares the outputs with
 * expected.h, what the same model (same flags, same weights) computed on the
 * build host for the same inputs, and passes only within AXC_CHECK_RTOL of the
 * largest expected magnitude: an image that runs but computes something else
 * (other parameters, a miscompile) FAILs.  Built with -DAXC_HOST_REFERENCE for
 * the build host, it writes that expected.h instead (to standard output).
 *
 * Built with PROFILE=1 (the model compiled with `axc --profile`), it also
 * prints the per-layer profile, one line per layer:
 *
 *   layer <name> <op> calls <n> ticks <t>         SysTick cycles spent in it
 *
 * The exit status (QEMU's exit status) is 0 on PASS.  The build names the model
 * with -DAXC_MODEL_HEADER='"mlp.h"' -DAXC_MODEL=mlp_model.
 *
 * Stack use is measured, not estimated: the region below the current stack
 * pointer is painted with a pattern before the call and scanned afterwards. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include AXC_MODEL_HEADER

#define MAX_TENSORS 8              /* inputs, and outputs, per model */
#ifndef IO_POOL_FLOATS             /* the Makefile's IO_POOL_FLOATS */
#define IO_POOL_FLOATS 16384       /* inputs and outputs of the model, together */
#endif
#define STACK_PROBE_BYTES 12288    /* painted region; below the linker's 16 KiB reserve */
#define STACK_PAINT 0xA5C3A5C3u

static float io_pool[IO_POOL_FLOATS];

#ifdef AXC_EXPECTED
#include "expected.h" /* axc_expected[axc_expected_count]: every output, in order */
#endif

static size_t element_count(const axrt_tensor_info *t)
{
    size_t count = 1;
    for (int d = 0; d < t->rank; d++) count *= (size_t)t->dims[d];
    return count;
}

/* Element i of input number k: (((37 i + 11 k) mod 101) - 50) / 64, exact in float. */
static float input_value(size_t i, int k)
{
    return (float)((int)((37u * i + 11u * (unsigned)k) % 101u) - 50) / 64.0f;
}

/* Carves the float tensors of `infos` out of io_pool from *used on; 0 if they
 * do not fit or one is not Float32 (the only dtype this harness feeds). */
static int carve(const axrt_tensor_info *infos, int n, float **views, size_t *used)
{
    for (int k = 0; k < n; k++) {
        size_t count = element_count(&infos[k]);
        if (infos[k].dtype != AXRT_F32 || count > IO_POOL_FLOATS - *used) return 0;
        views[k] = io_pool + *used;
        *used += count;
    }
    return 1;
}

#ifndef AXC_HOST_REFERENCE
/* Empty and never inlined: called right before and right after the model's
 * run, so that a QEMU plugin (examples/mlperf_tiny/insn_count.c) can count
 * the instructions executed between them. */
__attribute__((noinline)) void axc_inference_begin(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void axc_inference_end(void) { __asm__ volatile("" ::: "memory"); }
#endif

/* Runs the model with the stack below the caller's painted; returns the
 * model's status and stores the deepest stack use in *stack_bytes. */
static int run_measured(const axrt_model *m, const void *const *in, void *const *out,
                        uint32_t *stack_bytes)
{
#ifdef AXC_HOST_REFERENCE
    *stack_bytes = 0;
    return m->run(in, out, NULL);
#else
    uint32_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    volatile uint32_t *const lowest = (volatile uint32_t *)(sp - STACK_PROBE_BYTES);
    volatile uint32_t *p;
    for (p = lowest; p < (volatile uint32_t *)sp; p++) *p = STACK_PAINT;
    axc_inference_begin();
    int status = m->run(in, out, NULL);
    axc_inference_end();
    for (p = lowest; p < (volatile uint32_t *)sp && *p == STACK_PAINT; p++) {}
    *stack_bytes = sp - (uint32_t)(uintptr_t)p;
    return status;
#endif
}

#if defined AXC_PROFILE && defined AXC_HOST_REFERENCE
uint64_t axc_profile_clock(void) { return 0; }
#elif defined AXC_PROFILE
/* The clock the profiled model calls around each layer: SysTick counting
 * down from 2^24 at the core clock, unwrapped into 64 bits (calls come far
 * more often than once per 2^24 cycles). */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

uint64_t axc_profile_clock(void)
{
    static uint64_t total;
    static uint32_t last;
    static int started;
    if (!started) {
        uint32_t spins;
        SYST_RVR = 0xFFFFFFu;
        SYST_CVR = 0;
        SYST_CSR = 5u; /* enable, core clock */
        /* CVR reads 0 until the first reload: a cycle on silicon, but under
           QEMU a timer event on the host's schedule, which a loaded host ran
           whole models before (every layer 0 ticks); a bounded wait for it */
        for (spins = 0; SYST_CVR == 0 && spins < 10000000u; spins++) {
        }
        last = SYST_CVR;
        started = 1;
    }
    const uint32_t now = SYST_CVR;
    total += now <= last ? last - now : last + 0x1000000u - now;
    last = now;
    return total;
}

#endif

#if defined AXC_PROFILE && !defined AXC_HOST_REFERENCE
static void print_profile(void)
{
    for (size_t k = 0; k < sizeof AXC_PROFILE / sizeof AXC_PROFILE[0]; k++)
        printf("layer %s %s calls %lu ticks %lu\n", AXC_PROFILE[k].layer, AXC_PROFILE[k].op,
               (unsigned long)AXC_PROFILE[k].calls, (unsigned long)AXC_PROFILE[k].ticks);
}
#endif

#ifdef AXC_HOST_REFERENCE
/* Writes expected.h: every output element, in order, exactly (%.9e). */
static int print_expected(const axrt_model *m, float *const *outputs)
{
    size_t total = 0;
    puts("/* expected.h: the outputs the build host computes (main.c AXC_HOST_REFERENCE) */");
    puts("static const float axc_expected[] = {");
    for (int k = 0; k < m->n_outputs; k++)
        for (size_t i = 0; i < element_count(&m->outputs[k]); i++, total++)
            printf("    %.9ef,\n", (double)outputs[k][i]); /* an exponent: 0 is 0.0e+00f */
    printf("};\nstatic const unsigned long axc_expected_count = %lu;\n", (unsigned long)total);
    return 1;
}

int main(void)
{
    const axrt_model *m = &AXC_MODEL;
    float *inputs[MAX_TENSORS], *outputs[MAX_TENSORS];
    size_t used = 0;
    uint32_t stack_bytes;
    if (m->n_inputs > MAX_TENSORS || m->n_outputs > MAX_TENSORS ||
        !carve(m->inputs, m->n_inputs, inputs, &used) ||
        !carve(m->outputs, m->n_outputs, outputs, &used))
        return 1;
    for (int k = 0; k < m->n_inputs; k++)
        for (size_t i = 0; i < element_count(&m->inputs[k]); i++) inputs[k][i] = input_value(i, k);
    if (run_measured(m, (const void *const *)inputs, (void *const *)outputs, &stack_bytes) != 0) return 1;
    return print_expected(m, outputs) ? 0 : 1;
}
#else

#ifdef AXC_EXPECTED
/* Whether every output is within AXC_CHECK_RTOL x max |expected| of
 * expected.h's value; prints the largest difference. */
static int matches_expected(const axrt_model *m, float *const *outputs)
{
    double largest = 0, worst = 0;
    size_t total = 0;
    for (unsigned long j = 0; j < axc_expected_count; j++)
        largest = fabs((double)axc_expected[j]) > largest ? fabs((double)axc_expected[j]) : largest;
    for (int k = 0; k < m->n_outputs; k++)
        for (size_t i = 0; i < element_count(&m->outputs[k]); i++, total++) {
            if (total >= axc_expected_count) return 0;
            const double d = fabs((double)outputs[k][i] - (double)axc_expected[total]);
            worst = d > worst || d != d ? d : worst;
        }
    printf("expected: max |device - host| %.3g (%.3g of max |host|)\n", worst, largest > 0 ? worst / largest : worst);
    return total == axc_expected_count && worst <= AXC_CHECK_RTOL * (largest > 0 ? largest : 1);
}
#endif

/* Prints every output element; 0 if one is not finite. */
static int print_outputs(const axrt_model *m, float *const *outputs)
{
    int finite = 1;
    for (int k = 0; k < m->n_outputs; k++) {
        size_t count = element_count(&m->outputs[k]);
        for (size_t i = 0; i < count; i++) {
            printf("%s[%u] %.9g\n", m->outputs[k].name, (unsigned)i, (double)outputs[k][i]);
            finite = finite && isfinite(outputs[k][i]);
        }
    }
    return finite;
}

int main(void)
{
    const axrt_model *m = &AXC_MODEL;
    float *inputs[MAX_TENSORS], *outputs[MAX_TENSORS];
    size_t used = 0;
    if (m->n_inputs > MAX_TENSORS || m->n_outputs > MAX_TENSORS ||
        !carve(m->inputs, m->n_inputs, inputs, &used) ||
        !carve(m->outputs, m->n_outputs, outputs, &used)) {
        puts("model inputs/outputs do not fit this harness\nRESULT: FAIL");
        return 1;
    }
    for (int k = 0; k < m->n_inputs; k++)
        for (size_t i = 0; i < element_count(&m->inputs[k]); i++) inputs[k][i] = input_value(i, k);

#if defined AXC_PROFILE && !defined AXC_HOST_REFERENCE
    (void)axc_profile_clock(); /* SysTick started, its first reload waited for, before the measured run */
#endif
    uint32_t stack_bytes;
    int status = run_measured(m, (const void *const *)inputs, (void *const *)outputs, &stack_bytes);
    int finite = print_outputs(m, outputs);
    printf("stack %u\n", (unsigned)stack_bytes);
#ifdef AXC_PROFILE
    print_profile();
#endif
    int ok = status == 0 && finite && stack_bytes < STACK_PROBE_BYTES;
#ifdef AXC_EXPECTED
    ok = matches_expected(m, outputs) && ok;
#endif
    puts(ok ? "RESULT: PASS" : "RESULT: FAIL");
    return ok ? 0 : 1;
}
#endif
