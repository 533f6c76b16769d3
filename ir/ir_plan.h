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
 * real, or a constant array of int, int32_t or int64_t (a runtime params
 * struct is an array of ints) that the call reads through a pointer.  An
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
} ir_arg_kind;

typedef struct ir_arg {
    ir_arg_kind kind;
    int node;                 /* VALUE, SCALAR, QWEIGHTS, REQUANT, EW */
    axrt_dtype dtype;         /* ARENA, POINTERS: the element type; DTYPE: the value */
    int64_t value;            /* ARENA: byte offset; SIZE, INT64, INT, ACT */
    double real;              /* REAL */
    /* INTS, INT64S, INT32S, SIZES, POINTERS: the values, and the C name; for
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
    bool status;              /* returns an int status; forward() returns it when not 0 */
    bool in_block;            /* the C printer puts it, with the constants of its run of
                                 in_block calls, in a block of its own */
    bool new_block;           /* an in_block call that starts a run (block) of its own */
    int wrap;                 /* the C printer breaks the line before this argument (0: none) */
    bool unless_aliased;      /* left out when its first two arguments are the same storage */
    ir_arg args[IR_CALL_MAX_ARGS];
    int nargs;
} ir_call;

typedef struct ir_plan {
    ir_call *calls;
    int ncalls;
} ir_plan;

/* One line per call for --emit=ir: "      call kernel(arg, ...)", node
 * storage as %id, a scalar operand's value as %id[0], the arena as
 * arena+OFFSET (int8 bytes: u8:arena+OFFSET), constants as values, arrays
 * as name{v, ...}, a node's int8 constants as q8_weights(%id),
 * requant(%id) and ew(%id)[k]; then
 * " -> status" and " unless aliased" where they apply. */
void ir_plan_print(const ir_plan *p, ax_buf *out);

#endif
