/* axc_rows.c — the axc system: each row calls the <name>_forward that axc
 * generated from examples/rN_*.ax (with the row's weights embedded), built
 * into the harness with the same flags as the other C systems.  Each row
 * gets its own arena of the size the generated header announces. */
#include "harness.h"

#include "r1_mlp_b1.h"
#include "r2_mlp_b32.h"
#include "r3_resnet_block.h"
#include "r4_bert_layer.h"
#include "r5_layernorm.h"
#include "r6_softmax.h"

/* Defines setup_<model> and run_<model> around <model>_forward. */
#define AXC_ROW(model, ARENA_BYTES)                                                   \
    static const float *model##_x;                                                    \
    static float *model##_y;                                                          \
    static void *model##_arena;                                                       \
    static const char *setup_##model(const bench_tensors *w, const float *x, float *y) \
    {                                                                                 \
        (void)w; /* embedded in the generated code */                                 \
        model##_x = x;                                                                \
        model##_y = y;                                                                \
        model##_arena = bench_floats((ARENA_BYTES) / sizeof(float) + 1);              \
        return 0;                                                                     \
    }                                                                                 \
    static void run_##model(void) { model##_forward(model##_x, model##_y, model##_arena); }

AXC_ROW(mlp_b1, MLP_B1_ARENA_BYTES)
AXC_ROW(mlp_b32, MLP_B32_ARENA_BYTES)
AXC_ROW(resnet_block, RESNET_BLOCK_ARENA_BYTES)
AXC_ROW(bert_layer, BERT_LAYER_ARENA_BYTES)
AXC_ROW(layernorm, LAYERNORM_ARENA_BYTES)
AXC_ROW(softmax_wide, SOFTMAX_WIDE_ARENA_BYTES)

const bench_impl bench_axc_rows[] = {
    {"R1", "axc", setup_mlp_b1, run_mlp_b1},
    {"R2", "axc", setup_mlp_b32, run_mlp_b32},
    {"R3", "axc", setup_resnet_block, run_resnet_block},
    {"R4", "axc", setup_bert_layer, run_bert_layer},
    {"R5", "axc", setup_layernorm, run_layernorm},
    {"R6", "axc", setup_softmax_wide, run_softmax_wide},
    {0, 0, 0, 0},
};
