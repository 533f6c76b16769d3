/* cg_llvm_jit.c — `axc run --jit`: one model compiled in-process by ORC
 * LLJIT for the host CPU (its own features), no C compiler involved.  The
 * module calls libaxrt, libm and memcpy by name; a definition generator
 * for the current process resolves them from axc itself, which links the
 * whole runtime and exports it (-rdynamic, see the Makefile), and
 * cblas_sgemm (--blas=openblas) from OpenBLAS, which the caller has loaded
 * with RTLD_GLOBAL. */
#ifdef AXC_HAVE_LLVM

#include <stdlib.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "cg_llvm.h"
#include "cg_llvm_tm.h"

struct cg_jit {
    LLVMOrcLLJITRef lljit;
};

/* Reports e (consumed) against g; returns 1 if there was one. */
static int failed(ir_graph *g, const char *what, LLVMErrorRef e)
{
    if (!e)
        return 0;
    char *why = LLVMGetErrorMessage(e);
    cg_llvm_failed(g, what, why);
    LLVMDisposeErrorMessage(why);
    return 1;
}

/* g's module for the JIT's triple and layout, optimised for this CPU. */
static int build_module(ir_graph *g, bool profile, bool blas, LLVMOrcLLJITRef lljit, LLVMContextRef C,
                        LLVMModuleRef *out)
{
    const char *triple = LLVMOrcLLJITGetTripleString(lljit);
    LLVMModuleRef M = LLVMModuleCreateWithNameInContext(g->name, C);
    LLVMSetTarget(M, triple);
    LLVMSetDataLayout(M, LLVMOrcLLJITGetDataLayoutStr(lljit));
    LLVMTargetDataRef layout = LLVMCreateTargetData(LLVMOrcLLJITGetDataLayoutStr(lljit));
    int errors = cg_llvm_add_model(M, layout, g, profile, blas);
    LLVMDisposeTargetData(layout);
    if (!errors) {
        char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
        LLVMTargetMachineRef tm = cg_llvm_create_tm(triple, cpu, features, 1);
        errors = tm ? cg_llvm_optimise(g, M, tm) : 1;
        if (!tm)
            cg_llvm_failed(g, "target lookup", triple);
        else
            LLVMDisposeTargetMachine(tm);
        LLVMDisposeMessage(cpu);
        LLVMDisposeMessage(features);
    }
    if (errors) {
        LLVMDisposeModule(M);
        return errors;
    }
    *out = M;
    return 0;
}

static int add_process_symbols(ir_graph *g, LLVMOrcLLJITRef lljit)
{
    LLVMOrcDefinitionGeneratorRef gen;
    LLVMErrorRef e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(lljit), NULL, NULL);
    if (failed(g, "JIT symbol search set-up", e))
        return 1;
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(lljit), gen);
    return 0;
}

const axrt_model *cg_llvm_jit(ir_graph *g, bool profile, bool blas, cg_jit **jit)
{
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    *jit = NULL;
    cg_select(g);
    if (blas)
        cg_select_blas(g);
    LLVMOrcLLJITRef lljit;
    if (failed(g, "JIT creation", LLVMOrcCreateLLJIT(&lljit, NULL)))
        return NULL;
    cg_jit *j = calloc(1, sizeof *j);
    if (!j)
        ax_die("out of memory");
    j->lljit = lljit;
    *jit = j;
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMModuleRef M = NULL;
    int errors = add_process_symbols(g, lljit) ||
                 build_module(g, profile, blas, lljit, LLVMOrcThreadSafeContextGetContext(tsc), &M);
    if (!errors) {
        LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(M, tsc);
        LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModule(lljit, LLVMOrcLLJITGetMainJITDylib(lljit), tsm);
        if (e)
            LLVMOrcDisposeThreadSafeModule(tsm);
        errors = failed(g, "JIT module set-up", e);
    }
    LLVMOrcDisposeThreadSafeContext(tsc);
    LLVMOrcExecutorAddress address = 0;
    if (!errors)
        errors = failed(g, "JIT compilation",
                        LLVMOrcLLJITLookup(lljit, &address, ax_sprintf(g->ctx->arena, "%s_model", g->name)));
    return errors ? NULL : (const axrt_model *)(uintptr_t)address;
}

void *cg_llvm_jit_symbol(cg_jit *jit, const char *name)
{
    LLVMOrcExecutorAddress address = 0;
    LLVMErrorRef e = LLVMOrcLLJITLookup(jit->lljit, &address, name);
    if (e)
        LLVMConsumeError(e);
    return e ? NULL : (void *)(uintptr_t)address;
}

void cg_llvm_jit_free(cg_jit *jit)
{
    if (!jit)
        return;
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(jit->lljit);
    if (e)
        LLVMConsumeError(e);
    free(jit);
}

#endif /* AXC_HAVE_LLVM */
