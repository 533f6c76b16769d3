/* train_graph.h — the training graphs (docs/training.md), built below the
 * driver so that `axc train`, `axc --train` and the smaller last batch share
 * them: the model's graph in training mode with the loss and the backward
 * appended (train_graph.c), and the generated C training step made from it
 * with its state laid out and its memory planned (train_graph_step.c).
 * The driver turns its options into pass_train_opts; the C back end prints
 * the step (codegen/cg_c_train.c). */
#ifndef AX_TRAIN_GRAPH_H
#define AX_TRAIN_GRAPH_H

#include "passes.h"

/* What the training graphs take from the command line. */
typedef struct pass_train_opts {
    const char *command;         /* "train" or "--train": how errors name the command */
    pass_loss_kind loss;
    axrt_optim optim;            /* the optimizer, its defaults applied */
    const char *optimizer_name;  /* as --optimizer spells it, for the step's summary */
    uint64_t seed;               /* Dropout's generator (the step's state_init) */
    double clip_norm, clip_value;   /* --clip-grad-norm / --clip-grad-value, 0: none */
    bool grad_exchange;          /* the split step too (docs/distributed.md) */
    bool blas;                   /* --blas=openblas: no room to pack weights in the arena */
    bool mem_report;             /* the sqrt(n) baseline is measured */
    size_t ram_budget;           /* --ram, 0: none */
} pass_train_opts;

/* The training graph: the model's graph in training mode
 * (pass_train_mode) with a `target` input, the loss (pass_loss) and the
 * backward (pass_grad) appended; its outputs are the model's output, the
 * BatchNorm running statistics' new values (1..nstats), the loss and each
 * gradient. */
typedef struct pass_trainer {
    ir_graph *g;
    int target;          /* the target input node */
    int loss;            /* output index of the loss */
    int nparams;
    int *params, *grads; /* node ids; grads[i] IR_NONE: no effect on the loss (skipped, as torch) */
    int *grad_out;       /* output index of grads[i], or -1 */
    int nstats;          /* outputs 1..nstats: BatchNorm running statistics (pass_train_mode) */
    int *stat_param;     /* the param node each of those outputs replaces */
    int64_t *dropout_counter; /* the Dropout counter's data (seed, step), or NULL */
    /* the interpreter loop's optimizer state (compiler/train.c allocates it;
     * pass_trainer_free frees it) */
    double **m, **v, *p, *gbuf;
} pass_trainer;
/* Builds t->g's training graph (t->g set, the rest zero); 0, or 1 with the
 * problem reported (located). */
int pass_train_graph(const pass_train_opts *o, pass_trainer *t);
void pass_trainer_free(pass_trainer *t);

/* One tensor of a training step's state (axc --train, docs/training.md):
 * a parameter the step graph reads from the caller's state, and what the
 * step writes back into it after node `after`: the optimizer's update from
 * gradient node `grad`, or a running statistic's new value `value`. */
typedef struct pass_train_tensor {
    int param;                /* node id in the step graph */
    int grad, value;          /* node ids, or IR_NONE */
    int after;                /* the update runs after this node (IR_NONE: no update) */
    int64_t offset;           /* byte offset of its values in the state */
    int64_t moments[2];       /* byte offsets of the optimizer's moments, or -1 */
    int fwd_param;            /* node id in the forward graph, or IR_NONE */
    /* mixed precision (a Float16 or BFloat16 parameter): byte offset of its
     * Float32 master copy (the moments are Float32 too), or -1 */
    int64_t master;
} pass_train_tensor;

/* The generated training step: the step graph is the caller's (its one
 * output the loss); this says what the back end needs besides it. */
typedef struct pass_train_step {
    ir_graph *forward;        /* the model in inference mode, planned; params from the state */
    const pass_train_tensor *tensors;
    int ntensors;
    size_t state_bytes;       /* 64-byte header (the step count, Dropout's seed and
                                 step: CG_TRAIN_HEADER_*), then the tensors */
    axrt_optim optim;         /* hyperparameters with the defaults applied */
    /* arena offsets (step, forward) of the room at the end of each arena where
     * a Float32 dense packs its weight from the state for the packed GEMM
     * (the weights change every step), or -1 */
    int64_t step_pack_offset, fwd_pack_offset;
    const char *summary;      /* "loss cross_entropy, optimizer adam (lr 0.001, ...)" */
    /* the step graph's Dropout counter (Int64 [2]: seed, step), read from the
     * state's header at CG_TRAIN_HEADER_SEED, or IR_NONE without Dropout */
    int dropout_counter;
    uint64_t seed;            /* --seed: Dropout's generator, written by state_init */
    /* axc train's --clip-grad-norm / --clip-grad-value (0: none): every
     * gradient scaled by clip_grad_norm_'s factor (the updates then run
     * after the step's last node) or clamped, before its update */
    double clip_norm, clip_value;
    bool grad_exchange;       /* --grad-exchange: also <name>_train_grads and _train_apply */
    /* a Float16 model's dynamic loss scaling (GradScaler's): the step graph's
     * backward seed, read as a float from the header (CG_TRAIN_HEADER_SCALE),
     * or IR_NONE (Float32, Float64, BFloat16: no scaling) */
    int loss_seed;
    /* --ram (for --mem-report): the step's arena before
     * rematerialisation (pack room included), the values recomputed, the
     * step's FLOPs (copies included) and what the copies add */
    size_t peak_without_remat;
    int recomputed;
    double flops, extra_flops;
    size_t sqrt_n_arena;      /* --mem-report: sqrt(n) checkpointing's arena and FLOPs */
    double sqrt_n_flops;
} pass_train_step;

/* Turns g (one model, built unfused) into the training step: the forward
 * copy for inference first (step->forward), then g becomes the training
 * graph whose one output is the loss, the state laid out, both graphs
 * planned (shared memory plan), fitted to --ram by rematerialisation and
 * verified.  0, or 1 with the problem reported (step->forward then NULL). */
int pass_train_step_graphs(const pass_train_opts *o, ir_graph *g, pass_train_step *step);
/* axc train under --ram or --mem-report: plans t->g as the generated step
 * would (a copy whose one output is the loss, updates placed), fits it to
 * --ram by rematerialisation, applies the same copies to t->g (t's node ids
 * renumbered) and prints the training lines with --mem-report.  0, or 1
 * (--ram unreachable: a located error). */
int pass_train_fit_ram(const pass_train_opts *o, pass_trainer *t);
/* --mem-report's training lines (docs/training.md): the step's peak
 * without and with rematerialisation, the extra FLOPs and what is
 * recomputed. */
void pass_train_print_remat(const ir_graph *step, const pass_train_step *train);

#endif
