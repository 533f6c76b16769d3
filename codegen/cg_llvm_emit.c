/* cg_llvm_emit.c — `--target=llvm`: the module for every model of a request,
 * for --triple/--cpu (default: the host, generic CPU, so the object runs on
 * any machine of that architecture), optimised by LLVMRunPasses
 * (default<O3>) with that TargetMachine, written as an object file or as
 * textual IR; and the same header as the C target (cg_c_header).  ARM
 * *-eabihf triples get the hard-float ABI through cg_llvm_tm.cpp. */
#ifdef AXC_HAVE_LLVM

#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_llvm.h"
#include "cg_llvm_tm.h"

static void init_targets(void)
{
    static bool done;
    if (done)
        return;
    LLVMInitializeAllTargetInfos();
    LLVMInitializeAllTargets();
    LLVMInitializeAllTargetMCs();
    LLVMInitializeAllAsmPrinters();
    done = true;
}

/* The triple to use (an arena copy): req's or the host's. */
static const char *triple_of(ax_arena *a, const char *triple)
{
    if (triple)
        return triple;
    char *host = LLVMGetDefaultTargetTriple();
    const char *copy = ax_strdup(a, host);
    LLVMDisposeMessage(host);
    return copy;
}

/* Whether triple's data layout stores multi-byte values big-endian. */
static bool big_endian(const char *triple)
{
    LLVMTargetMachineRef tm = cg_llvm_create_tm(triple, "", "", 0);
    if (!tm)
        return false;
    LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
    const bool big = LLVMByteOrder(layout) == LLVMBigEndian;
    LLVMDisposeTargetData(layout);
    LLVMDisposeTargetMachine(tm);
    return big;
}

int cg_llvm_check_target(const char *triple, const char *cpu)
{
    init_targets();
    char *host = triple ? NULL : LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *err = NULL;
    int status = 0;
    if (LLVMGetTargetFromTriple(triple ? triple : host, &target, &err))
        status = 1;
    else if (cpu && *cpu && !cg_llvm_cpu_known(triple ? triple : host, cpu))
        status = 2;
    else if (big_endian(triple ? triple : host))
        status = 3;
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(host);
    return status;
}

const char *cg_llvm_target_names(ax_arena *a)
{
    init_targets();
    ax_buf b = {0};
    for (LLVMTargetRef t = LLVMGetFirstTarget(); t; t = LLVMGetNextTarget(t))
        ax_buf_printf(&b, "%s%s", b.len ? ", " : "", LLVMGetTargetName(t));
    const char *names = ax_strdup(a, b.data ? b.data : "");
    ax_buf_free(&b);
    return names;
}

void cg_llvm_list_cpus(const char *triple)
{
    init_targets();
    char *host = triple ? NULL : LLVMGetDefaultTargetTriple();
    fflush(stderr);
    cg_llvm_print_cpus(triple ? triple : host);
    LLVMDisposeMessage(host);
}

int cg_llvm_optimise(ir_graph *g, LLVMModuleRef M, LLVMTargetMachineRef tm)
{
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
    LLVMErrorRef e = LLVMRunPasses(M, "default<O3>", tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (!e)
        return 0;
    char *why = LLVMGetErrorMessage(e);
    cg_llvm_failed(g, "optimisation", why);
    LLVMDisposeErrorMessage(why);
    return 1;
}

/* The module as an object file or IR text into out; 0 or 1 (reported). */
static int write_module(const cg_request *req, LLVMModuleRef M, LLVMTargetMachineRef tm, ax_buf *out)
{
    if (req->llvm_ir) {
        char *text = LLVMPrintModuleToString(M);
        ax_buf_puts(out, text);
        LLVMDisposeMessage(text);
        return 0;
    }
    char *err = NULL;
    LLVMMemoryBufferRef obj = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, M, LLVMObjectFile, &err, &obj)) {
        cg_llvm_failed(req->models[0], "code generation", err);
        LLVMDisposeMessage(err);
        return 1;
    }
    ax_buf_put(out, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
    LLVMDisposeMemoryBuffer(obj);
    return 0;
}

static int build_and_write(const cg_request *req, const char *triple, LLVMTargetMachineRef tm, ax_buf *out)
{
    LLVMContextRef C = LLVMContextCreate();
    LLVMModuleRef M = LLVMModuleCreateWithNameInContext(req->source_name ? req->source_name : "axc", C);
    LLVMSetTarget(M, triple);
    LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
    char *layout_text = LLVMCopyStringRepOfTargetData(layout);
    LLVMSetDataLayout(M, layout_text);
    LLVMDisposeMessage(layout_text);
    int errors = 0;
    for (int m = 0; m < req->nmodels; m++)
        errors += cg_llvm_add_model(M, layout, req->models[m], req->profile, req->blas);
    if (!errors)
        errors = cg_llvm_optimise(req->models[0], M, tm);
    if (!errors)
        errors = write_module(req, M, tm, out);
    LLVMDisposeTargetData(layout);
    LLVMDisposeModule(M);
    LLVMContextDispose(C);
    return errors;
}

int cg_llvm_emit(const cg_request *req, ax_buf *out, ax_buf *hdr)
{
    int errors = cg_c_header(req, hdr);
    if (errors)
        return errors;
    if (cg_llvm_check_target(req->triple, req->cpu))
        ax_die("cg_llvm: target '%s' '%s' not checked by the driver", req->triple ? req->triple : "host",
               req->cpu ? req->cpu : "");
    const char *triple = triple_of(req->models[0]->ctx->arena, req->triple);
    /* Objects for an operating system are position-independent (PIE and
     * shared objects link them); bare-metal ones (-none-) are static. */
    const int pic = strstr(triple, "-none") == NULL;
    LLVMTargetMachineRef tm = cg_llvm_create_tm(triple, req->cpu ? req->cpu : "generic", "", pic);
    if (!tm)
        ax_die("cg_llvm: no target machine for '%s'", triple);
    errors = build_and_write(req, triple, tm, out);
    LLVMDisposeTargetMachine(tm);
    return errors;
}

#endif /* AXC_HAVE_LLVM */
