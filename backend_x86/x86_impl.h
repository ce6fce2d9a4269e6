/* SPDX-License-Identifier: MIT */
/* x86_impl.h - what the x86 backend's files share inside backend_x86/: the
 * backend's choices for a kernel (plan.c), the pieces of IR the run kinds
 * build on (common.c), the k runs' tiles, which the m runs reuse (krun.c),
 * and the run kinds' hooks, which x86.c's hook table names (krun.c,
 * mrun.c), and the two nk kernels (nk.c, nkdot.c).  The calls go one
 * way: x86.c calls the others, mrun.c calls krun.c, common.c and plan.c,
 * krun.c calls common.c and plan.c, nk.c calls nkdot.c and nkdot.c nk.c's
 * transpose, and common.c and plan.c call none of them (plan.c hands x86_update_hooks to
 * lower_path, which reads only which hooks are set). */
#ifndef PATC_X86_IMPL_H
#define PATC_X86_IMPL_H

#include "x86.h"
#include "../lower/llvm_util.h"

/* ---- the backend's choices for a kernel (plan.c) ---- */

/* Below this reuse (x86_x_reuse) the blocks read X itself rather than a copy of
 * their rows, each copied element feeding only a few FMAs; but only where
 * X's rows spread over L1's sets (x86_x_rows_spread): rows 4 KiB apart share
 * one, and there the copy pays.  Measured in docs/design/x86-k-runs.md. */
enum { X86_XBUF_REUSE = 16, X86_L1_WAY_BYTES = 4096 };

/* LowerHooks.stores_c: whether each tile of C is stored at its first write
 * (x86_c_fresh_at) instead of added to a zeroed C. */
bool x86_stores_c(const LowerKernel *k);
/* LowerHooks.fuses_epilogue: whether each tile of C gets the op's epilogue
 * at its last write (x86_c_last_at): where every element of C is written
 * and the first write is known (x86_stores_c, accumulate or not), so is
 * the last. */
bool x86_epilogue_fused(const LowerKernel *k);
/* The stored weights per k of W: the FMAs each element of X feeds. */
double x86_x_reuse(const LowerKernel *k);
/* Whether X is worth copying into panels (X86Panel). */
bool x86_panel_pays(const LowerKernel *k);
/* Whether X's rows start in at least 16 different sets of L1. */
bool x86_x_rows_spread(const LowerKernel *k);
/* Vector accumulators per row of an m run's full tile. */
int x86_mrun_nacc(const LowerKernel *k);
/* The loop the m runs go across (small blocks, mrun.c), or -1. */
int x86_across_for(const LowerKernel *k);

/* ---- the IR the run kinds share (common.c) ---- */

/* i1: whether the point of storage prefix row over loops 0..upto-1 is the
 * first to write its rows of C. */
LLVMValueRef x86_c_fresh_at(LowerCtx *c, LLVMValueRef row, int upto);
/* i1: whether it is the last to write them (its k digits the last ones). */
LLVMValueRef x86_c_last_at(LowerCtx *c, LLVMValueRef row, int upto);
/* When a tile's write is its first (fresh: store, not add) and its last
 * (last: apply the epilogue); NULL for never. */
typedef struct X86When {
	LLVMValueRef fresh, last;
} X86When;
/* fresh where store (x86_stores_c), last where x86_epilogue_fused. */
X86When x86_c_when(LowerCtx *c, LLVMValueRef row, int upto, bool store);
/* Emits emit(c, add, epi, arg), adding or storing as w.fresh says, with
 * the epilogue where w.last says (x86_c_write). */
typedef void (*X86CWrite)(LowerCtx *c, bool add, bool epi, const void *arg);
void x86_c_write(LowerCtx *c, X86When w, X86CWrite emit, const void *arg);
/* *cp (+)= sum, vectors of type vty; with bias (a vector of vty, not
 * NULL), the op's epilogue of it: act(sum (+ *cp) + bias). */
void x86_c_update(LowerCtx *c, LLVMTypeRef vty, LLVMValueRef cp, LLVMValueRef sum, bool add, LLVMValueRef bias);
/* Row m's bias (0 where the kernel's bias is NULL) as a vector of width. */
LLVMValueRef x86_row_bias(LowerCtx *c, LLVMValueRef m, int width);
/* x broadcast to a vector of width floats (x itself for width 1). */
LLVMValueRef x86_splat(LowerCtx *c, LLVMValueRef x, int width);
/* k < K at p, or a constant true where the pattern pads no k. */
LLVMValueRef x86_k_in_range(LowerCtx *c, const LowerPoint *p);
/* The column tiles of each smaller power-of-two count of vectors after
 * the full tiles, from *from (x86_smaller_tiles). */
typedef void (*X86ColumnTile)(LowerCtx *c, int nacc, LLVMValueRef n, void *arg);
void x86_smaller_tiles(LowerCtx *c, LLVMValueRef from, int vl, int top, X86ColumnTile tile, void *arg);
/* X rows one storage digit of loop run (a loop along k) spans. */
double x86_run_rows_per_digit(const Pir *ir, int run);
/* Restricts loop l to block bi of db storage digits; its first digit. */
LLVMValueRef x86_digit_block(LowerCtx *c, int l, LLVMValueRef bi, int64_t db);

/* Panel-packed X.  Rows of X N floats apart fall into a few L1 sets.  The
 * rows one m run reads are a different few k for every block row, so
 * copying them per run (mrun_condense) copies all of X once per block row;
 * and the rows of a row-balanced block of digits are only about known, so
 * its per-block copy needs a fallback to X (costs: see
 * docs/design/x86-m-runs.md).  Where each X element feeds enough FMAs
 * (X86_PACK_REUSE or more kept weights per k), X is instead copied into
 * panels of one full tile's width (64 floats for the AVX-512 m runs and k
 * runs): the thread's columns once per call for the m runs, row k of panel
 * t at panel + (t K + k) width, so a tile's rows are contiguous; one
 * tile's panel before each tile for the k runs (per_tile).  The buffer
 * comes from malloc; without it the runs read X itself. */
typedef struct X86Panel {
	LLVMValueRef base; /* the panels (64-byte aligned), or null at run time */
	int64_t nt;        /* floats per panel row */
	/* one tile's panel, filled by x86_panel_tile for each tile in turn (the k
	 * runs: all of a thread's columns' panels fault in too many pages; see
	 * docs/design/x86-m-runs.md) */
	bool per_tile;
} X86Panel;

/* The full tile at column n in its panel, or in X without one. */
void x86_panel_tile(LowerCtx *c, const X86Panel *pn, LLVMValueRef n, LLVMValueRef *xt, LLVMValueRef *ldk);
/* Allocates and fills the panels; returns the malloc'd pointer. */
LLVMValueRef x86_panel_pack(LowerCtx *c, X86Panel *pn);
/* malloc(bytes + 64): the pointer into it aligned to 64 bytes, and in
 * *raw the block itself (NULL when out of memory; x86_free frees it). */
LLVMValueRef x86_malloc64(LowerCtx *c, LLVMValueRef bytes, LLVMValueRef *raw, const char *name);
/* free(raw): what x86_panel_pack or x86_malloc64 returned. */
void x86_free(LowerCtx *c, LLVMValueRef raw);

/* ---- the k runs (krun.c) ---- */

/* A tile of the k runs (and, through it, of the m runs' scalar columns and
 * perforated rows): its accumulators, vector type, fmuladd and X source. */
enum { X86_UNROLL = 8 };

typedef struct KrunArg {
	int width; /* floats per step: VL for the tiles, 1 for the leftovers */
	LLVMValueRef n;
	LLVMValueRef acc[X86_UNROLL]; /* row r's vector u: acc[r nacc + u] */
	int nacc;
	int rows; /* rows of W walked together (krun_tile_rows); 0 or 1: one */
	LLVMTypeRef vty;
	LLVMValueRef fma;
	LLVMTypeRef fma_ty;
	/* condensed X: rows klo.. in xbuf, ldx floats apart, holding either
	 * the tile's columns from 0 or (xcol) all columns at their own n */
	LLVMValueRef xbuf, klo;
	int64_t ldx;
	bool xcol;
	int64_t xrows; /* > 0: the buffer may miss a k (then X is read directly) */
	/* panel-packed X (x86_mrun_all): row k of the tile at xt + k * ldk
	 * (both chosen at run time: the panel, or X itself when none) */
	LLVMValueRef xt, ldk;
	X86When when; /* the tile's first and last writes (see x86_c_write) */
} KrunArg;

/* The blocks along k: X86_KBLOCK_DIGITS, the fewest digits of a block, is
 * the m runs' too (mrun.c); the rest, krun.c's "k runs blocked along k". */
enum { X86_KBLOCK_ROWS = 64, X86_KBLOCK_DIGITS = 16, X86_XSLACK = 16, X86_KROW_BYTES = 256 << 10 };

/* LowerAt: the weight at p into row 0's accumulators of a (a KrunArg). */
void x86_krun_point(LowerCtx *c, const LowerPoint *p, void *arg);
/* One pass of the k run at p from loop first for a's columns. */
void x86_krun_tile(LowerCtx *c, const LowerPoint *p, int first, KrunArg *a);
/* Declares llvm.fmuladd for a's vector type. */
void x86_krun_fma(LowerCtx *c, KrunArg *a);
/* The k run at p from loop first over all the columns. */
void x86_krun_at(LowerCtx *c, const LowerPoint *p, int first, X86When when);
/* LowerHooks.krun and .krun_all. */
void x86_krun(LowerCtx *c, const LowerPoint *p, int first);
void x86_krun_all(LowerCtx *c, int split);

/* ---- the m runs (mrun.c) ---- */

/* LowerHooks.mrun, .mrun_all and .minner. */
void x86_mrun(LowerCtx *c, const LowerPoint *p, int first);
void x86_mrun_all(LowerCtx *c, int first);
void x86_minner(LowerCtx *c, const LowerPoint *p, int first);

/* ---- layout nk (nk.c, nkdot.c) ---- */

/* void patc.transpose(src, lds, dst, ldd, rows, cols): dst[j ldd + i] =
 * src[i lds + j], made once per module (shape NULL); with shape, the
 * epilogue's patc.transpose.ACT[.acc](..., bias) for C's panels (nk.c). */
LLVMValueRef x86_transpose_fn(LLVMContextRef ctx, LLVMModuleRef mod, const OpShape *shape);

/* The nk kernels that read X and C in place (nkdot.c): the form of the
 * nest, the loop along k whose kept digits give W's columns, the dense m
 * loop of L contiguous rows under it, and the tile (w floats a vector, nv
 * vectors of rows, T tokens). */
typedef enum NkForm { NK_COLUMNS = 1, NK_BLOCKS } NkForm;
typedef struct NkPlan {
	NkForm form;
	int kloop;
	int64_t L, run; /* run: blocks, the dense k run's length; columns, 1 */
	int w, nv, T;
} NkPlan;
/* Whether k (layout nk, its vector_width set) has such a kernel; *pl its plan. */
bool x86_nkdot_plan(const LowerKernel *k, NkPlan *pl);
/* The kernel (named k->name); fallback: the kernel it runs where its
 * buffer cannot be allocated (blocks; NULL for columns). */
LLVMValueRef x86_nkdot(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k, const NkPlan *pl,
                       LLVMValueRef fallback);

#endif
