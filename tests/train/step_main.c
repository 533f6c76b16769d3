/* step_main.c — runs a generated training step (axc --train) for the train
 * suite (tests/train/step.py): on the host, or built with examples/firmware's
 * startup and linker script on a Cortex-M4F under QEMU (newlib semihosting).
 * step_data.h, written by the test, includes the model's header and defines
 * STEPS, STATE_BYTES, STATE_INIT(state), TRAIN_STEP(state, s) (one batch),
 * FORWARD_STATE(state, y) (batch 0 through the forward on the state),
 * OUT_COUNT, STATE_TENSORS, STATE_INFO and STATE_OFFSETS.  It prints
 *   loss <step> <value>                    per step
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

int main(void)
{
    int s, k, ok = 1;
    long i;
    STATE_INIT(state);
    for (s = 0; s < STEPS; s++) {
        const double loss = (double)TRAIN_STEP(state, s);
        printf("loss %d %.9g\n", s, loss);
        ok = ok && isfinite(loss);
    }
    for (k = 0; k < STATE_TENSORS; k++) {
        const axrt_tensor_info *t = &STATE_INFO[k];
        const float *v = (const float *)(const void *)(state + STATE_OFFSETS[k]);
        long count = 1;
        int d;
        for (d = 0; d < t->rank; d++) count *= (long)t->dims[d];
        for (i = 0; i < count; i++) printf("%s[%ld] %.9g\n", t->name, i, (double)v[i]);
    }
    ok = ok && FORWARD_STATE(state, out) == 0;
    for (i = 0; i < OUT_COUNT; i++) printf("out[%ld] %.9g\n", i, (double)out[i]);
    printf("RESULT: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
