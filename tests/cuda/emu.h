/* emu.h — runs the cuda target's kernel source on the CPU (tests only):
 * force-included when the .cu file is compiled as C++.  One block at a
 * time, its threads as pthreads; __shared__ is a static (shared by the
 * block's threads), __syncthreads a barrier.  Enough for the kernels axc
 * writes (no warp intrinsics, no atomics). */
#include <math.h>
#include <pthread.h>
#include <string.h>
struct axk_dim3 { unsigned x, y, z; };
extern thread_local axk_dim3 threadIdx;
extern axk_dim3 blockIdx;
extern pthread_barrier_t axk_barrier;
#define __global__
#define __device__
#define __launch_bounds__(n)
#define __shared__ static
static inline void __syncthreads(void) { pthread_barrier_wait(&axk_barrier); }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
