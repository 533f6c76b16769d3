/* act_ref.h — the packed kernels' activations in double (the epilogue's
 * reference), shared by the unit tests that check epilogues. */
#ifndef AXC_TEST_ACT_REF_H
#define AXC_TEST_ACT_REF_H
#include <math.h>
#include "axrt.h"

static double act_ref(double v, axrt_act act)
{
    switch (act) {
    case AXRT_ACT_RELU: return v < 0 ? 0 : v;
    case AXRT_ACT_RELU6: return v < 0 ? 0 : v > 6 ? 6 : v;
    case AXRT_ACT_GELU: return 0.5 * v * erfc(-v / sqrt(2.0));
    case AXRT_ACT_SWISH: return v / (1 + exp(-v));
    case AXRT_ACT_HARDSWISH: return v <= -3 ? 0 : v >= 3 ? v : v * (v + 3) / 6;
    default: return v;
    }
}
#endif
