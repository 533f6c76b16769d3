/* cg_llvm_tm.h — C entry points of cg_llvm_tm.cpp (what the LLVM C API
 * lacks).  Only with AXC_HAVE_LLVM. */
#ifndef AX_CG_LLVM_TM_H
#define AX_CG_LLVM_TM_H

#include <llvm-c/TargetMachine.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A TargetMachine for triple/cpu/features at -O3 whose float ABI follows the
 * triple (hard for *-eabihf); pic selects PIC, else static relocation.
 * NULL when LLVM has no target for triple. */
LLVMTargetMachineRef cg_llvm_create_tm(const char *triple, const char *cpu, const char *features,
                                       int pic);
/* Whether cpu names a processor of triple's target. */
int cg_llvm_cpu_known(const char *triple, const char *cpu);
/* Prints the processors of triple's target to stderr (LLVM's own list). */
void cg_llvm_print_cpus(const char *triple);

#ifdef __cplusplus
}
#endif
#endif
