/* Minimal Cortex-M4F startup: vector table, .data copy, .bss clear, FPU enable,
 * then newlib's crt0 _start (rdimon: semihosting init, __libc_init_array, main, exit).
 * Taken unchanged in substance from the project's toolchain guide
 * (guides/toolchains/06-firmware/startup.c), which verified it on QEMU
 * mps2-an386: a fault exits QEMU with status 3, main's return value is
 * QEMU's exit status. */
#include <stdint.h>

extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;
extern void _start(void);

static void sh_write0(const char *s) { /* semihosting SYS_WRITE0 */
  register int r0 __asm__("r0") = 0x04;
  register const char *r1 __asm__("r1") = s;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
}

void Reset_Handler(void) {
  uint32_t *src = &_sidata, *dst = &_sdata;
  while (dst < &_edata) *dst++ = *src++;
  for (dst = &_sbss; dst < &_ebss;) *dst++ = 0;
  /* Enable CP10/CP11 (FPU) full access before any FP instruction runs. */
  *(volatile uint32_t *)0xE000ED88 |= (0xFu << 20);
  __asm__ volatile("dsb\n\tisb" ::: "memory");
  _start();
  for (;;) {}
}

/* semihosting SYS_EXIT_EXTENDED (0x20): {ADP_Stopped_ApplicationExit, code}. Called
 * directly (not via newlib's _exit, which only forwards the status once its
 * semihosting-feature probe has run; a fault before that would exit QEMU with 0). */
static void sh_exit(int code) {
  static volatile uint32_t block[2];
  block[0] = 0x20026u;
  block[1] = (uint32_t)code;
  register int r0 __asm__("r0") = 0x20;
  register volatile uint32_t *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  for (;;) {}
}

void Fault_Handler(void) {
  sh_write0("FAULT: hard fault / unexpected exception\n");
  sh_exit(3);
}

__attribute__((section(".isr_vector"), used)) void (*const vector_table[16])(void) = {
    (void (*)(void))&_estack, /* initial SP */
    Reset_Handler,            /* reset */
    Fault_Handler,            /* NMI */
    Fault_Handler,            /* HardFault */
    Fault_Handler,            /* MemManage */
    Fault_Handler,            /* BusFault */
    Fault_Handler,            /* UsageFault */
    0, 0, 0, 0,
    Fault_Handler,            /* SVCall */
    Fault_Handler,            /* DebugMon */
    0,
    Fault_Handler,            /* PendSV */
    Fault_Handler,            /* SysTick */
};
