/* cg_llvm.h — inside the LLVM back end (AXC_HAVE_LLVM only): building a
 * model into a module (cg_llvm.c), shared by the object/IR writer
 * (cg_llvm_emit.c) and the JIT (cg_llvm_jit.c).  The driver sees only
 * cg.h's LLVM-free entry points. */
#ifndef AX_CG_LLVM_H
#define AX_CG_LLVM_H

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "cg_target.h"

/* Adds model g (planned, kernels selected) to M, whose data layout is
 * layout: <model>_forward, its run wrapper and the <model>_model
 * descriptor; with profile, the per-layer profile too (<model>_profile,
 * <model>_layer_hook, calls of axc_profile_clock); with blas, float32
 * dense (unpacked weights: cg_select_blas) and matmul call cblas_sgemm.
 * M's target triple must be set.  Returns the number of errors reported (a
 * function LLVM's verifier rejects). */
int cg_llvm_add_model(LLVMModuleRef M, LLVMTargetDataRef layout, ir_graph *g, bool profile, bool blas);
/* 0 if fn verifies; else reports an internal error naming fn and returns 1. */
int cg_llvm_verify_function(ir_graph *g, LLVMValueRef fn);
/* Reports "internal: LLVM <what> failed: <why>" at g's location. */
void cg_llvm_failed(ir_graph *g, const char *what, const char *why);
/* Runs the new pass manager's default<O3> pipeline on M for tm; 0 or 1
 * (reported against g). */
int cg_llvm_optimise(ir_graph *g, LLVMModuleRef M, LLVMTargetMachineRef tm);

#endif
