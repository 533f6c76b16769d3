/* cg.h — code generators.  Each takes fully planned graphs (after
 * pass_memplan, params filled) and appends source text to the buffers. */
#ifndef AX_CG_H
#define AX_CG_H

#include "ir.h"

typedef struct cg_request {
    ir_graph **models;        /* one or more models, emitted into one file */
    int nmodels;
    const char *header_name;  /* how the .c file #includes its header, e.g. "mlp.h" */
    const char *source_name;  /* the .ax file, for the banner and the per-node comments */
    bool profile;             /* per-layer timing and output hooks (axc --profile) */
    /* llvm target: triple and cpu (NULL: the host's), textual IR instead of an object */
    const char *triple, *cpu;
    bool llvm_ir;
    bool blas;                /* float32 dense/matmul through cblas_sgemm (axc --blas=openblas) */
    bool kernels_only;        /* cuda/hip: the kernel source alone (-o m.cu, --emit=ptx|hsaco) */
    const struct pass_train_step *train; /* axc --train: models[0] is the training step (C target only) */
} cg_request;

/* A training step's state and its tensors (axc --train): pass_train_step,
 * built by passes/train_graph_step.c (train_graph.h); its header's layout: */
/* The state header's int64 words: the steps done, then Dropout's counter
 * (the seed, and the step in progress, 1-based: what `axc train` passes). */
enum { CG_TRAIN_HEADER_STEPS = 0, CG_TRAIN_HEADER_SEED = 1, CG_TRAIN_HEADER_STEP = 2 };
/* Then two doubles (their bytes in int64 words): the learning rate of the
 * next step and its momentum (SGD's; beta1 for Adam, AdamW and Lion), written
 * by state_init from the compiled settings and changed by the caller through
 * <name>_set_lr / <name>_set_momentum (schedules, docs/training.md). */
enum { CG_TRAIN_HEADER_LR = 3, CG_TRAIN_HEADER_MOMENTUM = 4 };
/* Float16 mixed precision (docs/training.md#mixed-precision): the loss scale
 * (a float in the word's first 4 bytes; 65536 at state_init), the finite
 * steps since it last changed (it doubles after 2000) and the steps skipped
 * on a non-finite gradient (the optimizer's own step count leaves them out). */
enum { CG_TRAIN_HEADER_SCALE = 5, CG_TRAIN_HEADER_GROWTH = 6, CG_TRAIN_HEADER_SKIPPED = 7 };
#define CG_TRAIN_SCALE_INIT 65536.0
#define CG_TRAIN_SCALE_INTERVAL 2000

/* The portable C99 backend (docs/cli.md#generated-c), for inference (the
 * C target's row hands a training request, req->train, to cg_c_train_emit).
 * Returns 0 or the number of errors reported (e.g. an op the backend cannot
 * emit). */
int cg_c_emit(const cg_request *req, ax_buf *c_out, ax_buf *h_out);
/* The checks and the header of cg_c_emit alone (the LLVM back end writes the
 * same header).  Returns 0 or the number of errors reported. */
int cg_c_header(const cg_request *req, ax_buf *h_out);

/* The CUDA and HIP back ends (cg_gpu.c, docs/gpu.md): host C99 with
 * the model's kernel source embedded, and its header; or, with
 * req->kernels_only, the kernel source alone. */
int cg_cuda_emit(const cg_request *req, ax_buf *out, ax_buf *hdr);
int cg_hip_emit(const cg_request *req, ax_buf *out, ax_buf *hdr);

/* Shared with the GPU back end (cg_gpu.c): the C expression of unary op on
 * arg (the runtime's formula, axrt_unary.h), a binary op's C operator and
 * forward()'s argument names. */
const char *cg_unary_text(ax_arena *a, int op, const char *arg, axrt_dtype dtype, double alpha);
/* lhs OP rhs for a BINARY_OP row: an infix operator, or libm's function
 * (powf, fmodf) for the dtype. */
const char *cg_binary_text(ax_arena *a, int op, const char *lhs, const char *rhs, axrt_dtype dtype);
void cg_argument_names(ir_graph *g, const char ***inputs, const char ***outputs);
/* The geometry of strided reads (cg_geom.c).  Element strides of operand
 * src aligned to n's dims, 0 where broadcast. */
void cg_broadcast_strides(const ir_node *src, const ir_node *n, int64_t *strides);
/* x's element strides along each dim of its transpose n (y dim i is x dim
 * perm[i]): a gather over n's shape reads x in n's order. */
void cg_transpose_strides(const ir_node *x, const ir_node *n, int64_t *strides);
/* torch.matmul's geometry of a @ b: a 1-D a is [1, k], a 1-D b is [k, 1];
 * the leading dims of both broadcast into a batch of `rank` dims (shape,
 * and each operand's element strides, 0 where broadcast). */
typedef struct cg_matmul_geometry {
    int64_t m, k, cols;
    int rank;
    int64_t batch[IR_MAX_RANK], a_strides[IR_MAX_RANK], b_strides[IR_MAX_RANK];
} cg_matmul_geometry;
cg_matmul_geometry cg_matmul_geometry_of(const ir_node *a, const ir_node *b);
/* The per-layer profile (cg_request.profile) every CPU printer builds, one
 * axrt_layer_profile per profiled node in execution order: whether node n
 * is one (live, not a source), how many g has, the layer's name as the
 * user wrote it (op%id for a node a pass made; characters a C literal
 * cannot hold become '_') and its op with what is fused into it. */
bool cg_is_profiled(const ir_node *n);
int cg_profiled_layers(const ir_graph *g);
const char *cg_layer_name(const ir_graph *g, int id);
const char *cg_layer_op(const ir_graph *g, const ir_node *n);
/* Whether parameter id is read only by int8 layers (--quantize=int8), which
 * read their own int8 copies: its float data is then left out. */
bool cg_param_only_quantised(const ir_graph *g, int id);
/* An int8 conv's parameters for the runtime (x NHWC, weights OIHW). */
axrt_conv2d_params cg_quant_conv_params(const ir_graph *g, const ir_node *n);
/* int8 layer n's weights in the layout the runtime's _packed kernels read
 * (axrt_dense_q8_pack, axrt_conv2d_q8_pack), *bytes of them, in the graph's arena. */
const int8_t *cg_quant_packed_weights(const ir_graph *g, const ir_node *n, size_t *bytes);
/* The axrt_requant.flags of an int8 dense or conv (AXRT_Q8_OUT_BYTES, AXRT_Q8_TFLITE). */
int cg_quant_rq_flags(const ir_quant *q);
/* n elements of esize bytes as string-literal lines of \xHH escapes,
 * little-endian (cg_c_literal.c). */
void cg_bytes_literal(ax_buf *out, const unsigned char *data, size_t n, size_t esize);

/* The LLVM back end (built only with AXC_HAVE_LLVM; cg_llvm*.c).
 * cg_llvm_emit writes an object file (or, with req->llvm_ir, textual IR)
 * into out and the C target's header into hdr. */
int cg_llvm_emit(const cg_request *req, ax_buf *out, ax_buf *hdr);
/* Whether LLVM knows triple (NULL: the host's) and cpu (NULL: generic):
 * 0 yes, 1 no target for triple, 2 no such CPU for it, 3 a big-endian
 * target (parameters are embedded little-endian).  Prints nothing. */
int cg_llvm_check_target(const char *triple, const char *cpu);
/* The targets this LLVM was built with, "a, b, c"; and its CPUs for
 * triple, printed to stderr by LLVM. */
const char *cg_llvm_target_names(ax_arena *a);
void cg_llvm_list_cpus(const char *triple);
/* Compiles g in-process with ORC LLJIT (the runtime's symbols come from
 * axc itself) and returns its descriptor, or NULL after reporting an
 * error; with profile, the code has the per-layer profile and hook
 * (<name>_profile, <name>_layer_hook), found with cg_llvm_jit_symbol
 * (NULL if absent).  *jit holds the code until cg_llvm_jit_free. */
typedef struct cg_jit cg_jit;
/* With blas, float32 dense and matmul call cblas_sgemm: the caller loads
 * OpenBLAS into the process first (dlopen RTLD_GLOBAL). */
const axrt_model *cg_llvm_jit(ir_graph *g, bool profile, bool blas, cg_jit **jit);
void *cg_llvm_jit_symbol(cg_jit *jit, const char *name);
void cg_llvm_jit_free(cg_jit *jit);

#endif
