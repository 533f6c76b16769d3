# lib.sh — shared by run.sh (the emulator) and gpu_check.sh (a real device):
# the inputs a case asks for and the tolerance of a half model.  Sourced.

# compare.c's NAME=LO,HI[,SPECIAL...] from the case's `# >>> input NAME:
# range=LO,HI specials=...` lines (tests/ops/README.md)
input_specs() {
    sed -n 's/^# >>> input \([A-Za-z0-9_]*\): *\(.*\)$/\1 \2/p' "$1" | while read -r name rest; do
        local range specials
        range=$(grep -o 'range=[^ ]*' <<<"$rest" | cut -d= -f2)
        specials=$(grep -o 'specials=[^ ]*' <<<"$rest" | cut -d= -f2)
        echo "$name=${range:--1,1}${specials:+,$specials}"
    done
}

# Float16/BFloat16 models (docs/precision.md) on the GPU: parameters and the
# activations between layers stored in the half type, every kernel reading
# through a to-float conversion and storing through the C runtime's
# round-to-nearest-even.  The kernels compile (host C, NVRTC+ptxas, hiprtc)
# and run on the emulator against the C target at the same dtype.  Where the
# targets fuse differently (the GPU applies residual and activation in the
# GEMM's epilogue, the C target's half kernels round between them) and where
# float sums run in another order, an intermediate may round one way on one
# target and the other way on the other: one ulp (2u; u = 2^-11 for Float16,
# 2^-8 for BFloat16), carried to the output.  So, as tests/half/run.py
# argues, the difference measured against the output's scale (compare.c
# scale:) stays below 2u(L+1), L the rounding stages on the longest path:
# tests/half/run.py's STAGES for the examples, and for the large examples
# that only gpu_check.sh runs, their blocks times a block's stages plus the
# stem and head (all_minilm_l6_v2: 6 of r4_bert_layer's 16, +2; resmlp50:
# 25 of dense-relu, dense, add, +2); 3 for an op case (input cast, the op,
# output cast).  half_rounding's single-step kernels round as
# the C runtime does, bit for bit: tolerance 0.  The models (the small
# examples, this suite's models/ and the op cases of each family: dense and
# matmul, conv/batchnorm/pooling, normalisation, softmax and attention,
# embedding, elementwise and broadcasts, data movement) keep the suite's
# time within reach of the two CPUs CI has (run.sh's half_models).
half_stages() {
    case $1 in
    mlp|r1_mlp_b1|r2_mlp_b32) echo 4 ;; r5_layernorm|r6_softmax|r7_depthwise) echo 2 ;; lenet5) echo 12 ;;
    r3_resnet_block) echo 8 ;; r4_bert_layer) echo 16 ;; mobilenetv2_block) echo 9 ;; gpt_block) echo 14 ;;
    gru_kws) echo 101 ;; all_minilm_l6_v2) echo 98 ;; resmlp50) echo 77 ;; *) echo 3 ;;
    esac
}
half_tol() { # MODEL DTYPE: scale:2u(L+1)
    [ "$1" = half_rounding ] && { echo 0; return; }
    awk -v L="$(half_stages "$1")" -v u="$([ "$2" = Float16 ] && echo 4.8828125e-4 || echo 3.90625e-3)" \
        'BEGIN { printf "scale:%.3g", 2 * u * (L + 1) }'
}
