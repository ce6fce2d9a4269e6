/* SPDX-License-Identifier: MIT */
/* lower.h - the lowering of a PatternIR to an LLVM function, shared by the
 * backends and specialised by hooks (Halide's CodeGen_LLVM / CodeGen_PTX_Dev).
 *
 * The kernel computes C = W_s X for one op, where W_s is the packed
 * Fractal-ELL weight (values plus one index array per perforated loop):
 *
 *   void NAME(const float *X, float *C, const float *values,
 *             const int32_t *const *index, int64_t n0, int64_t n1, int64_t N,
 *             const float *bias)
 *
 * for the columns n0 <= n < n1 of X and C (tokens; a caller splits them
 * among threads: columns never conflict).  Layout kn: X is K x N and C is
 * M x N; layout nk (PyTorch): X is N x K and C is N x M.  The kernel zeroes
 * its slice of C first (not where the op accumulates).  index[L] is the
 * index array of loop L (NULL for a dense loop).  N is read where the
 * kernel is compiled for N at run time (LowerKernel.n_runtime); a kernel
 * specialised on shape.N ignores it.  bias: M floats or NULL, the op's
 * epilogue (ir/op.h) applied at the end to the slice of C, with its
 * activation and accumulate (lower_epilogue_pass; a backend's own body
 * applies it itself).
 *
 * The loop nest is the PatternIR's, in storage order: every loop runs over
 * its storage extent (nnz when perforated), turns its digit into an
 * iteration through its index array, and adds the iteration's (m, k)
 * offsets, all of them compile-time constants of the pattern.  At the
 * innermost point one weight w = values[p] multiplies a row of X into a row
 * of C: that update is the backend's hook.
 */
#ifndef PATC_LOWER_H
#define PATC_LOWER_H

#include "../ir/op.h"
#include "../ir/pir.h"
#include "nest.h"     /* Nest: the nest's facts, LLVM-free */
#include "schedule.h" /* KernelSchedule, generated from schedule.def */

#include <llvm-c/Core.h>

typedef struct LowerKernel {
	const Pir *ir;
	/* M, K, N and the layout; shape.dtype is the element type of X and the
	 * weights where a backend computes in it (the NVPTX tensor cores: f16
	 * or bf16, accumulating in f32; C is f32).  PAT_F32: f32 everywhere. */
	OpShape shape;
	const char *name;
	int vector_width; /* floats per vector register, for backends that use it */
	KernelSchedule sched;
	/* N is the kernel's last argument, and shape.N only the size its
	 * choices are tuned for; false: the kernel is specialised on shape.N */
	bool n_runtime;
	/* n_runtime: the caller promises an N that is a multiple of n_align
	 * (0 or 1: any N), so that a backend may take paths that need N's rows
	 * aligned (the GPU's vector loads of X; the -o launcher picks a kernel
	 * by N) */
	int n_align;
} LowerKernel;

typedef struct LowerCtx {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMValueRef fn;
	LLVMValueRef X, C, values, index, n0, n1, bias; /* the parameters */
	LLVMValueRef N; /* i64: the N parameter, or shape.N where specialised
	                 * (kn: the row stride of X and C) */
	LLVMTypeRef i32, i64, f32, ptr;
	const LowerKernel *k;
	LLVMValueRef idx[PIR_MAX_LOOPS]; /* index arrays of perforated loops */
	const Nest *nest; /* the facts of k->ir's nest (nest.h), for the hooks */
	int split;        /* loops split..n-1 run along k only (n: none): nest->split */
	/* Optional digit ranges: loop i runs over storage digits lo[i] <=
	 * d < hi[i] (i64) instead of 0 <= d < nnz, e.g. one digit of a loop
	 * that a GPU spreads over thread blocks.  NULL: the whole loop. */
	LLVMValueRef lo[PIR_MAX_LOOPS], hi[PIR_MAX_LOOPS];
	void *backend; /* the backend's own state, for its hooks */
} LowerCtx;

/* A point of the nest: the storage prefix and the coordinates so far. */
typedef struct LowerPoint {
	LLVMValueRef row, m, k;
} LowerPoint;

typedef struct LowerHooks {
	/* Emits what comes before the nest; NULL: zero C's columns n0..n1. */
	void (*prologue)(LowerCtx *c);
	/* Optional: whether the body these hooks emit for k writes every
	 * element of C's columns n0..n1, the first write of each a store (the
	 * later ones add), so that C need not be zeroed first (with no
	 * prologue). */
	bool (*stores_c)(const LowerKernel *k);
	/* Optional: whether the body these hooks emit for k applies the op's
	 * epilogue itself at each element's last write (else lower_kernel
	 * applies it in a pass after the nest: lower_epilogue_pass). */
	bool (*fuses_epilogue)(const LowerKernel *k);
	/* Emits C[m, n] += w * X[k, n] for n0 <= n < n1 at the builder's
	 * position (m, k: i64; w: float), leaving the builder after it. */
	void (*update)(LowerCtx *c, LLVMValueRef m, LLVMValueRef k, LLVMValueRef w);
	/* Optional, layout kn only: when the innermost loops of the nest all
	 * run along k (a "k run": blocks, N:M, rows), the nest stops before
	 * them and this hook emits them itself for the point p (m fixed),
	 * from loop `first` on, e.g. accumulating a tile of C in registers. */
	void (*krun)(LowerCtx *c, const LowerPoint *p, int first);
	/* Optional, layout kn only: when the k run's outermost loop is dense
	 * (a dense run: every row keeps the same k; N:M: every row keeps some
	 * k of the same group) and the loop just outside it is a dense m loop,
	 * the nest stops before that m loop (`first`) and this hook emits it
	 * and the k run, so that several rows can share the rows of X. */
	void (*mrun)(LowerCtx *c, const LowerPoint *p, int first);
	/* Optional, layout kn only: when the innermost loop is a dense m loop
	 * and the loop above it runs along k only (tile_v, channel_in), the
	 * nest stops before that k loop (`first`) and this hook emits both,
	 * so that the rows under one k can share each row of X. */
	void (*minner)(LowerCtx *c, const LowerPoint *p, int first);
	/* Optional, with krun: emits all the k runs itself, `split` being the
	 * run's first loop (e.g. blocking them along k for locality); called
	 * instead of walking the nest to krun. */
	void (*krun_all)(LowerCtx *c, int split);
	/* Optional, with mrun: the same for the m runs (`first` as for mrun). */
	void (*mrun_all)(LowerCtx *c, int first);
	/* Optional: emits the whole body after the prologue and the loading
	 * of the index arrays, instead of the nest chosen above (a GPU maps
	 * loops to thread blocks itself, then walks the rest with
	 * lower_nest). */
	void (*body)(LowerCtx *c);
	/* The address space the index arrays are read through: 0 (generic)
	 * or, on NVPTX, 1 (global), so that their loads become ld.global
	 * (.nc where LLVM takes the invariance) and are known not to touch
	 * the shared memory a kernel writes. */
	unsigned index_space;
	void *backend; /* copied to LowerCtx.backend */
} LowerHooks;

/* Emits loops first..last-1 of the nest from point p (storage digits to
 * iterations through the index arrays, (m, k) offsets), calling `at` at
 * every innermost point with the point and the weight's storage index. */
typedef void (*LowerAt)(LowerCtx *c, const LowerPoint *p, void *arg);
void lower_nest(LowerCtx *c, int first, int last, const LowerPoint *p, LowerAt at, void *arg);
/* The same for `rows` points at once (at most LOWER_MAX_ROWS), e.g. rows of
 * W whose loops below have the same structure: each loop is emitted once,
 * and every point gets its own storage prefix, index loads and offsets;
 * `at` gets the points in order. */
enum { LOWER_MAX_ROWS = 8 };
typedef void (*LowerAtRows)(LowerCtx *c, const LowerPoint *ps, int rows, void *arg);
void lower_nest_rows(LowerCtx *c, int first, int last, const LowerPoint *ps, int rows, LowerAtRows at, void *arg);
/* Iteration index[loop][at] of perforated loop `loop` at storage row `at`
 * (i64), sign-extended to i64.  The load is marked invariant: no kernel
 * writes its index arrays, so their loads may be hoisted, merged and
 * reordered across any store. */
LLVMValueRef lower_index(LowerCtx *c, int loop, LLVMValueRef at);
/* Marks a load invariant (!invariant.load) and returns it. */
LLVMValueRef lower_invariant(LowerCtx *c, LLVMValueRef load);
/* The (m, k) offsets of iteration v (i64) of loop l. */
void lower_offsets(LowerCtx *c, const PirLoop *l, LLVMValueRef v, LLVMValueRef *dm, LLVMValueRef *dk);
/* An alloca in the function's entry block (promoted to registers). */
LLVMValueRef lower_entry_alloca(LowerCtx *c, LLVMTypeRef type, const char *name);

/* c's types in ctx (i32, i64, f32, ptr). */
void lower_types(LowerCtx *c, LLVMContextRef ctx);
/* Adds k's kernel function (the signature above, named k->name) to mod:
 * c's types, fn, parameters and N, and a builder at its entry block. */
void lower_function(LowerCtx *c, LLVMModuleRef mod, const LowerKernel *k);

/* ---- the epilogue (epilogue.c) ---- */

/* act(x) for x a float or a vector of floats, in f32 arithmetic and no
 * libm call (exp by a polynomial, erf by Abramowitz and Stegun 7.1.26). */
LLVMValueRef lower_act(LowerCtx *c, PatAct act, LLVMValueRef x);
/* The op's epilogue of sum: act(sum + bias + old), bias and old of sum's
 * type or NULL (none). */
LLVMValueRef lower_epilogue(LowerCtx *c, LLVMValueRef sum, LLVMValueRef bias, LLVMValueRef old);
/* Applies the epilogue to C's columns n0..n1, all M rows, holding W X (+
 * the old C where the op accumulates): C = act(C + bias), w floats a
 * vector.  Skipped at run time where bias is NULL and act none. */
void lower_epilogue_pass(LowerCtx *c, int w);

/* Adds the kernel function to mod and returns it. */
LLVMValueRef lower_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k,
                          const LowerHooks *hooks);

/* How lower_kernel walks k's nest with these hooks: the backend's own body,
 * m runs (rows sharing each X row), k runs, an m loop innermost, or point
 * by point. */
typedef enum LowerPath { LOWER_BODY, LOWER_MRUN, LOWER_KRUN, LOWER_MINNER, LOWER_POINT } LowerPath;
LowerPath lower_path(const LowerKernel *k, const LowerHooks *hooks);

/* A counted loop: for (iv = from; iv < to; iv++).  lower_loop_begin leaves
 * the builder in the body; lower_loop_end closes it and leaves the builder
 * after the loop. */
typedef struct LowerLoop {
	LLVMBasicBlockRef head, body, exit;
	LLVMValueRef iv, next_phi_src;
} LowerLoop;
LLVMValueRef lower_loop_begin(LowerCtx *c, LowerLoop *l, LLVMValueRef from, LLVMValueRef to,
                              const char *name);
void lower_loop_end(LowerCtx *c, LowerLoop *l);

#endif
