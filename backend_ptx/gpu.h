/* SPDX-License-Identifier: MIT */
/* gpu.h - one SpMM on the GPU: compile, upload, check against a float64
 * reference, and time beside cuBLAS.  Shared by `--run` and the GPU
 * benchmark. */
#ifndef PATC_GPU_H
#define PATC_GPU_H

#include "cuda.h"
#include "ptx.h"
#include "../prune/prune.h"

typedef struct GpuProblem {
	const Pir *ir;
	/* M, K, N, the layout, and the dtype: f16, bf16: the tensor cores
	 * where the pattern allows (X, the weights and cuBLAS's operands
	 * rounded to it, the reference too); f32: CUDA cores */
	OpShape shape;
	const float *values;   /* packed Fractal-ELL values */
	const PruneMask *mask; /* its index arrays */
	const float *dense;    /* the masked weight, M x K (reference and cuBLAS) */
	const float *x;        /* K x N (kn) or N x K (nk) */
	const char *sm;        /* the PTX target */
	PtxSchedule s;
	int reps;              /* timed runs (median) */
	bool cublas;           /* also time cuBLAS on the dense weight (sgemm; on
	                        * tensor cores GemmEx in the same 16-bit type) */
	int check_cols;        /* columns checked against float64 (0: 64) */
	double stop_us;        /* > 0: after the check, 3 timed runs; where their median is
	                        * over it, stop there (GpuResult.early) */
} GpuProblem;

typedef struct GpuResult {
	PtxPlan plan;
	double compile_ms;
	double kernel_us;
	double cublas_us;      /* < 0: not measured (note says why) */
	char note[CUDA_ERR_MAX];
	double rel_err;        /* ||C - ref|| / ||ref|| on a sample of columns */
	int64_t unwritten;     /* elements of C left poisoned (NaN) */
	bool early;            /* stopped early: kernel_us is the median of 3 runs */
	double flops;          /* the kernel's arithmetic: 2 N per stored value */
	double bytes;          /* the fewest bytes it moves: the weights and index
	                        * as uploaded, X once, C written once */
	double l2_bytes;       /* what its blocks move between L2 and the
	                        * multiprocessors (ptx_traffic); 0: not counted */
} GpuResult;

/* The device's two ceilings, measured as device/METHOD.md asks: the
 * bandwidth of a device-to-device copy (bytes read plus bytes written, a
 * second) and cuBLAS's rate on an 8192^3 product of random inputs in f32
 * (sgemm, no TF32) and in bf16 (GemmEx, f32 accumulation); medians of 7
 * runs, the L2 flushed before each.  A kernel's floor is the larger of its
 * FLOP over the rate of its dtype and its bytes over the bandwidth.  And
 * a third, for what the staged kernels move from L2 (ptx_traffic): the
 * rate at which the multiprocessors read a 16 MiB buffer that L2 holds
 * (gpu_l2_ptx: 64 passes over it, 16-byte loads that skip L1; the first
 * pass reads it from memory). */
typedef struct GpuCeilings {
	double copy_gbs, f32_tflops, bf16_tflops, l2_gbs;
} GpuCeilings;

/* The L2 read kernel, patc_l2_read(src, dst, passes): each of the grid's
 * T threads reads 16 bytes at 16 (t + j T) of src for j = 0..3, passes
 * times (ld.global.cg), and stores their xor at dst[t] (4 bytes).  Launched
 * as GPU_L2_BLOCKS x 256 threads over GPU_L2_BYTES. */
enum { GPU_L2_BLOCKS = 1024, GPU_L2_BYTES = 16 << 20, GPU_L2_PASSES = 64 };
extern const char gpu_l2_ptx[];
bool gpu_ceilings(Cuda *cu, GpuCeilings *c, char err[CUDA_ERR_MAX]);

/* false with err when something fails on the way (the driver, the PTX);
 * a wrong result is reported in r (rel_err, unwritten), not as failure. */
bool gpu_measure(Cuda *cu, const GpuProblem *p, GpuResult *r, char err[CUDA_ERR_MAX]);

/* The same without a GPU: the PTX compiled, then the kernel run on the
 * host emulator (ptx_emulate) and checked the same way; kernel_us is the
 * emulation's host time, which says nothing about a GPU, and cuBLAS is
 * not measured.  For testing what drives gpu_measure without a device. */
bool gpu_emulate(const GpuProblem *p, GpuResult *r, char err[CUDA_ERR_MAX]);

#endif
