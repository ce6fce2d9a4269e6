/* SPDX-License-Identifier: MIT */
/* emit_cuda.h - the launcher files beside the PTX of a GPU target. */
#ifndef PATC_EMIT_CUDA_H
#define PATC_EMIT_CUDA_H

#include "../backend_ptx/ptx.h"
#include "../prune/prune.h"

typedef struct EmitCuda {
	const char *dir, *base;      /* DIR/BASE.bin, BASE.h, BASE_launch.c */
	const char *version, *source, *sm;
	const Program *prog;
	const PruneOp *pruned;       /* pruned[i] belongs to prog->ops[i] */
	const PtxKernelSpec *specs;  /* the compiled kernels, with their plans:
	                              * specs[i] op i's (for N a multiple of
	                              * its k.n_align), then others */
	int nspecs;
	const int *any;              /* any[i]: op i's kernel for other N (i
	                              * where specs[i] takes any N) */
} EmitCuda;

/* Writes, atomically each:
 *   BASE.bin       per op: the weights as its kernel takes them
 *                  (ptx_weights: the packed values, f32 on CUDA cores and
 *                  16-bit on tensor cores, each perforated loop's index
 *                  array (i32); on the sparse tensor cores the values in
 *                  the warps' fragment order and mma.sp metadata in place
 *                  of the last loop's index) and the masked dense weight
 *                  (f32, for checking), at offsets the launcher knows;
 *   BASE.h         the C interface: open/close, device memory helpers, and
 *                  per op BASE_OP_launch(g, X, C) and BASE_OP_dense(g, w);
 *   BASE_launch.c  its implementation over a dlopen'd libcuda.so.1. */
bool emit_cuda(const EmitCuda *e, char err[512]);

/* Whether op's launch under schedule s (NULL: patc's mapping) on target
 * sm is within CUDA's grid; false with err naming the op (an input error:
 * -o and --run refuse it alike). */
bool emit_cuda_grid_fits(const OpResult *op, const PtxSchedule *s, const char *sm, char err[512]);

/* -o DIR on GPU target sm: DIR/BASE.ptx with one kernel BASE_OP per op
 * (DIR/BASE.ll too with llvm) under scheds[i] (NULL: patc's mapping), the
 * launcher files (emit_cuda) and the packed weights (BASE.safetensors).
 * The kernels take any N at the launch, the op's N tuning their plan
 * (LowerKernel.n_runtime), but with fixed_n, where each is for its op's
 * N only.  Returns patc's exit code, err filled when not 0. */
int emit_cuda_program(const char *dir, const char *base, const char *version, const char *source, const char *sm,
                      const Program *prog, const PruneOp *pruned, const PtxSchedule *scheds, bool llvm, bool fixed_n,
                      char err[512]);

#endif
