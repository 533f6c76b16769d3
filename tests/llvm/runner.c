/* A generic host driver for the llvm suite: runs every model listed in the
 * generated models.c (AXC_MODELS: pointers to <name>_model descriptors) on
 * deterministic inputs, through its descriptor with a heap arena of the size
 * it states, and prints each output element, one per line:
 *   <model> <output> <index> <value, round-trip precision>
 * Linked once against the C target's object and once against the LLVM
 * object of the same model; compare.py compares the two listings. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "axrt.h"

extern const axrt_model *const axc_models[];
extern const int axc_nmodels;

static size_t count_of(const axrt_tensor_info *t)
{
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

/* Floats uniform in [-1, 1) from a fixed LCG; integer inputs (indices) 0. */
static void *make_input(const axrt_tensor_info *t, uint32_t *state)
{
    size_t n = count_of(t), size = axrt_dtype_size(t->dtype);
    unsigned char *data = calloc(n ? n : 1, size);
    if (!data) exit(2);
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        double v = (double)(*state >> 8) / 8388608.0 - 1.0;
        if (t->dtype == AXRT_F32) ((float *)data)[i] = (float)v;
        else if (t->dtype == AXRT_F64) ((double *)data)[i] = v;
    }
    return data;
}

static int run_model(const axrt_model *m)
{
    void *in[16], *out[16];
    uint32_t state = 12345;
    for (int k = 0; k < m->n_inputs; k++) in[k] = make_input(&m->inputs[k], &state);
    for (int k = 0; k < m->n_outputs; k++) {
        out[k] = calloc(count_of(&m->outputs[k]) ? count_of(&m->outputs[k]) : 1,
                        axrt_dtype_size(m->outputs[k].dtype));
        if (!out[k]) return 2;
    }
    void *arena = aligned_alloc(64, m->arena_bytes ? (m->arena_bytes + 63) / 64 * 64 : 64);
    if (!arena || m->run((const void *const *)in, out, arena) != 0) {
        printf("%s failed\n", m->name);
        return 1;
    }
    for (int k = 0; k < m->n_outputs; k++)
        for (size_t i = 0; i < count_of(&m->outputs[k]); i++) {
            double v = m->outputs[k].dtype == AXRT_F64 ? ((double *)out[k])[i] : ((float *)out[k])[i];
            printf("%s %s %zu %.17g\n", m->name, m->outputs[k].name, i, v);
        }
    return 0;
}

int main(void)
{
    int bad = 0;
    for (int i = 0; i < axc_nmodels; i++) bad |= run_model(axc_models[i]);
    return bad;
}
