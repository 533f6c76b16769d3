/* step_main.c — runs a generated training step (axc --train) for the train
 * suite (tests/train/step.py): on the host, or built with examples/firmware's
 * startup and linker script on a Cortex-M4F under QEMU (newlib semihosting).
 * step_data.h, written by the test, includes the model's header and defines
 * STEPS, STATE_BYTES, STATE_INIT(state), TRAIN_STEP(state, s) (one batch),
 * FORWARD_STATE(state, y) (batch 0 through the forward on the state),
 * OUT_COUNT, STATE_TENSORS, STATE_INFO and STATE_OFFSETS (and EVERY_STEP
 * for the states after each step).  It prints
 *   loss <step> <value>                    per step
 *   <tensor>@<step>[<flat index>] <value>  with EVERY_STEP: each state tensor
 *                                          element after that step
 *   <tensor>[<flat index>] <value>         every state tensor element
 *   out[<flat index>] <value>              the forward on the trained state
 *   RESULT: PASS
 * and exits 0 (a non-finite loss prints RESULT: FAIL and exits 1). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "step_data.h"

#if defined(__GNUC__)
static unsigned char state[STATE_BYTES] __attribute__((aligned(64)));
#else
static unsigned char state[STATE_BYTES];
#endif
static float out[OUT_COUNT];

/* Every state tensor's elements, each line "<tensor><tag>[<index>] <value>". */
static void print_state(const char *tag)
{
    int k, d;
    long i, count;
    for (k = 0; k < STATE_TENSORS; k++) {
        const axrt_tensor_info *t = &STATE_INFO[k];
        const float *v = (const float *)(const void *)(state + STATE_OFFSETS[k]);
        for (count = 1, d = 0; d < t->rank; d++) count *= (long)t->dims[d];
        for (i = 0; i < count; i++) printf("%s%s[%ld] %.9g\n", t->name, tag, i, (double)v[i]);
    }
}

int main(void)
{
    int s, ok = 1;
    long i;
    STATE_INIT(state);
    for (s = 0; s < STEPS; s++) {
        const double loss = (double)TRAIN_STEP(state, s);
        printf("loss %d %.9g\n", s, loss);
        ok = ok && isfinite(loss);
#ifdef EVERY_STEP
        {
            char tag[16];
            sprintf(tag, "@%d", s);
            print_state(tag);
        }
#endif
    }
    print_state("");
    ok = ok && FORWARD_STATE(state, out) == 0;
    for (i = 0; i < OUT_COUNT; i++) printf("out[%ld] %.9g\n", i, (double)out[i]);
    printf("RESULT: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
