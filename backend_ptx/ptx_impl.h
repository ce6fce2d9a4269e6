/* SPDX-License-Identifier: MIT */
/* ptx_impl.h - what the NVPTX backend's files share inside it: the device
 * operations of ptx_ops.c, which both mappings use; what the CUDA-core
 * mapping's files share (ptx_plan.c, ptx_body.c, ptx_stage.c); and the
 * tensor-core mapping's entry points (tc_plan.c, tc.c), which the
 * CUDA-core files call.  The tensor-core files (tc_impl.h) use ptx_ops.c
 * only, never the CUDA-core files. */
#ifndef PATC_PTX_IMPL_H
#define PATC_PTX_IMPL_H

#include "ptx.h"
#include "../lower/llvm_util.h"

/* The special register `name` (tid.x, ctaid.y, ...) as an i64; under
 * emulation, the global patc_emu_NAME (dots as underscores). */
LLVMValueRef ptx_sreg(LowerCtx *c, const char *name);

/* A call of the LLVM intrinsic `name` (not overloaded). */
LLVMValueRef ptx_call(LowerCtx *c, const char *name, LLVMValueRef *args, unsigned nargs);
/* The same for an overloaded intrinsic, with its overload types. */
LLVMValueRef ptx_call_typed(LowerCtx *c, const char *name, LLVMTypeRef *types, unsigned ntypes, LLVMValueRef *args,
                            unsigned nargs);

/* &C[m, col] (C[col, m] in layout nk). */
LLVMValueRef ptx_c_ptr(LowerCtx *c, LLVMValueRef m, LLVMValueRef col);
/* *p = v, or *p += v with an atomic where the plan adds into a zeroed C. */
void ptx_c_put(LowerCtx *c, LLVMValueRef p, LLVMValueRef v);
/* p[0..n-1] += v[0..n-1] (n: 2 or 4, p aligned to 4 n bytes) with one vector
 * red (PtxPlan's vred); emulated, n atomics, checked and counted as one
 * access. */
void ptx_c_add(LowerCtx *c, LLVMValueRef p, LLVMValueRef *v, int n);

/* The final value of C's element (m, col) whose sum of products is v, as
 * its one store writes it: the op's epilogue act(v + bias[m] + old C)
 * (ptx_plan_epilogue); with epi_after only the old C added where the op
 * accumulates, the rest left to the epilogue kernel. */
LLVMValueRef ptx_c_final(LowerCtx *c, LLVMValueRef m, LLVMValueRef col, LLVMValueRef v);

/* The smaller of two signed i64 values. */
LLVMValueRef ptx_min(LowerCtx *c, LLVMValueRef x, LLVMValueRef y);

/* Emulated: adds bytes (an i64) to the global patc_emu_copied[what], the
 * bytes the stage copies read from global memory (0: X, 1: the weights). */
void ptx_emu_count(LowerCtx *c, int what, LLVMValueRef bytes);

/* Emulated: checks an access of `bytes` (a power of two) at p, a pointer
 * or an i64 address, for what a GPU would fault on and the host would not:
 * where p is not aligned to bytes, the global patc_emu_bad[0] becomes
 * bytes; where p points into a block's shared memory (a GEP of one of its
 * buffers) or into X and the access does not lie inside it,
 * patc_emu_bad[1] becomes 1 (shared memory) or 2 (X), where ok (an i1;
 * NULL: always).  ptx_emulate reports either.  Returns the address the
 * host should access: p, or where it lies outside, the buffer's start (so
 * that the host reads and writes nothing it must not). */
LLVMValueRef ptx_emu_check(LowerCtx *c, LLVMValueRef p, unsigned bytes, LLVMValueRef ok);
/* Emulated: ptx_emu_check of an access of p (a pointer), and where it is
 * the block's shared memory, the access passed to the host's race check
 * (PtxEmuTouch).  Returns the address to access. */
LLVMValueRef ptx_emu_access(LowerCtx *c, LLVMValueRef p, unsigned bytes, bool write);
/* inst, a load or store of global or shared memory, aligned to `bytes`:
 * its alignment, and emulated, ptx_emu_access of its address (the host's
 * access left unaligned, so that it cannot fault before the check). */
void ptx_align(LowerCtx *c, LLVMValueRef inst, unsigned bytes);

/* The emulator's global `name` (made where missing, null), which the host
 * points to the function that stands in for a GPU instruction; a call of
 * that function, void(params). */
LLVMValueRef ptx_emu_hook(LowerCtx *c, const char *name);
void ptx_emu_call(LowerCtx *c, const char *name, LLVMTypeRef *params, LLVMValueRef *args, unsigned n);
/* Whether PATC_EMU_INJECT (tests only) plants `what` (ptx_ops.c lists them). */
bool ptx_emu_inject(const char *what);
/* Emulated cp.async of `bytes` from global src to the block's shared dst,
 * zeros where !ok (an i1; NULL: always copies): both checked
 * (ptx_emu_check; src where ok), then passed to the host (PtxEmuCp),
 * which lands it at the thread's cp.async.wait_group. */
void ptx_emu_cp(LowerCtx *c, LLVMValueRef dst, LLVMValueRef src, unsigned bytes, LLVMValueRef ok);
/* cp.async.commit_group, cp.async.wait_group pending (emulated, the
 * host's). */
void ptx_cp_commit(LowerCtx *c);
void ptx_cp_wait(LowerCtx *c, int pending);
/* bar.sync 0: the block's threads meet (emulated, at the host's, which
 * fails a block whose threads reach different numbers: a GPU would hang). */
void ptx_barrier(LowerCtx *c);

/* C's part of ptx_traffic: the bytes of C zeroed first where the plan needs
 * it, then stored once, or read and written by the atomics of each of the
 * adders to an element. */
double ptx_c_traffic(const LowerKernel *k, const PtxPlan *plan, int64_t adders);

/* ---- the CUDA-core mapping: ptx_plan.c, ptx_body.c, ptx_stage.c ----
 *
 * Calls go one way: ptx.c (the module) calls ptx_plan.c and ptx_body.c,
 * ptx_body.c calls ptx_stage.c and ptx_plan.c, ptx_stage.c calls
 * ptx_plan.c; all of them ptx_ops.c, and ptx_plan.c and ptx_body.c the
 * tensor-core mapping. */

/* The most rows and columns a thread takes (PtxSchedule's r and v). */
enum { PTX_MAX_R = 16, PTX_MAX_V = 8 };

/* Floats that pad each row of a stage's weights (wstage; see ptx_plan.c's
 * staging), so that the rows the two halves of a warp read lie in
 * different banks. */
enum { PTX_WSTAGE_PAD = 4 };

/* Floats per row of a stage of X (ptx_plan.c): the block's columns, in
 * layout nk padded by 4. */
int64_t ptx_stage_width(const LowerKernel *k, const PtxPlan *plan);

/* The CUDA-core kernel body's state, which ptx_body.c builds and passes
 * to ptx_stage.c's copies. */
typedef struct GpuArg {
	const PtxPlan *plan;
	int r, v;
	LLVMValueRef acc[PTX_MAX_R][PTX_MAX_V]; /* allocas */
	LLVMValueRef col[PTX_MAX_V];            /* clamped columns (xvec: of each group), i64 */
	LLVMValueRef mrow;                      /* alloca: the thread's first row */
	int64_t row_step, m_step;               /* the next row of the group */
	bool xvec, wk, wr;                      /* the vector loads (ptx_body.c) */
	bool cols4;                             /* a thread's columns in groups of 4 (xvec, staged) */
	int inner;                              /* wk: the loop walked 4 digits at a time */
	int u;                                  /* wk: which of the 4 digits */
	LLVMValueRef wv[PTX_MAX_R];             /* wk: the 4 weights of each row */
	LLVMValueRef zlo, zhi;                  /* the split loop's digits for this block */
	/* staging */
	LLVMValueRef xs;                        /* the shared buffers [2][rows][bx v] */
	LLVMValueRef ws;                        /* wstage: the weights' [2][r by][wrow], row r by + ty
	                                         * (wr: [2][u p][r by]) */
	int64_t wrow;                           /* wstage: floats a row of ws (its points, padded) */
	LLVMValueRef ty, glo;                   /* the thread's row set in the block, its first group digit */
	LLVMValueRef buf, j;                    /* the buffer computed on (i64), point counter (alloca) */
	bool ragged;                            /* the last stage may run past the loop's end */
	LLVMValueRef scol[PTX_MAX_V];           /* offsets of the thread's groups in a row */
	LLVMValueRef tid, base;                 /* thread in the block, the block's first column */
	LLVMValueRef fma;
	LLVMTypeRef fma_ty, v4;
} GpuArg;

/* The kernel body's point p before the first walked loop: copies stage s
 * (iterations olo + s stage_u .. of that loop, ohi its end) into buffer
 * buf of the shared memory, spread over the block's threads with cp.async
 * (ptx_stage.c). */
void ptx_stage_issue(LowerCtx *c, GpuArg *a, const LowerPoint *p, LLVMValueRef s, LLVMValueRef buf,
                     LLVMValueRef olo, LLVMValueRef ohi);

/* ---- the tensor-core mapping (tc_plan.c, tc.c), called by ptx_plan.c and ptx_body.c ---- */

/* ptx_traffic of a staged tensor-core plan (tc_plan.c). */
bool ptx_tc_traffic(const LowerKernel *k, const PtxPlan *plan, PtxTraffic *t);

/* The tensor-core kernel body (tc.c). */
void ptx_tc_body(LowerCtx *c);

#endif
