/* ir_plan.h — a node's kernel-call plan: the runtime calls it becomes,
 * decided once after kernel selection (codegen/cg_plan.c) and read by every
 * printer of the CPU kernels: the C back end prints each call as text, the
 * LLVM back end builds the same call, --emit=ir shows it (ir_plan_print).
 *
 * A call is a kernel's full name and its typed arguments, in order.  An
 * argument is a node's storage (the printer knows where it lives: an
 * argument of forward(), a parameter, the arena at its offset), the arena at
 * an offset (a scratch buffer), a one-element operand's value, or a
 * constant: a size_t, an int, an axrt_act, an axrt_dtype, a compute-dtype
 * real, a double, or a constant array of int, int32_t, int64_t or float (a
 * runtime params struct is an array of ints) that the call reads through a
 * pointer; a node's storage may be read as int64_t (Dropout's counter).  An
 * int8 layer's calls (--quantize=int8, ir_quant) add the bytes of the arena
 * at an offset (a quantised operand, a receptive field), a float constant
 * (a scale), and the node's own int8 constants: its packed weights, its
 * axrt_requant, an entry of its axrt_ew_q8 table.  The types are what the
 * printers need to spell the call; nothing here is a choice. */
#ifndef AX_IR_PLAN_H
#define AX_IR_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ax.h"
#include "axrt.h"

typedef enum ir_arg_kind {
    IR_ARG_VALUE,      /* node's storage (node IR_NONE: a null pointer) */
    IR_ARG_ARENA,      /* (dtype *)(arena + value): a scratch buffer */
    IR_ARG_SCALAR,     /* the value of one-element node, in the compute dtype */
    IR_ARG_SIZE,       /* size_t value */
    IR_ARG_INT64,      /* int64_t value */
    IR_ARG_INT,        /* int value */
    IR_ARG_ACT,        /* axrt_act value, an int */
    IR_ARG_DTYPE,      /* axrt_dtype dtype, an int */
    IR_ARG_REAL,       /* real, a constant of the compute dtype */
    IR_ARG_INTS,       /* count ints at values (an array, or the struct `type`), by address */
    IR_ARG_INT64S,     /* count int64_t at values, by address */
    IR_ARG_INT32S,     /* count int32_t at values, by address */
    IR_ARG_SIZES,      /* count size_t at values, by address */
    IR_ARG_POINTERS,   /* count nodes' storage (node ids at values), an array of dtype
                          pointers, by address (a multi-result producer's results) */
    IR_ARG_BYTES,      /* (uint8_t *)(arena + value): count int8 values (q + 128); with a
                          name, a region of the node's scratch (LLVM builds it so) */
    IR_ARG_FLOAT,      /* float real */
    IR_ARG_QWEIGHTS,   /* node's int8 weights, packed (cg_quant_packed_weights) */
    IR_ARG_REQUANT,    /* &node's axrt_requant */
    IR_ARG_EW,         /* &node's axrt_ew_q8 entry value, of count (a concat: one per operand) */
    IR_ARG_FLOATS,     /* count floats, their bits at values (uint32), by address */
    IR_ARG_INT64_VALUE, /* node's storage read as const int64_t * (Dropout's counter: seed, step) */
    IR_ARG_DOUBLE,     /* double real (Dropout's probability) */
    /* a training step's own calls (ir_step_op) only: */
    IR_ARG_STATE,      /* (dtype *)(state + value), the caller's training state; value < 0: a null pointer */
    IR_ARG_STATE_BYTES,   /* (unsigned char *)state + value */
    IR_ARG_EMBEDDED,   /* node's values as compiled in (a parameter's initial values) */
    IR_ARG_OPTIM,      /* &the step's axrt_optim: the compiled hyperparameters, value 0: with lr
                          and momentum read from the state's header (CG_TRAIN_HEADER_LR, _MOMENTUM) */
    IR_ARG_LOCAL,      /* the step's variable name: "step" (1-based, int64_t), "opt_step" (the steps
                          the optimizer took, int64_t), "inv_scale" (1 / the loss scale, float) */
    IR_ARG_GRADS_IN,   /* (const dtype *)(the caller's gradient buffer + value) */
    IR_ARG_GRADS_OUT,  /* (unsigned char *)the caller's gradient buffer + value */
} ir_arg_kind;

typedef struct ir_arg {
    ir_arg_kind kind;
    int node;                 /* VALUE, SCALAR, QWEIGHTS, REQUANT, EW, INT64_VALUE */
    axrt_dtype dtype;         /* ARENA, POINTERS: the element type; DTYPE: the value */
    int64_t value;            /* ARENA: byte offset; SIZE, INT64, INT, ACT */
    double real;              /* REAL, FLOAT, DOUBLE */
    /* INTS, INT64S, INT32S, SIZES, POINTERS, FLOATS: the values, and the C name; for
     * INTS, type is the runtime's params struct (axrt_conv2d_params) or
     * NULL for int[]; own_block: the C printer declares it in an inner
     * block of its own (the int8 mean-pool's params, as first printed) */
    const int64_t *values;
    int count;
    const char *name, *type;
    bool own_block;
} ir_arg;

enum { IR_CALL_MAX_ARGS = 16 };

typedef struct ir_call {
    const char *kernel;       /* the function's name, e.g. "axrt_dense_packed_ep_f32" */
    bool status;              /* returns an int status; when not 0, forward() returns it and a
                                 training step NaN (cg_c_body.fail_return) */
    bool in_block;            /* the C printer puts it, with the constants of its run of
                                 in_block calls, in a block of its own */
    bool new_block;           /* an in_block call that starts a run (block) of its own */
    int wrap;                 /* the C printer breaks the line before this argument (0: none) */
    bool unless_aliased;      /* left out when its first two arguments are the same storage */
    ir_arg args[IR_CALL_MAX_ARGS];
    int nargs;
} ir_call;

/* A loop program (a fused elementwise node's, ir_fused_step): one loop nest
 * over the result, decided once by the plan (codegen/cg_plan_loop.c) and
 * spelled by each printer as it is — the C back end as a C loop, the LLVM
 * back end as IR — neither choosing anything about it.
 *
 * The nest runs loops dims[0..nloops) (size-1 dims dropped, neighbours
 * merged where every stride allows; at least one loop).  Each element runs
 * ops in order; op v defines temporary v of the program's dtype:
 *   LOAD    input[k] at sum over d of i_d * in_strides[k][d] (0: broadcast);
 *           the ops begin with one LOAD per input, in input order
 *   CONST   real
 *   UNARY   op (an ops.def UNARY_OP row: the runtime's formula) of arg[0],
 *           with alpha real
 *   BINARY  op (a BINARY_OP row) of arg[0], arg[1]
 *   DERIV   the derivative f' of the UNARY_OP row op (the runtime's
 *           AXRT_DERIV_<op>) at arg[0], with alpha real (a unary_grad's)
 * then temporary `store` is written to output at sum of i_d * out_strides[d]
 * (row-major over dims: the result is dense).  The loads, the store and the
 * operands are of dtype, the temporaries of compute: where they differ (a
 * half model's unary_grad computes in Float32) each load converts to
 * compute and the store rounds once back to dtype. */
enum { IR_LOOP_MAX_INPUTS = 16 };

typedef enum ir_loop_kind { IR_LOOP_LOAD, IR_LOOP_CONST, IR_LOOP_UNARY, IR_LOOP_BINARY, IR_LOOP_DERIV } ir_loop_kind;

typedef struct ir_loop_op {
    ir_loop_kind kind;
    int op;                   /* UNARY, BINARY, DERIV: the ops.def row */
    int arg[2];               /* LOAD: arg[0] the input; UNARY, BINARY, DERIV: earlier temporaries */
    double real;              /* CONST: the value; UNARY, DERIV: alpha */
} ir_loop_op;

typedef struct ir_loop {
    axrt_dtype dtype;         /* of the operands and the result */
    int nloops;
    int64_t dims[AXRT_MAX_RANK];
    int ninputs;
    int input[IR_LOOP_MAX_INPUTS];   /* node ids */
    int64_t in_strides[IR_LOOP_MAX_INPUTS][AXRT_MAX_RANK];
    const ir_loop_op *ops;
    int nops;
    int output, store;        /* node id; the temporary written */
    int64_t out_strides[AXRT_MAX_RANK];
    axrt_dtype compute;       /* of every temporary (dtype but for a half unary_grad's) */
} ir_loop;

typedef struct ir_plan {
    const ir_loop *loop;      /* a loop program, run before the calls (NULL: none) */
    ir_call *calls;
    int ncalls;
} ir_plan;

/* A training step's own statements (axc --train; codegen/cg_plan_step.c
 * decides them, the printers spell them): the updates of the parameters,
 * the running statistics' copies, the gradients' clipping, a Float16 step's
 * loss scaling, the split step's hand-offs, the state's initial values.
 *   CALL        call (a runtime update, a memcpy into the state or the
 *               caller's gradient buffer); note: what it does, for a comment
 *   READY       the caller's ready(user, offset, bytes), unless ready is NULL
 *   CLIP_VALUE  clip_grad_value_: node's values clamped in place to
 *               [-real, real] (a NaN stays NaN)
 *   CLIP_NORM   clip_grad_norm_: the L2 norm of each of nodes[0..count) in
 *               double, the norm of those, and each node with scaled[k]
 *               multiplied by real / (norm + 1e-6) when that is below 1
 *   LOSS_SCALE  GradScaler's dynamic loss scaling (docs/training.md): when
 *               every call of calls[0..count) (axrt_half_all_finite) returns
 *               true, inv_scale = 1 / the scale and the growth counter
 *               advances; else the scale halves and the step returns its
 *               loss, no parameter updated */
typedef enum ir_step_kind {
    IR_STEP_CALL,
    IR_STEP_READY,
    IR_STEP_CLIP_VALUE,
    IR_STEP_CLIP_NORM,
    IR_STEP_LOSS_SCALE,
} ir_step_kind;

typedef struct ir_step_op {
    ir_step_kind kind;
    ir_call call;             /* CALL */
    const char *note;         /* CALL: "update 'fc1.weight'" (a comment's text, C-safe), or NULL */
    int node;                 /* CLIP_VALUE */
    const int *nodes;         /* CLIP_NORM */
    const bool *scaled;       /* CLIP_NORM: false for a node sharing an earlier one's storage */
    const ir_call *calls;     /* LOSS_SCALE */
    int count;                /* CLIP_NORM, LOSS_SCALE */
    double real;              /* CLIP_VALUE, CLIP_NORM: the bound */
    int64_t offset, bytes;    /* READY */
} ir_step_op;

typedef struct ir_step_list {
    ir_step_op *ops;
    int nops;
} ir_step_list;

/* The step's plan: what runs after each node of the step graph (the whole
 * step's updates; with --grad-exchange the split step's hand-offs), the
 * nodes an update computes itself (a gradient matmul fused with its
 * update, axrt_matmul_optim_f32: not computed on their own), the split
 * step's apply and state_init's statements. */
typedef struct ir_step_plan {
    ir_step_list *after;      /* per node id */
    ir_step_list *after_split;   /* per node id, or NULL without --grad-exchange */
    bool *fused;              /* per node id */
    ir_step_list apply, init;
    int64_t *grad_offset;     /* per state tensor: its byte offset in the gradient buffer, or -1 */
    size_t grad_bytes;
} ir_step_plan;

/* Appends an argument of kind to c (node IR_NONE, the rest zero); dies past
 * IR_CALL_MAX_ARGS. */
ir_arg *ir_call_arg(ir_call *c, ir_arg_kind kind);

/* For --emit=ir: the loop program first, "      loop [DIMS] DTYPE" (then
 * " in COMPUTE" where the temporaries' dtype differs), then one
 * line per op ("        t3 = load %2 @(8, 1)", "t4 = exp(t3)", "t5 = 1",
 * "t6 = add(t4, t5)", a derivative "t2 = tanh'(t1)", "        store %7 @(8, 1) = t6"); then one line per
 * call: "      call kernel(arg, ...)", node storage as %id, a scalar operand's value as %id[0], the arena as
 * arena+OFFSET (int8 bytes: u8:arena+OFFSET), constants as values, arrays
 * as name{v, ...}, a node's int8 constants as q8_weights(%id),
 * requant(%id) and ew(%id)[k]; then
 * " -> status" and " unless aliased" where they apply. */
void ir_plan_print(const ir_plan *p, ax_buf *out);
/* For --train --emit=ir: each statement of a training step's list on a
 * line "      LABEL " (step, split, apply, init) and then "call kernel(arg, ...)  ; NOTE"
 * (the arguments as ir_plan_print writes them; the state as state+OFFSET,
 * the caller's gradients as grads+OFFSET, a parameter's compiled values as
 * embedded(%id), the optimizer as optim), "ready(grads+OFFSET, N bytes)",
 * "clip_value %id to C", "clip_norm(%id, %id shared, ...) to C" (a node
 * sharing an earlier one's storage scaled once) or "loss_scale unless
 * every is finite: call ..., call ...".  l may be NULL. */
void ir_step_list_print(const ir_step_list *l, const char *label, ax_buf *out);

#endif
