/* Bare-metal test harness for one axc model on a Cortex-M4F (QEMU mps2-an386,
 * newlib semihosting).  It fills every input with a fixed, exactly
 * representable pattern (tests/firmware/run.sh rebuilds the same inputs for
 * the host run), runs the model once through its axrt_model descriptor with
 * the model's own static arena, and prints, over semihosting:
 *
 *   <output name>[<flat index>] <value, %.9g>     one line per output element
 *   stack <bytes>                                 stack the model call used
 *   RESULT: PASS | RESULT: FAIL
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
#define IO_POOL_FLOATS 16384       /* inputs and outputs of the model, together */
#define STACK_PROBE_BYTES 12288    /* painted region; below the linker's 16 KiB reserve */
#define STACK_PAINT 0xA5C3A5C3u

static float io_pool[IO_POOL_FLOATS];

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

/* Runs the model with the stack below the caller's painted; returns the
 * model's status and stores the deepest stack use in *stack_bytes. */
static int run_measured(const axrt_model *m, const void *const *in, void *const *out,
                        uint32_t *stack_bytes)
{
    uint32_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    volatile uint32_t *const lowest = (volatile uint32_t *)(sp - STACK_PROBE_BYTES);
    volatile uint32_t *p;
    for (p = lowest; p < (volatile uint32_t *)sp; p++) *p = STACK_PAINT;
    int status = m->run(in, out, NULL);
    for (p = lowest; p < (volatile uint32_t *)sp && *p == STACK_PAINT; p++) {}
    *stack_bytes = sp - (uint32_t)(uintptr_t)p;
    return status;
}

#ifdef AXC_PROFILE
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
        SYST_RVR = 0xFFFFFFu;
        SYST_CVR = 0;
        SYST_CSR = 5u; /* enable, core clock */
        last = SYST_CVR;
        started = 1;
    }
    const uint32_t now = SYST_CVR;
    total += now <= last ? last - now : last + 0x1000000u - now;
    last = now;
    return total;
}

static void print_profile(void)
{
    for (size_t k = 0; k < sizeof AXC_PROFILE / sizeof AXC_PROFILE[0]; k++)
        printf("layer %s %s calls %lu ticks %lu\n", AXC_PROFILE[k].layer, AXC_PROFILE[k].op,
               (unsigned long)AXC_PROFILE[k].calls, (unsigned long)AXC_PROFILE[k].ticks);
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

    uint32_t stack_bytes;
    int status = run_measured(m, (const void *const *)inputs, (void *const *)outputs, &stack_bytes);
    int finite = print_outputs(m, outputs);
    printf("stack %u\n", (unsigned)stack_bytes);
#ifdef AXC_PROFILE
    print_profile();
#endif
    int ok = status == 0 && finite && stack_bytes < STACK_PROBE_BYTES;
    puts(ok ? "RESULT: PASS" : "RESULT: FAIL");
    return ok ? 0 : 1;
}
