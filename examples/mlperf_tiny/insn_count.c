/* insn_count.c: a QEMU TCG plugin that counts the guest instructions executed
 * between two marker functions, the latency proxy of the MLPerf Tiny table
 * (README.md in this folder).
 *
 *   qemu-system-arm ... -plugin ./insn_count.so,begin=0xADDR,end=0xADDR
 *
 * begin/end: the addresses of examples/firmware/main.c's
 * axc_inference_begin and axc_inference_end (from arm-none-eabi-nm, Thumb bit
 * cleared), which the harness calls right before and right after the model's
 * run.  Counting starts after begin's first instruction and stops after
 * end's first; each time end runs, "insns N" (the count since begin) is
 * written to standard error.  The count is that of whole translation blocks
 * entered while counting, so it includes the few instructions of the call
 * sequence around the model's run (about ten) and is exact otherwise: TCG
 * executes every instruction of a block it enters, as nothing here faults.
 *
 * Debian ships QEMU with plugin support but without qemu-plugin.h, so the
 * few declarations used are written out below, from QEMU 7.2's plugin API
 * (version 1; include/qemu/qemu-plugin.h); the ones used have not changed
 * since QEMU 4.2. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t begin_addr, end_addr, count;
static int counting;

static void on_block(unsigned int vcpu, void *insns)
{
    (void)vcpu;
    if (counting) count += (uint64_t)(uintptr_t)insns;
}

static void on_begin(unsigned int vcpu, void *unused)
{
    (void)vcpu, (void)unused;
    count = 0;
    counting = 1;
}

static void on_end(unsigned int vcpu, void *unused)
{
    (void)vcpu, (void)unused;
    if (!counting) return;
    counting = 0;
    fprintf(stderr, "insns %" PRIu64 "\n", count);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        const uint64_t at = qemu_plugin_insn_vaddr(insn);
        if (at == begin_addr)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
        if (at == end_addr)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
}

/* Reads "begin=ADDR" and "end=ADDR" (any base strtoull accepts); the Thumb bit is cleared. */
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
                                                               int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "begin=", 6) == 0) begin_addr = strtoull(argv[i] + 6, NULL, 0) & ~1ull;
        else if (strncmp(argv[i], "end=", 4) == 0) end_addr = strtoull(argv[i] + 4, NULL, 0) & ~1ull;
        else {
            fprintf(stderr, "insn_count: unknown argument '%s' (begin=ADDR, end=ADDR)\n", argv[i]);
            return -1;
        }
    }
    if (!begin_addr || !end_addr) {
        fprintf(stderr, "insn_count: begin=ADDR and end=ADDR are both needed\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    return 0;
}
