/* cu_compat.h - what every .cu file of gpu/cuda includes first: the CUDA
 * headers under nvcc, or the CPU emulation of gpu/cuda/emu/cu_emu.h when
 * compiled with -DTERN_CUEMU (the tests' way to run every kernel on a
 * machine without an NVIDIA GPU). The two spellings kernels need that
 * differ between them:
 *
 *   CU_LAUNCH(kernel, grid, block, smem, stream, args...)   kernel<<<...>>>(args)
 *   CU_DYN_SMEM(type, name)                                 extern __shared__ type name[]
 *
 * and the namespace everything lives in (tern_cuda, or tern_cuemu in the
 * emulation, so that a test binary links both). Kernels use the CUDA
 * subset cu_emu.h provides; warp matrix products go through nvcuda::wmma
 * (its fragments' lane order is never assumed, so the emulation's own order
 * is as good a test as the hardware's). */
#ifndef TERN_CU_COMPAT_H
#define TERN_CU_COMPAT_H

#ifdef TERN_CUEMU
#include "gpu/cuda/emu/cu_emu.h"
#define tern_cu tern_cuemu
#define CU_LAUNCH(k, grid, block, smem, stream, ...)                                                             \
	::tern_cuemu::emu_launch((grid), (block), (smem), (stream), [=]() { k(__VA_ARGS__); })
#define CU_DYN_SMEM(type, name) type *name = (type *)::tern_cuemu::emu_dyn_smem()
#define CU_EMULATED 1
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#define tern_cu tern_cuda
#define CU_LAUNCH(k, grid, block, smem, stream, ...) k<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#define CU_DYN_SMEM(type, name)                                                                                  \
	extern __shared__ __align__(16) unsigned char cu_dyn_smem_[];                                          \
	type *name = (type *)cu_dyn_smem_
#define CU_EMULATED 0
#endif

#endif
