// cg_llvm_tm.cpp — the three things the LLVM 14 C API cannot do, for
// cg_llvm.c: a TargetMachine with the hard-float ABI (LLVMCreateTargetMachine
// leaves TargetOptions::FloatABIType at its default, so *-eabihf objects get
// the soft-float calling convention and no Tag_ABI_VFP_args), and checking or
// listing a target's CPU names.  Built only when llvm-config is present.
#include <llvm-c/TargetMachine.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <cstring>
#include <memory>
#include <string>

#include "cg_llvm_tm.h"

/* The *eabihf environments (eabihf, gnueabihf, musleabihf), from the text:
 * llvm::Triple parsed in this file misreads the environment with Debian's
 * LLVM 14 (it answered "unknown" for thumbv7em-none-eabihf). */
static bool is_hard_float(const char *triple)
{
    const char *env = strrchr(triple, '-');
    size_t len = env ? strlen(env) : 0;
    return len >= 7 && !strcmp(env + len - 6, "eabihf");
}

extern "C" LLVMTargetMachineRef cg_llvm_create_tm(const char *triple, const char *cpu,
                                                   const char *features, int pic)
{
    std::string err;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!target)
        return nullptr;
    llvm::TargetOptions opts;
    if (is_hard_float(triple))
        opts.FloatABIType = llvm::FloatABI::Hard;
    llvm::TargetMachine *tm = target->createTargetMachine(
        triple, cpu, features, opts, pic ? llvm::Reloc::PIC_ : llvm::Reloc::Static, llvm::None,
        llvm::CodeGenOpt::Aggressive);
    return reinterpret_cast<LLVMTargetMachineRef>(tm);
}

extern "C" int cg_llvm_cpu_known(const char *triple, const char *cpu)
{
    std::string err;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!target)
        return 0;
    std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
    return sti && sti->isCPUStringValid(cpu);
}

extern "C" void cg_llvm_print_cpus(const char *triple)
{
    std::string err;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
    if (target) /* "+cpuhelp" makes LLVM print the CPU table to stderr */
        std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, "", "+cpuhelp"));
}
