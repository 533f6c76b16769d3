/* emu.h — runs the cuda target's kernel source on the CPU (tests only):
 * force-included when the .cu file is compiled as C++.  One block at a
 * time, its threads as coroutines of one OS thread (emu_rt.cpp: each runs
 * until its next __syncthreads or its end, then the next; a barrier is
 * passed when every thread of the block has reached it or finished);
 * __shared__ is a static (shared by the block's threads).  Enough for the
 * kernels axc writes (no warp intrinsics, no atomics). */
#include <math.h>
#include <string.h>
struct axk_dim3 { unsigned x, y, z; };
extern axk_dim3 threadIdx; /* the running coroutine's, set by the scheduler */
extern axk_dim3 blockIdx;
void axk_syncthreads(void);
#define __global__
#define __device__
#define __launch_bounds__(n)
#define __shared__ static
static inline void __syncthreads(void) { axk_syncthreads(); }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, sizeof f); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, sizeof u); return u; }
/* The tensor-core GEMM (AXRT_GPU_MATH=bf16) on the CPU: compiled with
 * -DAXK_EMU_MMA the kernels take their sm_80 path, each m16n8k16 mma.sync
 * computed by axk_mma_emu (emu_rt.cpp) from the warp's fragments as the
 * PTX ISA lays them out. */
void axk_mma_emu(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1);
#ifdef AXK_EMU_MMA
#define __CUDA_ARCH__ 800
#define AXK_MMA_BF16 1
#define AXK_MMA_16816(d, a0, a1, a2, a3, b0, b1) axk_mma_emu(d, a0, a1, a2, a3, b0, b1)
#endif
