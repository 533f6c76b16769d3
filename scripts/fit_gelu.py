"""The coefficients of the SIMD GELU (runtime/axrt_x86_simd.inc, v_gelu).

GELU(x) = x h for x < 0 and x (1 - h) for x >= 0, h = erfc(z) / 2, z = |x| / sqrt 2,
computed as h = t exp(P(t) - z^2), t = 1 / (1 + P_SCALE z).  P is the degree-8
polynomial nearest in the max norm to ln(h / t) + z^2 over z in [0, Z_MAX] (GELU
is subnormal beyond), by Lawson's iteratively reweighted least squares on
Chebyshev nodes; its coefficients are then rounded to float32 and the error
measured again on a fine grid (the error of P is the relative error of h).

  python3 scripts/fit_gelu.py     prints the C array and the max error
"""
import math

import numpy as np

DEGREE, P_SCALE, Z_MAX = 8, 0.4, 9.4


def target(t):
    """ln(h / t) + z^2 at t, in double (math.erfc is accurate in the tail)."""
    z = (1 / t - 1) / P_SCALE
    return np.array([math.log(math.erfc(a) / 2 / b) + a * a for a, b in zip(z, t)])


def lawson_fit(nodes=4000, rounds=300):
    t_min = 1 / (1 + P_SCALE * Z_MAX)
    u = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    t = t_min + (1 - t_min) * (u + 1) / 2
    f, basis = target(t), np.vander(t, DEGREE + 1)
    weight = np.full(nodes, 1.0 / nodes)
    for _ in range(rounds):
        root = np.sqrt(weight)
        coef = np.linalg.lstsq(basis * root[:, None], f * root, rcond=None)[0]
        weight *= np.abs(basis @ coef - f)
        weight /= weight.sum()
    return coef, t_min


def main():
    coef, t_min = lawson_fit()
    coef32 = coef.astype(np.float32)
    t = np.linspace(t_min, 1, 200001)
    err = np.max(np.abs(np.polyval(coef32.astype(np.float64), t) - target(t)))
    print("static const float gelu_poly[%d] = {%s};" % (DEGREE + 1, ", ".join("%.9gf" % c for c in coef32)))
    print("max |P(t) - ln(h / t) - z^2| over z in [0, %g], float coefficients: %.3g" % (Z_MAX, err))


if __name__ == "__main__":
    main()
