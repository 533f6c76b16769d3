/* test_llvm.c — the LLVM back end's guard against its own mistakes: a
 * function LLVM's verifier rejects is reported as an internal error naming
 * the function (docs/errors.md I-LLVM), never a crash.  Built without
 * AXC_HAVE_LLVM it checks nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cg.h"
#include "test_support.h"

#ifdef AXC_HAVE_LLVM
#include "cg_llvm.h"

static void assert_reported(ax_ctx *ctx, const char *message)
{
    const char *text = test_diagnostics(ctx);
    if (!strstr(text, message))
        fail_msg("expected \"%s\" in:\n%s", message, text);
}

/* A function whose only block has no terminator. */
static void test_verify_failure(void **state)
{
    (void)state;
    ax_ctx *ctx = test_ctx_new(NULL, NULL);
    ir_graph *g = ir_graph_new(ctx, "f", ax_noloc());
    LLVMContextRef C = LLVMContextCreate();
    LLVMModuleRef M = LLVMModuleCreateWithNameInContext("m", C);
    LLVMTypeRef type = LLVMFunctionType(LLVMInt32TypeInContext(C), NULL, 0, 0);
    LLVMValueRef good = LLVMAddFunction(M, "f_good", type);
    LLVMValueRef broken = LLVMAddFunction(M, "f_forward", type);
    LLVMBuilderRef B = LLVMCreateBuilderInContext(C);
    LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, good, "entry"));
    LLVMBuildRet(B, LLVMConstInt(LLVMInt32TypeInContext(C), 0, 0));
    LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(C, broken, "entry"));
    LLVMBuildAdd(B, LLVMConstInt(LLVMInt32TypeInContext(C), 1, 0), LLVMConstInt(LLVMInt32TypeInContext(C), 2, 0), "");
    assert_int_equal(cg_llvm_verify_function(g, good), 0);
    assert_int_equal(ctx->errors, 0);
    assert_int_equal(cg_llvm_verify_function(g, broken), 1);
    assert_reported(ctx, "internal: LLVM verification of function 'f_forward' failed: ");
    LLVMDisposeBuilder(B);
    LLVMDisposeModule(M);
    LLVMContextDispose(C);
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
}
#else
static void test_verify_failure(void **state)
{
    (void)state;
    skip();
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
