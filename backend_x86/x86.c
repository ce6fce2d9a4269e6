/* SPDX-License-Identifier: MIT */
/* x86.c - the x86-64 backend; see x86.h.
 *
 * The update hook is a plain loop over the token columns; with X, C and
 * the weights marked noalias, LLVM's loop vectoriser turns it into the
 * host's widest FMA vectors.  LLJIT runs no optimisation itself, so the
 * module goes through LLVMRunPasses("default<O3>") first, with the target
 * machine it will run on.
 */
#define _POSIX_C_SOURCE 200809L
#include "x86.h"
#include "../lower/llvm_util.h"
#include "../support/pool.h"
#include "../support/util.h"

#include <llvm-c/Core.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C[m, n] += w * X[k, n] over the columns n0..n1 (contracted to FMA). */
static void x86_update(LowerCtx *c, LLVMValueRef m, LLVMValueRef k, LLVMValueRef w)
{
	const LowerKernel *kk = c->k;
	LowerLoop ln;
	LLVMValueRef n = lower_loop_begin(c, &ln, c->n0, c->n1, "n");
	LLVMValueRef xi, ci;
	if (kk->layout == PAT_LAYOUT_KN) {
		xi = ll_add(c, ll_mul(c, k, kk->N), n);
		ci = ll_add(c, ll_mul(c, m, kk->N), n);
	} else {
		xi = ll_add(c, ll_mul(c, n, kk->K), k);
		ci = ll_add(c, ll_mul(c, n, kk->M), m);
	}
	LLVMValueRef xp = LLVMBuildGEP2(c->b, c->f32, c->X, &xi, 1, "");
	LLVMValueRef cp = LLVMBuildGEP2(c->b, c->f32, c->C, &ci, 1, "");
	LLVMValueRef x = LLVMBuildLoad2(c->b, c->f32, xp, "x");
	LLVMValueRef acc = LLVMBuildLoad2(c->b, c->f32, cp, "c");
	LLVMValueRef prod = LLVMBuildFMul(c->b, w, x, "");
	LLVMSetFastMathFlags(prod, LLVMFastMathAllowContract);
	LLVMValueRef sum = LLVMBuildFAdd(c->b, acc, prod, "");
	LLVMSetFastMathFlags(sum, LLVMFastMathAllowContract);
	LLVMBuildStore(c->b, sum, cp);
	lower_loop_end(c, &ln);
}

/* ---- k runs: a tile of one row of C in registers ----
 *
 * When the innermost loops run along k only (blocks, N:M, rows), the
 * kernel walks them once per tile of U vectors of C's row m: each kept
 * weight broadcasts and FMAs into the tile's accumulators, and the tile
 * is added to C once at the end, instead of loading and storing C for
 * every weight.  Columns left over after the tiles get the same with one
 * scalar accumulator. */
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
	LLVMValueRef fresh; /* i1: the tile's first write (see c_write); NULL: never */
} KrunArg;

/* ---- writing C ----
 *
 * Where every element of C's columns is written by the body (no row of C
 * skipped), a tile's first write can store its sum instead of adding it to
 * C, and C needs no zeroing first (LowerHooks.stores_c: zeroing was 15% of
 * 8x8 blocks at 93.75% on 768/768/512).  That holds where each loop above
 * the point that writes a tile is a dense loop along m only, or a loop
 * along k only: then a tile is first written at the point whose k digits
 * above are all 0 (c_fresh_at), which the nest reaches before the others
 * of that tile, and a blocked walk along k (x86_krun_all) reaches in its
 * first block. */
static bool x86_stores_c(const LowerKernel *k);

/* Whether loops 0..upto-1 are each a dense loop along m only or a loop
 * along k only. */
static bool c_fresh_ok(const Pir *ir, int upto)
{
	for (int j = 0; j < upto; j++) {
		const PirLoop *l = &ir->loops[j];
		const bool has_m = pir_loop_has_axis(l, PIR_AXIS_M), has_k = pir_loop_has_axis(l, PIR_AXIS_K);
		if (has_m && (has_k || pir_loop_is_perforated(l)))
			return false;
	}
	return true;
}

/* Whether the point of storage prefix `row` over loops 0..upto-1 is the first
 * to write its rows of C: its digits of the loops along k are 0, and so is
 * the first digit of the block of any loop below that is walked in blocks
 * (c->lo: the m runs and k runs blocked along k). */
static LLVMValueRef c_fresh_at(LowerCtx *c, LLVMValueRef row, int upto)
{
	const Pir *ir = c->k->ir;
	LLVMValueRef f = LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, 0);
	for (int j = upto; j < ir->nloops; j++)
		if (c->lo[j] && !pir_loop_has_axis(&ir->loops[j], PIR_AXIS_M))
			f = LLVMBuildAnd(c->b, f, LLVMBuildICmp(c->b, LLVMIntEQ, c->lo[j], ll_i64(c, 0), ""), "fresh");
	for (int j = upto - 1; j >= 0; j--) {
		const PirLoop *l = &ir->loops[j];
		if (!pir_loop_has_axis(l, PIR_AXIS_M)) {
			const int64_t place = nest_kept(c->nest, j + 1, upto); /* of digit j in the prefix */
			LLVMValueRef d = place > 1 ? ll_udiv(c, row, place) : row;
			d = ll_urem(c, d, l->nnz);
			f = LLVMBuildAnd(c->b, f, LLVMBuildICmp(c->b, LLVMIntEQ, d, ll_i64(c, 0), ""), "fresh");
		}
	}
	return f;
}

/* Emits emit(c, add, arg): with add, C += the sums; without, C = them.
 * fresh NULL: add; a constant: that; else a branch on it. */
typedef void (*CWrite)(LowerCtx *c, bool add, const void *arg);
static void c_write(LowerCtx *c, LLVMValueRef fresh, CWrite emit, const void *arg)
{
	if (!fresh || LLVMIsAConstantInt(fresh)) {
		emit(c, !fresh || !LLVMConstIntGetZExtValue(fresh), arg);
		return;
	}
	LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cstore"),
	                  ad = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cadd"),
	                  nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cwritten");
	LLVMBuildCondBr(c->b, fresh, st, ad);
	LLVMPositionBuilderAtEnd(c->b, st);
	emit(c, false, arg);
	LLVMBuildBr(c->b, nx);
	LLVMPositionBuilderAtEnd(c->b, ad);
	emit(c, true, arg);
	LLVMBuildBr(c->b, nx);
	LLVMPositionBuilderAtEnd(c->b, nx);
}

/* *cp (+)= sum, vectors of type vty. */
static void c_update(LowerCtx *c, LLVMTypeRef vty, LLVMValueRef cp, LLVMValueRef sum, bool add)
{
	if (add) {
		LLVMValueRef cv = LLVMBuildLoad2(c->b, vty, cp, "");
		LLVMSetAlignment(cv, 4);
		sum = LLVMBuildFAdd(c->b, cv, sum, "");
	}
	LLVMSetAlignment(LLVMBuildStore(c->b, sum, cp), 4);
}

static LLVMValueRef splat(LowerCtx *c, LLVMValueRef x, int width)
{
	if (width == 1)
		return x;
	LLVMTypeRef vty = LLVMVectorType(c->f32, (unsigned)width);
	LLVMValueRef v = LLVMBuildInsertElement(c->b, LLVMGetUndef(vty), x, LLVMConstInt(c->i32, 0, 0), "");
	return LLVMBuildShuffleVector(c->b, v, LLVMGetUndef(vty),
	                              LLVMConstNull(LLVMVectorType(c->i32, (unsigned)width)), "splat");
}

/* k < K, or true where the pattern pads no k (then the test folds away:
 * the k of an indexed loop is otherwise opaque to LLVM). */
static LLVMValueRef k_in_range(LowerCtx *c, const LowerPoint *p)
{
	if (c->k->ir->ext[PIR_AXIS_K] == c->k->K)
		return LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, 0);
	return LLVMBuildICmp(c->b, LLVMIntSLT, p->k, ll_i64(c, c->k->K), "");
}

/* The alignment of a vector of vl floats in a k run's buffer of X: the
 * buffer is 64-byte aligned and its vectors lie a multiple of vl floats
 * into it (a row of the tile's vectors apart), so the largest power of two
 * that divides 4 vl bytes, at most 64. */
static unsigned xbuf_align(int vl)
{
	const unsigned b = 4u * (unsigned)(vl & -vl);
	return b < 64 ? b : 64;
}

/* The weight at p into the accumulators of row r. */
static void krun_point_at(LowerCtx *c, const LowerPoint *p, KrunArg *a, int r)
{
	const LowerKernel *k = c->k;
	/* a padding column of W: its weight is 0, and X has no such row */
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kpoint");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kpad");
	LLVMBuildCondBr(c->b, k_in_range(c, p), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	LLVMValueRef row = p->row;
	LLVMValueRef w = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, c->values, &row, 1, ""), "w");
	LLVMValueRef wv = splat(c, w, a->width);
	LLVMValueRef xs = a->xt ? a->xt : a->xbuf ? a->xbuf : c->X;
	LLVMValueRef base = a->xt     ? LLVMBuildNSWMul(c->b, p->k, a->ldk, "")
	                    : a->xbuf ? ll_mul(c, LLVMBuildNSWSub(c->b, p->k, a->klo, ""), a->ldx)
	                              : ll_add(c, ll_mul(c, p->k, k->N), a->n);
	if (!a->xt && a->xbuf && a->xcol)
		base = ll_add(c, base, a->n);
	if (!a->xt && a->xbuf && a->xrows > 0) { /* outside the buffer's rows: X itself */
		LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntULT, LLVMBuildSub(c->b, p->k, a->klo, ""), ll_i64(c, a->xrows), "");
		LLVMValueRef direct = ll_add(c, ll_mul(c, p->k, k->N), a->n);
		xs = LLVMBuildSelect(c->b, in, a->xbuf, c->X, "xs");
		base = LLVMBuildSelect(c->b, in, base, direct, "xat");
	}
	for (int u = 0; u < a->nacc; u++) {
		LLVMValueRef at = ll_add(c, base, ll_i64(c, (int64_t)u * a->width));
		LLVMValueRef x = LLVMBuildLoad2(c->b, a->vty, LLVMBuildGEP2(c->b, c->f32, xs, &at, 1, ""), "x");
		LLVMSetAlignment(x, a->xbuf && !a->xrows && !a->xcol ? xbuf_align(a->width) : 4);
		LLVMValueRef acc = LLVMBuildLoad2(c->b, a->vty, a->acc[r * a->nacc + u], "");
		LLVMValueRef args[3] = {wv, x, acc};
		LLVMBuildStore(c->b, LLVMBuildCall2(c->b, a->fma_ty, a->fma, args, 3, ""), a->acc[r * a->nacc + u]);
	}
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

static void krun_point(LowerCtx *c, const LowerPoint *p, void *arg) { krun_point_at(c, p, arg, 0); }

static void krun_points(LowerCtx *c, const LowerPoint *ps, int rows, void *arg)
{
	for (int r = 0; r < rows; r++)
		krun_point_at(c, &ps[r], arg, r);
}

typedef struct KrunWrite {
	const LowerPoint *p;
	const KrunArg *a;
	int r; /* the row's accumulators */
} KrunWrite;

static void krun_write(LowerCtx *c, bool add, const void *arg)
{
	const KrunWrite *w = arg;
	const KrunArg *a = w->a;
	LLVMValueRef base = ll_add(c, ll_mul(c, w->p->m, c->k->N), a->n);
	for (int u = 0; u < a->nacc; u++) {
		LLVMValueRef at = ll_add(c, base, ll_i64(c, (int64_t)u * a->width));
		c_update(c, a->vty, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""),
		         LLVMBuildLoad2(c->b, a->vty, a->acc[w->r * a->nacc + u], ""), add);
	}
}

/* One pass of the k run for columns n.. n + width * nacc - 1. */
static void krun_tile(LowerCtx *c, const LowerPoint *p, int first, KrunArg *a)
{
	const LowerKernel *k = c->k;
	LLVMValueRef zero = LLVMConstNull(a->vty);
	for (int u = 0; u < a->nacc; u++)
		LLVMBuildStore(c->b, zero, a->acc[u]);
	lower_nest(c, first, k->ir->nloops, p, krun_point, a);
	KrunWrite w = {p, a, 0};
	c_write(c, a->fresh, krun_write, &w);
}

/* The same for a->rows rows at once (points ps, real rows): the k run's
 * loops are emitted once, with a->rows x a->nacc accumulators, so that the
 * rows' FMA chains are independent where each row alone has few vectors. */
static void krun_tile_rows(LowerCtx *c, const LowerPoint *ps, int first, KrunArg *a)
{
	LLVMValueRef zero = LLVMConstNull(a->vty);
	for (int u = 0; u < a->rows * a->nacc; u++)
		LLVMBuildStore(c->b, zero, a->acc[u]);
	lower_nest_rows(c, first, c->k->ir->nloops, ps, a->rows, krun_points, a);
	for (int r = 0; r < a->rows; r++) {
		KrunWrite w = {&ps[r], a, r};
		c_write(c, a->fresh, krun_write, &w);
	}
}

/* Declares llvm.fmuladd for a's vector type. */
static void krun_fma(LowerCtx *c, KrunArg *a)
{
	unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
	a->fma = LLVMGetIntrinsicDeclaration(c->mod, id, &a->vty, 1);
	a->fma_ty = LLVMIntrinsicGetType(c->ctx, id, &a->vty, 1);
}

/* Emits `tile(c, nacc, n, arg)` for the columns n.. n + vl nacc - 1 once
 * for each nacc = top/2, top/4, .., 1 whose tile still fits before n1,
 * starting at *from (an i64 alloca) and advancing it. */
typedef void (*ColumnTile)(LowerCtx *c, int nacc, LLVMValueRef n, void *arg);
static void smaller_tiles(LowerCtx *c, LLVMValueRef from, int vl, int top, ColumnTile tile, void *arg)
{
	for (int nacc = top / 2; vl > 1 && nacc >= 1; nacc /= 2) {
		const int64_t w = (int64_t)vl * nacc;
		LLVMValueRef n = LLVMBuildLoad2(c->b, c->i64, from, "from");
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "restv");
		LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "restvd");
		LLVMValueRef fits = LLVMBuildICmp(c->b, LLVMIntSLE, ll_add(c, n, ll_i64(c, w)), c->n1, "");
		LLVMBuildCondBr(c->b, fits, body, next);
		LLVMPositionBuilderAtEnd(c->b, body);
		tile(c, nacc, n, arg);
		LLVMBuildStore(c->b, ll_add(c, n, ll_i64(c, w)), from);
		LLVMBuildBr(c->b, next);
		LLVMPositionBuilderAtEnd(c->b, next);
	}
}

typedef struct KrestArg {
	const LowerPoint *p;
	int first, vl;
	LLVMValueRef fresh;
} KrestArg;

static void krest_tile(LowerCtx *c, int nacc, LLVMValueRef n, void *arg)
{
	const KrestArg *ka = arg;
	KrunArg t = {.width = ka->vl, .nacc = nacc, .n = n, .vty = LLVMVectorType(c->f32, (unsigned)ka->vl),
	             .fresh = ka->fresh};
	krun_fma(c, &t);
	for (int u = 0; u < nacc; u++)
		t.acc[u] = lower_entry_alloca(c, t.vty, "racc");
	krun_tile(c, ka->p, ka->first, &t);
}

/* The columns from *from (an i64 alloca) to n1 after the full tiles: one
 * pass for each smaller power-of-two count of vectors that still fits
 * (at most one each), then one scalar pass per column left. */
static void krun_rest(LowerCtx *c, const LowerPoint *p, int first, int vl, int unroll,
                      LLVMValueRef from, LLVMValueRef fresh)
{
	KrestArg ka = {p, first, vl, fresh};
	smaller_tiles(c, from, vl, unroll, krest_tile, &ka);
	KrunArg r = {.width = 1, .nacc = 1, .vty = c->f32, .fresh = fresh};
	krun_fma(c, &r);
	r.acc[0] = lower_entry_alloca(c, c->f32, "acc1");
	LowerLoop lr;
	r.n = lower_loop_begin(c, &lr, LLVMBuildLoad2(c->b, c->i64, from, "from"), c->n1, "rest");
	krun_tile(c, p, first, &r);
	lower_loop_end(c, &lr);
}

/* The full tile of a k run: as many vector accumulators as registers
 * allow, 8 of 32 (AVX-512) or 4 of 16.  Returns the tile's columns. */
static int64_t krun_full_tile(LowerCtx *c, KrunArg *t)
{
	const int vl = c->k->vector_width > 1 ? c->k->vector_width : 1;
	const int nacc = vl >= 16 ? 8 : 4, want = c->k->sched.col_tiles;
	*t = (KrunArg){.width = vl, .nacc = want > 0 && want < nacc ? want : nacc};
	t->vty = vl > 1 ? LLVMVectorType(c->f32, (unsigned)vl) : c->f32;
	krun_fma(c, t);
	for (int u = 0; u < t->nacc; u++)
		t->acc[u] = lower_entry_alloca(c, t->vty, "acc");
	return (int64_t)vl * t->nacc;
}

/* The k run at p from loop `first`, over all the columns; fresh: see
 * KrunArg. */
static void krun_at(LowerCtx *c, const LowerPoint *p, int first, LLVMValueRef fresh)
{
	KrunArg t;
	const int64_t nt = krun_full_tile(c, &t);
	t.fresh = fresh;
	const int vl = t.width, unroll = t.nacc;
	LLVMValueRef span = LLVMBuildNSWSub(c->b, c->n1, c->n0, "");
	LLVMValueRef tiles = LLVMBuildSDiv(c->b, span, ll_i64(c, nt), "tiles");
	LowerLoop lt;
	LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "tile");
	t.n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
	krun_tile(c, p, first, &t);
	lower_loop_end(c, &lt);
	/* the columns left over */
	LLVMValueRef from = lower_entry_alloca(c, c->i64, "from");
	LLVMBuildStore(c->b, ll_add(c, c->n0, ll_mul(c, tiles, nt)), from);
	krun_rest(c, p, first, vl, unroll, from, fresh);
}

static void x86_krun(LowerCtx *c, const LowerPoint *p, int first) { krun_at(c, p, first, NULL); }

/* X rows one storage digit of loop `run` (a loop along k) spans: the loops
 * below it along k, on average over its kept digits.  The loops along m
 * below it (the m runs under K0 of blocks) add no rows of X. */
static double run_rows_per_digit(const Pir *ir, int run)
{
	const PirLoop *outer = &ir->loops[run];
	double span = (double)outer->len / (double)outer->nnz;
	for (int i = run + 1; i < ir->nloops; i++)
		if (!pir_loop_has_axis(&ir->loops[i], PIR_AXIS_M))
			span *= (double)ir->loops[i].len;
	return span;
}

/* Restricts loop l to block bi of db storage digits (the last block ends at
 * the loop's nnz); returns the block's first digit. */
static LLVMValueRef digit_block(LowerCtx *c, int l, LLVMValueRef bi, int64_t db)
{
	const int64_t nnz = c->k->ir->loops[l].nnz;
	LLVMValueRef lo = LLVMBuildNSWMul(c->b, bi, ll_i64(c, db), "blo");
	LLVMValueRef hi = ll_add(c, lo, ll_i64(c, db));
	c->lo[l] = lo;
	c->hi[l] = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, hi, ll_i64(c, nnz), ""), hi, ll_i64(c, nnz), "bhi");
	return lo;
}

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
	/* one tile's panel, filled by panel_tile for each tile in turn (the k
	 * runs: all of a thread's columns' panels fault in too many pages; see
	 * docs/design/x86-m-runs.md) */
	bool per_tile;
} X86Panel;

enum { X86_PACK_REUSE = 32 };

/* Copies the K x nt floats of X from column col into dst, row k at dst + k nt. */
static void panel_copy(LowerCtx *c, LLVMValueRef dst, LLVMValueRef col, int64_t nt)
{
	const LowerKernel *k = c->k;
	LowerLoop lk, lj;
	LLVMValueRef kk = lower_loop_begin(c, &lk, ll_i64(c, 0), ll_i64(c, k->K), "pk");
	LLVMValueRef src = ll_add(c, ll_mul(c, kk, k->N), col);
	LLVMValueRef to = ll_mul(c, kk, nt);
	LLVMValueRef j = lower_loop_begin(c, &lj, ll_i64(c, 0), ll_i64(c, nt), "pj");
	LLVMValueRef sa = ll_add(c, src, j), da = ll_add(c, to, j);
	LLVMValueRef v = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, c->X, &sa, 1, ""), "");
	LLVMBuildStore(c->b, v, LLVMBuildGEP2(c->b, c->f32, dst, &da, 1, ""));
	lower_loop_end(c, &lj);
	lower_loop_end(c, &lk);
}

/* The full tile at column n in its panel (or in X, without one): row k of
 * the tile at *xt + k * *ldk.  A per-tile panel is filled here. */
static void panel_tile(LowerCtx *c, const X86Panel *pn, LLVMValueRef n, LLVMValueRef *xt, LLVMValueRef *ldk)
{
	const LowerKernel *k = c->k;
	LLVMValueRef have = LLVMBuildIsNotNull(c->b, pn->base, "");
	LLVMValueRef inp = pn->base;
	if (pn->per_tile) {
		LLVMBasicBlockRef fill = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "tpack");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "tpacked");
		LLVMBuildCondBr(c->b, have, fill, done);
		LLVMPositionBuilderAtEnd(c->b, fill);
		panel_copy(c, pn->base, n, pn->nt);
		LLVMBuildBr(c->b, done);
		LLVMPositionBuilderAtEnd(c->b, done);
	} else {
		LLVMValueRef off = ll_mul(c, LLVMBuildNSWSub(c->b, n, c->n0, ""), k->K);
		inp = LLVMBuildGEP2(c->b, c->f32, pn->base, &off, 1, "");
	}
	LLVMValueRef inx = LLVMBuildGEP2(c->b, c->f32, c->X, &n, 1, "");
	*xt = LLVMBuildSelect(c->b, have, inp, inx, "xt");
	*ldk = LLVMBuildSelect(c->b, have, ll_i64(c, pn->nt), ll_i64(c, k->N), "ldk");
}

/* The stored weights per k of W: how many FMAs (per column) each element
 * of X feeds, on average. */
static double x_reuse(const LowerKernel *k)
{
	Nest nest;
	nest_of(k->ir, &nest);
	return (double)nest.nstored / (double)k->K;
}

/* Whether X is worth packing: every element feeds X86_PACK_REUSE or more
 * stored weights (on average) and the tiles are vectors. */
static bool panel_pays(const LowerKernel *k)
{
	if (k->sched.stage) /* the schedule's choice */
		return k->sched.stage > 0 && k->vector_width >= 8;
	return k->vector_width >= 8 && x_reuse(k) >= X86_PACK_REUSE;
}

static void panel_free(LowerCtx *c, LLVMValueRef raw);

/* The C library's function `name`, ret(arg), declared where missing. */
static LLVMValueRef libc_fn(LowerCtx *c, const char *name, LLVMTypeRef ret, LLVMTypeRef arg)
{
	return ll_function(c->mod, name, LLVMFunctionType(ret, &arg, 1, 0));
}

/* Allocates the panels and fills them (all the thread's tiles; a per-tile
 * panel: one tile's room, filled by panel_tile); returns the malloc'd
 * pointer (to free). */
static LLVMValueRef panel_pack(LowerCtx *c, X86Panel *pn)
{
	const LowerKernel *k = c->k;
	const int64_t nt = pn->nt;
	LLVMValueRef tiles = pn->per_tile
	                             ? ll_i64(c, 1)
	                             : LLVMBuildSDiv(c->b, LLVMBuildNSWSub(c->b, c->n1, c->n0, ""), ll_i64(c, nt), "ptiles");
	LLVMValueRef bytes = ll_add(c, ll_mul(c, tiles, nt * k->K * 4), ll_i64(c, 64));
	LLVMValueRef fmalloc = libc_fn(c, "malloc", c->ptr, c->i64);
	LLVMValueRef raw = LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fmalloc), fmalloc, &bytes, 1, "praw");
	LLVMValueRef addr = LLVMBuildPtrToInt(c->b, raw, c->i64, "");
	LLVMValueRef pad = LLVMBuildAnd(c->b, LLVMBuildNeg(c->b, addr, ""), ll_i64(c, 63), "");
	LLVMValueRef al = LLVMBuildGEP2(c->b, LLVMInt8TypeInContext(c->ctx), raw, &pad, 1, "panels");
	LLVMValueRef have = LLVMBuildIsNotNull(c->b, raw, "");
	if (!pn->per_tile) {
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "pack");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "packed");
		LLVMBuildCondBr(c->b, have, body, done);
		LLVMPositionBuilderAtEnd(c->b, body);
		LowerLoop lt;
		LLVMValueRef t = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "pt");
		LLVMValueRef col = ll_add(c, c->n0, ll_mul(c, t, nt));
		LLVMValueRef off = ll_mul(c, t, k->K * nt);
		panel_copy(c, LLVMBuildGEP2(c->b, c->f32, al, &off, 1, ""), col, nt);
		lower_loop_end(c, &lt);
		LLVMBuildBr(c->b, done);
		LLVMPositionBuilderAtEnd(c->b, done);
	}
	pn->base = LLVMBuildSelect(c->b, have, al, LLVMConstPointerNull(c->ptr), "panel");
	return raw;
}

/* ---- k runs blocked along k ----
 *
 * A k run whose rows keep their own k (row-balanced, 1:4 and 1:16 N:M)
 * reads, per row and tile of columns, the X rows of all its kept k: far
 * more than L1 holds, so every X vector comes from L2 (one load per FMA).
 * Blocked, the kernel walks the run's outermost loop a block of storage
 * digits at a time for every row before it moves on, so the X rows of one
 * block (about X86_KBLOCK_ROWS of them for the tile) stay in L1 for all
 * rows.  Kept indices ascend within a row, so a block of digits covers a
 * narrow range of k in every row.  A block holds at least
 * X86_KBLOCK_DIGITS digits, so that each row's pass over it (16 weights x
 * the tile's FMAs) outweighs loading and storing its tile of C (see
 * docs/design/x86-k-runs.md). */
enum { X86_KBLOCK_ROWS = 64, X86_KBLOCK_DIGITS = 16, X86_XSLACK = 16, X86_KROW_BYTES = 256 << 10 };
/* Below this reuse (x_reuse) the blocks read X itself rather than a copy of
 * their rows, each copied element feeding only a few FMAs; but only where
 * X's rows spread over L1's sets (x_rows_spread): rows 4 KiB apart share
 * one, and there the copy pays.  Measured in docs/design/x86-k-runs.md. */
enum { X86_XBUF_REUSE = 16, X86_L1_WAY_BYTES = 4096 };

/* The most bytes of X's rows a k run copies into its buffer, which is on
 * the kernel's stack (a thread's may be small); past it X is read where
 * it lies. */
enum { X86_XBUF_MAX = 256 << 10 };

/* Whether consecutive rows of X start in at least 16 different sets of L1
 * (a way: 64 sets of 64 bytes): the rows are N floats apart, and only a
 * multiple of 4 KiB maps them all to one set. */
static bool x_rows_spread(const LowerKernel *k)
{
	int64_t a = X86_L1_WAY_BYTES, b = (k->N * 4) % X86_L1_WAY_BYTES;
	while (b) {
		const int64_t r = a % b;
		a = b, b = r;
	}
	return X86_L1_WAY_BYTES / a >= 16;
}

typedef struct KblockArg {
	KrunArg *t;
	int first;
	int vl, unroll;
	LLVMValueRef from, rest;
	bool store; /* x86_stores_c: C is not zeroed */
} KblockArg;

static LLVMValueRef skip_padding_rows(LowerCtx *c, const LowerPoint *p, LLVMBasicBlockRef *skip)
{
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kbrow");
	*skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kbskip");
	LLVMValueRef real = LLVMBuildICmp(c->b, LLVMIntSLT, p->m, ll_i64(c, c->k->M), "real");
	LLVMBuildCondBr(c->b, real, body, *skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	return real;
}

static void kblock_tile_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	KblockArg *a = arg;
	LLVMBasicBlockRef skip;
	skip_padding_rows(c, p, &skip);
	a->t->fresh = a->store ? c_fresh_at(c, p->row, a->first) : NULL;
	krun_tile(c, p, a->first, a->t);
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

static void kblock_rest_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	KblockArg *a = arg;
	LLVMBasicBlockRef skip;
	skip_padding_rows(c, p, &skip);
	LLVMBuildStore(c->b, a->rest, a->from);
	krun_rest(c, p, a->first, a->vl, a->unroll, a->from, a->store ? c_fresh_at(c, p->row, a->first) : NULL);
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

/* Rows of W walked together in the blocked k runs: X86_KROWS rows of half a
 * tile each instead of one row of a full tile (AVX-512: 2 x 4 vectors, not
 * 1 x 8).  The same registers, the tile's X rows half as wide, so a block
 * of them is half the bytes and stays in L1 (or L2) better, and each
 * weight's chain of FMAs is shorter; measured against one and four rows in
 * docs/design/x86-k-runs.md. */
enum { X86_KROWS = 2 };

/* Rows of W walked together (krun_tile_rows): the digits of loop
 * a->first - 1, a dense loop along m, a->t->rows at a time from point p;
 * a group that reaches a padding row, and the digits left over, one by
 * one. */
static void kblock_rows_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	KblockArg *a = arg;
	KrunArg *t = a->t;
	const int s = a->first - 1, rows = t->rows;
	const PirLoop *l = &c->k->ir->loops[s];
	LLVMValueRef lo = c->lo[s] ? c->lo[s] : ll_i64(c, 0), hi = c->hi[s] ? c->hi[s] : ll_i64(c, l->nnz);
	LLVMValueRef groups = LLVMBuildSDiv(c->b, LLVMBuildNSWSub(c->b, hi, lo, ""), ll_i64(c, rows), "groups");
	LLVMValueRef base = ll_mul(c, p->row, l->nnz);
	LowerPoint ps[LOWER_MAX_ROWS];
	LowerLoop lg, lr;
	LLVMValueRef g = lower_loop_begin(c, &lg, ll_i64(c, 0), groups, "rgroup");
	LLVMValueRef d0 = ll_add(c, lo, ll_mul(c, g, rows));
	for (int r = 0; r < rows; r++) {
		LLVMValueRef d = ll_add(c, d0, ll_i64(c, r)), dm, dk;
		lower_offsets(c, l, d, &dm, &dk);
		ps[r] = (LowerPoint){ll_add(c, base, d), LLVMBuildNSWAdd(c->b, p->m, dm, "m"), p->k};
	}
	LLVMBasicBlockRef all = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "rgall");
	LLVMBasicBlockRef each = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "rgeach");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "rgdone");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, ps[rows - 1].m, ll_i64(c, c->k->M), ""), all, each);
	LLVMPositionBuilderAtEnd(c->b, all);
	t->fresh = a->store ? c_fresh_at(c, ps[0].row, a->first) : NULL;
	krun_tile_rows(c, ps, a->first, t);
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, each);
	for (int r = 0; r < rows; r++)
		kblock_tile_point(c, &ps[r], a);
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, next);
	lower_loop_end(c, &lg);
	/* the rows left past the whole groups */
	LLVMValueRef left0 = ll_add(c, lo, ll_mul(c, groups, rows));
	LLVMValueRef d = lower_loop_begin(c, &lr, left0, hi, "rleft"), dm, dk;
	lower_offsets(c, l, d, &dm, &dk);
	LowerPoint q = {ll_add(c, base, d), LLVMBuildNSWAdd(c->b, p->m, dm, "m"), p->k};
	kblock_tile_point(c, &q, a);
	lower_loop_end(c, &lr);
}

static void x86_krun_all(LowerCtx *c, int split)
{
	const Pir *ir = c->k->ir;
	const PirLoop *outer = &ir->loops[split];
	double span = run_rows_per_digit(ir, split);
	int64_t db = (int64_t)(X86_KBLOCK_ROWS / span);
	if (db < X86_KBLOCK_DIGITS)
		db = X86_KBLOCK_DIGITS;
	KrunArg t;
	int64_t nt = krun_full_tile(c, &t);
	{ /* X86_KROWS rows at a time where the loop above the run is a dense m
	   loop (of m alone: kblock_rows_point takes a group's rows as real when
	   its last is, which holds where m grows with the digit, not in a join
	   whose m wraps) */
		if (c->nest->mloop >= 0 && t.nacc % X86_KROWS == 0) {
			t.rows = X86_KROWS;
			t.nacc /= X86_KROWS;
			nt /= X86_KROWS;
		}
	}
	const int vl = t.width, unroll = t.nacc;
	KblockArg a = {&t, split, vl, unroll, lower_entry_alloca(c, c->i64, "from"), NULL, x86_stores_c(c->k)};
	/* Condensed X: where the run's outer loop is a dense k loop whose
	 * digit d covers k in [d s, d s + s) exactly (the loops inside tile s)
	 * and the rows add no k, a block's X rows are one range of k: they are
	 * copied into a contiguous buffer per tile and block, since X rows N
	 * floats apart fall into a few L1 sets (4 KiB apart: the same set). */
	int64_t xrows = 0, kstride = 0;
	bool approx = false;
	LLVMValueRef xbuf = NULL, raw = NULL;
	X86Panel panel = {NULL, 0, true};
	{
		bool rows_m_only = true;
		for (int i = 0; i < split; i++)
			rows_m_only &= !pir_loop_has_axis(&ir->loops[i], PIR_AXIS_K);
		const int64_t inner = nest_len(c->nest, split + 1, ir->nloops);
		if ((x_reuse(c->k) >= X86_XBUF_REUSE || !x_rows_spread(c->k)) && rows_m_only && outer->ncomp == 1 &&
		    outer->comp[0].axis == PIR_AXIS_K && outer->comp[0].stride == inner && db < outer->nnz) {
			kstride = inner;
			xrows = db * inner;
			if (pir_loop_is_perforated(outer)) {
				/* kept digits d..d+db of a row lie near k = d len / nnz (indices
				 * ascend): the buffer holds that span and X_SLACK rows each side,
				 * and a k outside it is read from X itself */
				approx = true;
				xrows = (int64_t)((double)db * inner * outer->len / outer->nnz) + 2 * X86_XSLACK;
			}
			if (approx && panel_pays(c->k)) { /* panels instead: every k is in them */
				panel.nt = nt;
				raw = panel_pack(c, &panel);
				xrows = 0;
				/* a panel's rows are contiguous: blocks twice as long fit as
				 * well, and halve the passes over C (docs/design/x86-k-runs.md) */
				if (2 * db < outer->nnz && (int64_t)(2 * X86_KBLOCK_ROWS / span) > db)
					db = (int64_t)(2 * X86_KBLOCK_ROWS / span);
			} else if (xrows * nt * 4 > X86_XBUF_MAX) {
				xrows = 0;
			} else {
				xbuf = lower_entry_alloca(c, LLVMArrayType2(c->f32, (uint64_t)(xrows * nt)), "xbuf");
				LLVMSetAlignment(xbuf, 64);
			}
		}
	}
	LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
	LLVMValueRef span_n = LLVMBuildNSWSub(c->b, c->n1, c->n0, "");
	LLVMValueRef tiles = LLVMBuildSDiv(c->b, span_n, ll_i64(c, nt), "tiles");
	/* the full tiles, blocked */
	LowerLoop lt, lb;
	LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "ktile");
	t.n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
	if (raw)
		panel_tile(c, &panel, t.n, &t.xt, &t.ldk);
	/* Rows in chunks whose tiles of C stay in L2 across the k blocks
	 * (X86_KROW_BYTES): every block adds to each row's tile of C, and over
	 * all rows of a large W those tiles (3072 x 512 bytes) went out to L3
	 * between blocks.  The rows are the digits of the outermost loop. */
	LowerLoop lr;
	LLVMValueRef ri = NULL;
	{
		const PirLoop *l0 = &ir->loops[0];
		double rows_per_digit = 1;
		for (int i = 1; i < split; i++)
			rows_per_digit *= (double)ir->loops[i].len;
		int64_t dr = (int64_t)((double)X86_KROW_BYTES / (4.0 * (double)nt) / rows_per_digit);
		if (split > 0 && dr >= 1 && dr < l0->nnz && !pir_loop_has_axis(l0, PIR_AXIS_K)) {
			ri = lower_loop_begin(c, &lr, ll_i64(c, 0), ll_i64(c, (l0->nnz + dr - 1) / dr), "krows");
			digit_block(c, 0, ri, dr);
		}
	}
	int64_t blocks = (outer->nnz + db - 1) / db;
	LLVMValueRef bi = lower_loop_begin(c, &lb, ll_i64(c, 0), ll_i64(c, blocks), "kblock");
	LLVMValueRef lo = digit_block(c, split, bi, db);
	if (xrows > 0) { /* copy the block's X rows of the tile into the buffer */
		if (approx) { /* k of digit lo, about; the slack before it; not below 0 */
			LLVMValueRef k0 = LLVMBuildSDiv(
				c->b, ll_mul(c, lo, kstride * outer->len), ll_i64(c, outer->nnz), "");
			k0 = LLVMBuildNSWSub(c->b, k0, ll_i64(c, X86_XSLACK), "");
			t.klo = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, k0, ll_i64(c, 0), ""), ll_i64(c, 0), k0, "xklo");
			t.xrows = xrows;
		} else
			t.klo = LLVMBuildNSWMul(c->b, lo, ll_i64(c, kstride), "xklo");
		t.ldx = nt;
		LowerLoop lj;
		LLVMValueRef j = lower_loop_begin(c, &lj, ll_i64(c, 0), ll_i64(c, xrows), "xrow");
		LLVMValueRef kk = ll_add(c, t.klo, j);
		LLVMBasicBlockRef cp = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "xcopy");
		LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "xcopied");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kk, ll_i64(c, c->k->K), ""), cp, nx);
		LLVMPositionBuilderAtEnd(c->b, cp);
		LLVMValueRef src = ll_add(c, ll_mul(c, kk, c->k->N), t.n);
		LLVMValueRef dst = ll_mul(c, j, nt);
		for (int u = 0; u < unroll; u++) {
			LLVMValueRef o = ll_i64(c, (int64_t)u * vl);
			LLVMValueRef sa = ll_add(c, src, o), da = ll_add(c, dst, o);
			LLVMValueRef v = LLVMBuildLoad2(c->b, t.vty, LLVMBuildGEP2(c->b, c->f32, c->X, &sa, 1, ""), "");
			LLVMSetAlignment(v, 4);
			LLVMSetAlignment(LLVMBuildStore(c->b, v, LLVMBuildGEP2(c->b, c->f32, xbuf, &da, 1, "")), xbuf_align(vl));
		}
		LLVMBuildBr(c->b, nx);
		LLVMPositionBuilderAtEnd(c->b, nx);
		lower_loop_end(c, &lj);
		t.xbuf = xbuf;
	}
	if (t.rows > 1)
		lower_nest(c, 0, split - 1, &start, kblock_rows_point, &a);
	else
		lower_nest(c, 0, split, &start, kblock_tile_point, &a);
	t.xbuf = NULL;
	t.xrows = 0;
	c->lo[split] = c->hi[split] = NULL;
	lower_loop_end(c, &lb);
	if (ri) {
		c->lo[0] = c->hi[0] = NULL;
		lower_loop_end(c, &lr);
	}
	lower_loop_end(c, &lt);
	t.xt = t.ldk = NULL;
	if (raw)
		panel_free(c, raw);
	/* the columns left over, unblocked */
	a.rest = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, tiles, nt), "rest");
	lower_nest(c, 0, split, &start, kblock_rest_point, &a);
}

/* ---- m runs: several rows of C share each row of X ----
 *
 * A dense k run under a dense m loop (blocks: M0 K0^c M1 K1) keeps the
 * same k in every row, so the rows are taken X86_ROWS at a time: each X
 * vector is loaded once and multiplied into every row's accumulators. */
enum { X86_ROWS = 4 };

/* Vectors per row in an m run's full tile: 4 x 4 AVX-512 or 4 x 2 AVX2
 * accumulators. */
/* Vector accumulators per row of an m run: 4 of 32 registers (AVX-512) or
 * 2 of 16, fewer where the schedule says so. */
static int mrun_nacc(const LowerKernel *k)
{
	const int n = k->vector_width >= 16 ? 4 : 2;
	return k->sched.col_tiles > 0 && k->sched.col_tiles < n ? k->sched.col_tiles : n;
}
/* Up to this many bytes of a run's weights, its column tiles go outside its
 * row blocks (x86_mrun). */
enum { X86_MRUN_WBYTES = 32 << 10 };

typedef struct MrunArg {
	int width, nacc;
	LLVMValueRef n;
	int64_t S; /* storage distance between consecutive rows: the k run's size */
	int shared; /* loops first+1..shared-1 are dense: every row walks them alike */
	int64_t Sd; /* storage distance between rows' prefixes after the shared loops */
	int rows; /* rows in this block: X86_ROWS, fewer for the last */
	int64_t sm; /* m distance between consecutive rows */
	bool inner; /* the m loop is innermost, under a k loop (x86_minner) */
	LLVMValueRef d0; /* with inner: the block's first m digit */
	LLVMValueRef acc[X86_ROWS][X86_UNROLL];
	LLVMTypeRef vty;
	LLVMValueRef fma;
	LLVMTypeRef fma_ty;
	/* condensed X: the run's rows klo.. for all columns, ldx floats apart */
	LLVMValueRef xbuf, klo;
	int64_t ldx;
	/* panel-packed X for the full tiles (see KrunArg) */
	LLVMValueRef xt, ldk;
	LLVMValueRef fresh; /* see KrunArg */
} MrunArg;

static void mrun_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	MrunArg *a = arg;
	const LowerKernel *k = c->k;
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mpoint");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mpad");
	LLVMBuildCondBr(c->b, k_in_range(c, p), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	LLVMValueRef xs = a->xt ? a->xt : a->xbuf ? a->xbuf : c->X;
	LLVMValueRef row = a->xt     ? LLVMBuildNSWMul(c->b, p->k, a->ldk, "")
	                   : a->xbuf ? ll_mul(c, LLVMBuildNSWSub(c->b, p->k, a->klo, ""), a->ldx)
	                             : ll_mul(c, p->k, k->N);
	LLVMValueRef base = a->xt ? row : ll_add(c, row, a->n);
	LLVMValueRef x[X86_UNROLL];
	for (int u = 0; u < a->nacc; u++) {
		LLVMValueRef at = ll_add(c, base, ll_i64(c, (int64_t)u * a->width));
		x[u] = LLVMBuildLoad2(c->b, a->vty, LLVMBuildGEP2(c->b, c->f32, xs, &at, 1, ""), "x");
		LLVMSetAlignment(x[u], 4);
	}
	for (int r = 0; r < a->rows; r++) {
		LLVMValueRef at = ll_add(c, p->row, ll_i64(c, (int64_t)r * a->S));
		LLVMValueRef w = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, c->values, &at, 1, ""), "w");
		LLVMValueRef wv = splat(c, w, a->width);
		for (int u = 0; u < a->nacc; u++) {
			LLVMValueRef acc = LLVMBuildLoad2(c->b, a->vty, a->acc[r][u], "");
			LLVMValueRef args[3] = {wv, x[u], acc};
			LLVMBuildStore(c->b, LLVMBuildCall2(c->b, a->fma_ty, a->fma, args, 3, ""), a->acc[r][u]);
		}
	}
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

/* A k run whose leading loops are dense but whose inner loops are
 * perforated (N:M: every row keeps 2 of each group of 4 k, not the same 2):
 * the rows walk the dense loops together and each row then walks its own
 * kept weights of the group, so the few rows of X a group touches are
 * read by all the rows while they are in L1. */
typedef struct MrowArg {
	MrunArg *a;
	int r;
} MrowArg;

static void mrow_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	const MrowArg *ra = arg;
	MrunArg *a = ra->a;
	KrunArg t = {.width = a->width, .n = a->n, .nacc = a->nacc, .vty = a->vty, .fma = a->fma,
	             .fma_ty = a->fma_ty, .xbuf = a->xbuf, .klo = a->klo, .ldx = a->ldx, .xcol = true,
	             .xt = a->xt, .ldk = a->ldk};
	for (int u = 0; u < a->nacc; u++)
		t.acc[u] = a->acc[ra->r][u];
	krun_point(c, p, &t);
}

static void mrun_group(LowerCtx *c, const LowerPoint *p, void *arg)
{
	MrunArg *a = arg;
	for (int r = 0; r < a->rows; r++) {
		LowerPoint pr = {ll_add(c, p->row, ll_i64(c, (int64_t)r * a->Sd)), p->m, p->k};
		MrowArg ra = {a, r};
		lower_nest(c, a->shared, c->k->ir->nloops, &pr, mrow_point, &ra);
	}
}

/* A k run for one row p, guarded against padding rows. */
static void krun_row(LowerCtx *c, const LowerPoint *p, int first, LLVMValueRef fresh)
{
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "row");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "rowpad");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->m, ll_i64(c, c->k->M), ""), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	krun_at(c, p, first, fresh);
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

/* With the m loop innermost: the point after the k loop, for the block's
 * first row (the rows are consecutive in storage: S = 1). */
static void minner_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	MrunArg *a = arg;
	const int64_t len = c->k->ir->loops[c->k->ir->nloops - 1].nnz;
	LowerPoint q = {ll_add(c, ll_mul(c, p->row, len), a->d0),
	                p->m, p->k};
	mrun_point(c, &q, a);
}

typedef struct MrunWrite {
	const MrunArg *a;
	LLVMValueRef m0;
	int64_t r0;
} MrunWrite;

static void mrun_write(LowerCtx *c, bool add, const void *arg)
{
	const MrunWrite *w = arg;
	const MrunArg *a = w->a;
	const LowerKernel *k = c->k;
	for (int r = 0; r < a->rows; r++) {
		LLVMValueRef m = ll_add(c, w->m0, ll_i64(c, (w->r0 + r) * a->sm));
		LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mstore");
		LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mstored");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, k->M), ""), st, nx);
		LLVMPositionBuilderAtEnd(c->b, st);
		LLVMValueRef base = ll_add(c, ll_mul(c, m, k->N), a->n);
		for (int u = 0; u < a->nacc; u++) {
			LLVMValueRef at = ll_add(c, base, ll_i64(c, (int64_t)u * a->width));
			c_update(c, a->vty, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""),
			         LLVMBuildLoad2(c->b, a->vty, a->acc[r][u], ""), add);
		}
		LLVMBuildBr(c->b, nx);
		LLVMPositionBuilderAtEnd(c->b, nx);
	}
}

/* Writes the accumulators of a's rows to C's rows m0 + (r0 + r) sm, those
 * below M, at columns a->n.. (adding, or storing where a->fresh). */
static void mrun_store(LowerCtx *c, const MrunArg *a, LLVMValueRef m0, int64_t r0)
{
	MrunWrite w = {a, m0, r0};
	c_write(c, a->fresh, mrun_write, &w);
}

/* One pass of X86_ROWS rows from q for columns a->n.. a->n + width * nacc - 1. */
static void mrun_tile(LowerCtx *c, const LowerPoint *q, int first, MrunArg *a)
{
	const LowerKernel *k = c->k;
	LLVMValueRef zero = LLVMConstNull(a->vty);
	for (int r = 0; r < a->rows; r++)
		for (int u = 0; u < a->nacc; u++)
			LLVMBuildStore(c->b, zero, a->acc[r][u]);
	if (a->inner)
		lower_nest(c, first, first + 1, q, minner_point, a);
	else if (a->shared == k->ir->nloops)
		lower_nest(c, first + 1, k->ir->nloops, q, mrun_point, a);
	else
		lower_nest(c, first + 1, a->shared, q, mrun_group, a);
	mrun_store(c, a, q->m, 0);
}

typedef struct MrestArg {
	const LowerPoint *q;
	int first;
	const MrunArg *a;
} MrestArg;

static void mrest_tile(LowerCtx *c, int nacc, LLVMValueRef n, void *arg)
{
	const MrestArg *ma = arg;
	MrunArg s = *ma->a;
	s.nacc = nacc, s.n = n, s.xt = s.ldk = NULL; /* the panels hold the full tiles only */
	mrun_tile(c, ma->q, ma->first, &s);
}

/* The full column tiles: tiles of a->nacc vectors from n0. */
static LLVMValueRef mrun_tiles(LowerCtx *c, const MrunArg *a)
{
	const int64_t nt = (int64_t)a->width * a->nacc;
	return LLVMBuildSDiv(c->b, LLVMBuildNSWSub(c->b, c->n1, c->n0, ""), ll_i64(c, nt), "tiles");
}

/* The column tiles of a block of rows q: full tiles of a->nacc vectors,
 * then one tile of each smaller power-of-two count of vectors that still
 * fits.  Returns an i64 alloca holding the first column left over. */
static LLVMValueRef mrun_columns(LowerCtx *c, const LowerPoint *q, int first, MrunArg *a)
{
	const int64_t nt = (int64_t)a->width * a->nacc;
	LLVMValueRef tiles = mrun_tiles(c, a);
	LowerLoop lt;
	LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "mtile");
	a->n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
	mrun_tile(c, q, first, a);
	lower_loop_end(c, &lt);
	LLVMValueRef from = lower_entry_alloca(c, c->i64, "mfrom");
	LLVMBuildStore(c->b, ll_add(c, c->n0, ll_mul(c, tiles, nt)), from);
	MrestArg ma = {q, first, a};
	smaller_tiles(c, from, a->width, a->nacc, mrest_tile, &ma);
	return from;
}

/* A block of rows q over the columns from `start` (after the full tiles):
 * one tile of each smaller power-of-two count of vectors that still fits,
 * then, row by row, one scalar accumulator per column. */
static void mrun_rest(LowerCtx *c, const LowerPoint *q, int first, MrunArg *a, LLVMValueRef start)
{
	const LowerKernel *k = c->k;
	LLVMValueRef from = lower_entry_alloca(c, c->i64, "mfrom");
	LLVMBuildStore(c->b, start, from);
	MrestArg ma = {q, first, a};
	smaller_tiles(c, from, a->width, a->nacc, mrest_tile, &ma);
	KrunArg r1 = {.width = 1, .nacc = 1, .vty = c->f32, .fresh = a->fresh};
	krun_fma(c, &r1);
	r1.acc[0] = lower_entry_alloca(c, c->f32, "macc1");
	for (int r = 0; r < X86_ROWS; r++) {
		LowerPoint qr = {ll_add(c, q->row, ll_i64(c, r)),
		                 ll_add(c, q->m, ll_i64(c, (int64_t)r * a->sm)), q->k};
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mrest");
		LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mrested");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, qr.m, ll_i64(c, k->M), ""), body, skip);
		LLVMPositionBuilderAtEnd(c->b, body);
		LowerLoop lr;
		r1.n = lower_loop_begin(c, &lr, LLVMBuildLoad2(c->b, c->i64, from, "from"), c->n1, "mrestn");
		krun_tile(c, &qr, first + 1, &r1);
		lower_loop_end(c, &lr);
		LLVMBuildBr(c->b, skip);
		LLVMPositionBuilderAtEnd(c->b, skip);
	}
}

/* Condensed X for the m runs: where the run's loops tile one range of k
 * exactly (k in [p.k, p.k + span): blocks, the hybrid), the run's X rows
 * are copied once per point, for the thread's columns, into a buffer whose
 * rows are N + 16 floats apart, so that the rows no longer fall into the
 * same few L1 sets (X rows 2 or 4 KiB apart do) while all the rows of the
 * m loop read them.  At most X86_MBUF_BYTES, on the kernel's stack: the
 * header states what a kernel keeps there (BASE_OP_STACK_BYTES).  Not
 * 256 KiB, as the k runs' buffer: that lost on large N (the buffer should
 * span the thread's column chunk; see docs/design/x86-m-runs.md). */
enum { X86_MBUF_BYTES = 1 << 20, X86_MBUF_PAD = 16 };

static void mrun_condense(LowerCtx *c, const LowerPoint *p, int first, MrunArg *a)
{
	const LowerKernel *k = c->k;
	const Pir *ir = k->ir;
	int64_t span = 1;
	for (int i = ir->nloops - 1; i > first; i--) {
		const PirLoop *l = &ir->loops[i];
		if (l->ncomp != 1 || l->comp[0].axis != PIR_AXIS_K || l->comp[0].stride != span)
			return; /* not one exact range of k */
		span *= l->len;
	}
	const int64_t ldx = k->N + X86_MBUF_PAD;
	/* the copy (span x N) must be small beside the work on it (rows x span
	 * x N), and pays only where X's rows share L1's sets (x_rows_spread);
	 * see docs/design/x86-m-runs.md */
	if (span < 16 || ir->loops[first].len < 16 || span * ldx * 4 > X86_MBUF_BYTES || x_rows_spread(k))
		return;
	LLVMValueRef buf = lower_entry_alloca(c, LLVMArrayType2(c->f32, (uint64_t)(span * ldx)), "mxbuf");
	LLVMSetAlignment(buf, 64);
	LowerLoop lj, ln;
	LLVMValueRef j = lower_loop_begin(c, &lj, ll_i64(c, 0), ll_i64(c, span), "mxrow");
	LLVMValueRef kk = ll_add(c, p->k, j);
	LLVMBasicBlockRef cp = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mxcopy");
	LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mxcopied");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kk, ll_i64(c, k->K), ""), cp, nx);
	LLVMPositionBuilderAtEnd(c->b, cp);
	LLVMValueRef src0 = ll_mul(c, kk, k->N);
	LLVMValueRef dst0 = ll_mul(c, j, ldx);
	LLVMValueRef n = lower_loop_begin(c, &ln, c->n0, c->n1, "mxcol");
	LLVMValueRef sa = ll_add(c, src0, n), da = ll_add(c, dst0, n);
	LLVMValueRef v = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, c->X, &sa, 1, ""), "");
	LLVMBuildStore(c->b, v, LLVMBuildGEP2(c->b, c->f32, buf, &da, 1, ""));
	lower_loop_end(c, &ln);
	LLVMBuildBr(c->b, nx);
	LLVMPositionBuilderAtEnd(c->b, nx);
	lower_loop_end(c, &lj);
	a->xbuf = buf, a->klo = p->k, a->ldx = ldx;
}

/* Opens the loop over the blocks of X86_ROWS rows of the m run at p and
 * returns the block's first row as a point. */
static LowerPoint mrun_rows(LowerCtx *c, const LowerPoint *p, LowerLoop *lb, int64_t len, int64_t sm,
                            int64_t blocks, const char *name)
{
	LLVMValueRef rb = lower_loop_begin(c, lb, ll_i64(c, 0), ll_i64(c, blocks), name);
	LLVMValueRef d0 = ll_mul(c, rb, X86_ROWS);
	return (LowerPoint){ll_add(c, ll_mul(c, p->row, len), d0),
	                    ll_add(c, p->m, ll_mul(c, d0, sm)), p->k};
}

static void x86_mrun(LowerCtx *c, const LowerPoint *p, int first)
{
	const LowerKernel *k = c->k;
	const PirLoop *l = &k->ir->loops[first];
	const int64_t len = l->len, sm = l->comp[0].stride;
	const int64_t S = c->nest->stride[first];
	const int vl = k->vector_width > 1 ? k->vector_width : 1;
	const int shared = c->nest->next_perf[first + 1];
	const int64_t Sd = nest_kept(c->nest, first + 1, shared);
	MrunArg a = {.width = vl, .nacc = mrun_nacc(k), .S = S, .shared = shared, .Sd = Sd,
	             .rows = X86_ROWS, .sm = sm};
	if (x86_stores_c(k))
		a.fresh = c_fresh_at(c, p->row, first);
	a.vty = vl > 1 ? LLVMVectorType(c->f32, (unsigned)vl) : c->f32;
	{
		KrunArg f = {.vty = a.vty};
		krun_fma(c, &f);
		a.fma = f.fma, a.fma_ty = f.fma_ty;
	}
	for (int r = 0; r < X86_ROWS; r++)
		for (int u = 0; u < a.nacc; u++)
			a.acc[r][u] = lower_entry_alloca(c, a.vty, "macc");
	const X86Panel *panel = c->backend;
	if (!panel)
		mrun_condense(c, p, first, &a);
	const int64_t blocks = len / X86_ROWS, nt = (int64_t)vl * a.nacc;
	LLVMValueRef tiles = mrun_tiles(c, &a);
	LLVMValueRef start = ll_add(c, c->n0, ll_mul(c, tiles, nt));
	/* The order of the row blocks and the column tiles.  Where the run's
	 * weights are small (32 x 32 blocks: 4 KiB) the column tiles go outside,
	 * so the X rows of one tile (32 x 64 floats) stay in L1 while every row
	 * block reads them; rows outside, each row block would stream all of the
	 * run's X rows (from L2 at best: 4 vectors per 16 FMAs, at L2's rate).
	 * Where they are large (2:4 over all rows of W) the rows go outside, so a
	 * row block's weights are read once for all tiles. */
	const bool tiles_outside = len * S * 4 <= X86_MRUN_WBYTES;
	LowerLoop lb, lt;
	LowerPoint q;
	if (tiles_outside) {
		LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "mtile");
		a.n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
		if (panel)
			panel_tile(c, panel, a.n, &a.xt, &a.ldk);
		q = mrun_rows(c, p, &lb, len, sm, blocks, "rows");
		mrun_tile(c, &q, first, &a);
		lower_loop_end(c, &lb);
		lower_loop_end(c, &lt);
		q = mrun_rows(c, p, &lb, len, sm, blocks, "restrows");
	} else {
		q = mrun_rows(c, p, &lb, len, sm, blocks, "rows");
		LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "mtile");
		a.n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
		if (panel)
			panel_tile(c, panel, a.n, &a.xt, &a.ldk);
		mrun_tile(c, &q, first, &a);
		lower_loop_end(c, &lt);
	}
	a.xt = a.ldk = NULL;
	mrun_rest(c, &q, first, &a, start);
	lower_loop_end(c, &lb);
	/* the rows after the blocks of X86_ROWS */
	if (len % X86_ROWS) {
		LowerLoop ll;
		LLVMValueRef d = lower_loop_begin(c, &ll, ll_i64(c, blocks * X86_ROWS), ll_i64(c, len), "lastrows");
		LowerPoint qd = {ll_add(c, ll_mul(c, p->row, len), d),
		                 ll_add(c, p->m, ll_mul(c, d, sm)), p->k};
		krun_row(c, &qd, first + 1, a.fresh);
		lower_loop_end(c, &ll);
	}
}

/* m runs blocked along k, for L2: X is walked in blocks of the run's
 * outermost loop, each holding about X86_KBLOCK_BYTES of X rows over all N
 * columns, and every row block and column tile of the m runs goes over a
 * block before the next (each adds its part to C).  Without it, X's
 * reuse distance is all of X, which for large K outgrows L2. */
enum { X86_KBLOCK_BYTES = 1 << 20 };

static void kb_mrun_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	x86_mrun(c, p, *(const int *)arg);
}

static void mrun_all_blocks(LowerCtx *c, int first);

/* ---- m runs accumulated across the k loops above them ----
 *
 * Blocks (M0 K0^c M1 K1): every row of a block row keeps the same kept
 * blocks, so a tile of rows can walk all of them (K0, then K1) with its C
 * tile in registers and store it once, instead of adding to C after every
 * block (8x8 blocks: 16 loads and 16 stores of C per 8 k).  X comes from the
 * panels (all of K for the tile, from L2).  Used for small blocks, where C
 * traffic dominates: the m loop (`first`) at most X86_ACROSS_ROWS long. */
enum { X86_ACROSS_ROWS = 16 };
/* Each tile of rows reads its whole panel (K x 64 floats) from L2: where
 * that is over X86_ACROSS_PANEL_BYTES the runs go blocked along k instead
 * (the bound measured in docs/design/x86-m-runs.md). */
enum { X86_ACROSS_PANEL_BYTES = 1 << 20 };

typedef struct AcrossArg {
	MrunArg *a, *a1; /* the vector tiles; one scalar column */
	int outer, first;
	bool store; /* x86_stores_c */
	const X86Panel *pn;
	const LowerPoint *p;
} AcrossArg;

/* All the rows of the m loop at x->p, in blocks of X86_ROWS, for the tile a
 * (its columns from a->n). */
static void across_rows(LowerCtx *c, AcrossArg *x, MrunArg *a)
{
	const LowerKernel *k = c->k;
	const int first = x->first;
	const int64_t len = k->ir->loops[first].len;
	for (int64_t d0 = 0; d0 < len; d0 += X86_ROWS) {
		a->rows = len - d0 < X86_ROWS ? (int)(len - d0) : X86_ROWS;
		LLVMValueRef zero = LLVMConstNull(a->vty);
		for (int r = 0; r < a->rows; r++)
			for (int u = 0; u < a->nacc; u++)
				LLVMBuildStore(c->b, zero, a->acc[r][u]);
		c->lo[first] = ll_i64(c, d0), c->hi[first] = ll_i64(c, d0 + 1);
		lower_nest(c, x->outer + 1, k->ir->nloops, x->p, mrun_point, a);
		c->lo[first] = c->hi[first] = NULL;
		mrun_store(c, a, x->p->m, d0);
	}
}

static void across_small_tile(LowerCtx *c, int nacc, LLVMValueRef n, void *arg)
{
	AcrossArg *x = arg;
	MrunArg s = *x->a;
	s.nacc = nacc, s.n = n, s.xt = s.ldk = NULL;
	across_rows(c, x, &s);
}

static void across_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	AcrossArg *x = arg;
	MrunArg *a = x->a;
	x->p = p;
	if (x->store)
		a->fresh = x->a1->fresh = c_fresh_at(c, p->row, x->outer + 1);
	const int64_t nt = (int64_t)a->width * a->nacc;
	LLVMValueRef tiles = mrun_tiles(c, a);
	LowerLoop lt;
	LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "atile");
	a->n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
	panel_tile(c, x->pn, a->n, &a->xt, &a->ldk);
	across_rows(c, x, a);
	lower_loop_end(c, &lt);
	a->xt = a->ldk = NULL;
	LLVMValueRef from = lower_entry_alloca(c, c->i64, "afrom");
	LLVMBuildStore(c->b, ll_add(c, c->n0, ll_mul(c, tiles, nt)), from);
	smaller_tiles(c, from, a->width, a->nacc, across_small_tile, x);
	LowerLoop lr;
	x->a1->n = lower_loop_begin(c, &lr, LLVMBuildLoad2(c->b, c->i64, from, "from"), c->n1, "arest");
	across_rows(c, x, x->a1);
	lower_loop_end(c, &lr);
}

/* The loop above the m runs' loop (Nest.mloop) that carries m, when the
 * loops between are k loops, the run below is dense and the m loop short;
 * else -1. */
static int across_outer(const Nest *nest)
{
	const int first = nest->mloop;
	if (first < 0 || nest->ir->loops[first].len > X86_ACROSS_ROWS || !nest->mloop_shares_k)
		return -1;
	const int outer = nest->m_above;
	return outer >= 0 && outer < first - 1 ? outer : -1;
}

/* Where the m runs (from Nest.mloop) go across (x86_mrun_all): the outer
 * loop, or -1. */
static int across_for(const LowerKernel *k)
{
	const int vl = k->vector_width;
	if ((double)k->K * 4.0 * vl * mrun_nacc(k) > X86_ACROSS_PANEL_BYTES)
		return -1;
	Nest nest;
	nest_of(k->ir, &nest);
	return panel_pays(k) ? across_outer(&nest) : -1;
}

/* LowerHooks.stores_c: whether every tile of C is first written at a
 * point where c_fresh_at tells so (see "writing C"): the loops above the
 * m runs, the k runs or the m loop innermost are dense along m or along k
 * only.  The point path adds to C, zeroed. */
static bool x86_stores_c(const LowerKernel *k)
{
	const Pir *ir = k->ir;
	Nest nest;
	nest_of(ir, &nest);
	const int split = nest.split;
	switch (lower_path(k, &x86_update_hooks)) {
	case LOWER_MRUN: return c_fresh_ok(ir, split - 1);
	case LOWER_KRUN: return c_fresh_ok(ir, split);
	case LOWER_MINNER: return c_fresh_ok(ir, ir->nloops - 2);
	default: return false;
	}
}

static void mrun_across(LowerCtx *c, int outer, int first, const X86Panel *pn)
{
	const LowerKernel *k = c->k;
	const PirLoop *l = &k->ir->loops[first];
	const int64_t S = c->nest->stride[first];
	const int vl = k->vector_width;
	MrunArg a = {.width = vl, .nacc = mrun_nacc(k), .S = S, .shared = k->ir->nloops, .rows = X86_ROWS,
	             .sm = l->comp[0].stride};
	const bool store = x86_stores_c(k);
	a.vty = LLVMVectorType(c->f32, (unsigned)vl);
	KrunArg f = {.vty = a.vty}, f1 = {.vty = c->f32};
	krun_fma(c, &f);
	krun_fma(c, &f1);
	a.fma = f.fma, a.fma_ty = f.fma_ty;
	MrunArg a1 = a;
	a1.width = 1, a1.nacc = 1, a1.vty = c->f32, a1.fma = f1.fma, a1.fma_ty = f1.fma_ty;
	for (int r = 0; r < X86_ROWS; r++) {
		for (int u = 0; u < a.nacc; u++)
			a.acc[r][u] = lower_entry_alloca(c, a.vty, "aacc");
		a1.acc[r][0] = lower_entry_alloca(c, c->f32, "aacc1");
	}
	AcrossArg x = {&a, &a1, outer, first, store, pn, NULL};
	LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
	lower_nest(c, 0, outer + 1, &start, across_point, &x);
}

static void x86_mrun_all(LowerCtx *c, int first)
{
	const int vl = c->k->vector_width;
	if (!panel_pays(c->k) || c->backend) {
		mrun_all_blocks(c, first);
		return;
	}
	int outer = across_for(c->k); /* first: Nest.mloop */
	X86Panel pn = {NULL, (int64_t)vl * mrun_nacc(c->k), false};
	LLVMValueRef raw = panel_pack(c, &pn);
	if (outer >= 0) {
		mrun_across(c, outer, first, &pn);
	} else {
		c->backend = &pn;
		mrun_all_blocks(c, first);
		c->backend = NULL;
	}
	panel_free(c, raw);
}

static void panel_free(LowerCtx *c, LLVMValueRef raw)
{
	LLVMValueRef ffree = libc_fn(c, "free", LLVMVoidTypeInContext(c->ctx), c->ptr);
	LLVMBuildCall2(c->b, LLVMGlobalGetValueType(ffree), ffree, &raw, 1, "");
}

/* The m runs, blocked along k for L2 where X outgrows it: along the
 * nearest loop above them that is along k only (blocks: K0 of M0 K0 M1 K1,
 * each kept block a digit; the same digits of every block row are a narrow
 * range of k, since kept blocks ascend), for the X of one column chunk;
 * else along the run's outermost loop, for all N columns. */
static void mrun_all_blocks(LowerCtx *c, int first)
{
	const Pir *ir = c->k->ir;
	const int ko = c->nest->k_above, run = ko >= 0 ? ko : first + 1; /* first: split - 1 */
	const double span = run_rows_per_digit(ir, run);
	const double width = (double)(ko >= 0 ? x86_chunk_columns(c->k) : c->k->N);
	const PirLoop *outer = &ir->loops[run];
	LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
	double rows = (double)X86_KBLOCK_BYTES / (4.0 * width);
	int64_t db = (int64_t)(rows / span);
	if (db < X86_KBLOCK_DIGITS)
		db = X86_KBLOCK_DIGITS;
	if (db >= outer->nnz) { /* X fits: one block */
		lower_nest(c, 0, first, &start, kb_mrun_point, &first);
		return;
	}
	int64_t blocks = (outer->nnz + db - 1) / db;
	LowerLoop lb;
	LLVMValueRef bi = lower_loop_begin(c, &lb, ll_i64(c, 0), ll_i64(c, blocks), "mkblock");
	digit_block(c, run, bi, db);
	lower_nest(c, 0, first, &start, kb_mrun_point, &first);
	c->lo[run] = c->hi[run] = NULL;
	lower_loop_end(c, &lb);
}

/* ---- m innermost: rows of C under one k (tile_v, channel_in) ----
 *
 * A dense m loop innermost under a k loop keeps one k for all its rows,
 * so the rows are taken X86_ROWS at a time, the k loop walked once per
 * block and column tile, and each X vector multiplied into every row's
 * accumulators (the same point as an m run, with the rows adjacent in
 * storage).  Columns after the tiles go through smaller tiles, then
 * scalar accumulators. */
static void minner_block(LowerCtx *c, const LowerPoint *p, int first, MrunArg *a, MrunArg *a1,
                         LLVMValueRef d0, int rows)
{
	a->d0 = a1->d0 = d0;
	a->rows = a1->rows = rows;
	LowerPoint q = {p->row, ll_add(c, p->m, ll_mul(c, d0, a->sm)), p->k};
	LLVMValueRef from = mrun_columns(c, &q, first, a);
	LowerLoop lr;
	a1->n = lower_loop_begin(c, &lr, LLVMBuildLoad2(c->b, c->i64, from, "from"), c->n1, "irest");
	mrun_tile(c, &q, first, a1);
	lower_loop_end(c, &lr);
}

static void x86_minner(LowerCtx *c, const LowerPoint *p, int first)
{
	const LowerKernel *k = c->k;
	const PirLoop *l = &k->ir->loops[first + 1];
	const int64_t len = l->nnz;
	const int vl = k->vector_width > 1 ? k->vector_width : 1;
	MrunArg a = {.width = vl, .nacc = mrun_nacc(k), .S = 1, .rows = X86_ROWS,
	             .sm = l->comp[0].stride, .inner = true};
	if (x86_stores_c(k))
		a.fresh = c_fresh_at(c, p->row, first);
	a.vty = vl > 1 ? LLVMVectorType(c->f32, (unsigned)vl) : c->f32;
	MrunArg a1 = a;
	a1.width = 1, a1.nacc = 1, a1.vty = c->f32;
	KrunArg f = {.vty = a.vty}, f1 = {.vty = c->f32};
	krun_fma(c, &f);
	krun_fma(c, &f1);
	a.fma = f.fma, a.fma_ty = f.fma_ty, a1.fma = f1.fma, a1.fma_ty = f1.fma_ty;
	for (int r = 0; r < X86_ROWS; r++) {
		for (int u = 0; u < a.nacc; u++)
			a.acc[r][u] = lower_entry_alloca(c, a.vty, "iacc");
		a1.acc[r][0] = lower_entry_alloca(c, c->f32, "iacc1");
	}
	const int64_t blocks = len / X86_ROWS;
	LowerLoop lb;
	LLVMValueRef rb = lower_loop_begin(c, &lb, ll_i64(c, 0), ll_i64(c, blocks), "irows");
	minner_block(c, p, first, &a, &a1, ll_mul(c, rb, X86_ROWS), X86_ROWS);
	lower_loop_end(c, &lb);
	if (len % X86_ROWS)
		minner_block(c, p, first, &a, &a1, ll_i64(c, blocks * X86_ROWS), (int)(len % X86_ROWS));
}

const LowerHooks x86_update_hooks = {
	.stores_c = x86_stores_c, .update = x86_update, .krun = x86_krun, .mrun = x86_mrun, .minner = x86_minner,
	.krun_all = x86_krun_all, .mrun_all = x86_mrun_all};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_targets(void)
{
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
}

void x86_init_llvm(void) { pthread_once(&init_once, init_targets); }

int x86_schedule_width(const KernelSchedule *s, LLVMTargetMachineRef tm)
{
	const int w = x86_vector_width(tm);
	return s->vector_width > 0 && s->vector_width < w ? s->vector_width : w;
}

const char *x86_target_cpu(const char *target)
{
	if (!strcmp(target, "x86-64-avx2"))
		return "haswell";
	if (!strcmp(target, "x86-64-avx512"))
		return "skylake-avx512";
	return NULL;
}

bool x86_host_runs(const char *cpu)
{
	if (!cpu)
		return true;
	/* what LLVM's haswell and skylake-avx512 may emit beyond x86-64 */
	static const char *const haswell[] = {"+avx2", "+fma", "+bmi", "+bmi2", "+f16c", "+lzcnt", "+movbe", NULL};
	static const char *const skx[] = {"+avx2",     "+fma",     "+bmi",     "+bmi2",     "+f16c",
	                                  "+avx512f", "+avx512bw", "+avx512dq", "+avx512vl", "+avx512cd", NULL};
	char *feat = LLVMGetHostCPUFeatures();
	bool ok = true;
	for (const char *const *f = strcmp(cpu, "haswell") ? skx : haswell; *f && ok; f++) {
		const size_t n = strlen(*f);
		const char *at = feat;
		while ((at = strstr(at, *f)) && at[n] && at[n] != ',')
			at += n; /* "+avx512f" inside "+avx512fp16" */
		ok = at != NULL;
	}
	LLVMDisposeMessage(feat);
	return ok;
}

int x86_vector_width(LLVMTargetMachineRef tm)
{
	char *cpu = LLVMGetTargetMachineCPU(tm), *feat = LLVMGetTargetMachineFeatureString(tm);
	/* the features string lists +x and -x; a forced CPU may leave it empty */
	int w = strstr(feat, "+avx512f") ? 16 : strstr(feat, "+avx") ? 8 : 4;
	if (!feat[0])
		w = !strcmp(cpu, "skylake-avx512") ? 16 : !strcmp(cpu, "haswell") ? 8 : 4;
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
	return w;
}

LLVMTargetMachineRef x86_target_machine(const char *cpu, const char *features, bool pic,
                                        char err[X86_ERR_MAX])
{
	x86_init_llvm();
	char *triple = LLVMGetDefaultTargetTriple();
	char *host_cpu = LLVMGetHostCPUName(), *host_feat = LLVMGetHostCPUFeatures();
	char what[128];
	snprintf(what, sizeof what, "no target for %.100s", triple);
	LLVMTargetRef target = ll_target(triple, err, X86_ERR_MAX, what);
	LLVMTargetMachineRef tm = NULL;
	if (target)
		tm = LLVMCreateTargetMachine(target, triple, cpu ? cpu : host_cpu,
		                             features ? features : host_feat, LLVMCodeGenLevelAggressive,
		                             pic ? LLVMRelocPIC : LLVMRelocDefault,
		                             pic ? LLVMCodeModelDefault : LLVMCodeModelJITDefault);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(host_cpu);
	LLVMDisposeMessage(host_feat);
	return tm;
}

bool x86_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, char err[X86_ERR_MAX])
{
	char *cpu = LLVMGetTargetMachineCPU(tm), *feat = LLVMGetTargetMachineFeatureString(tm);
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		if (LLVMCountBasicBlocks(f) > 0) {
			LLVMAddTargetDependentFunctionAttr(f, "target-cpu", cpu);
			LLVMAddTargetDependentFunctionAttr(f, "target-features", feat);
		}
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
	LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
	LLVMErrorRef e = LLVMRunPasses(mod, "default<O3>", tm, po);
	LLVMDisposePassBuilderOptions(po);
	return ll_ok(e, err, X86_ERR_MAX, "optimising the kernel");
}

bool x86_jit(const LowerKernel *k, const char *cpu, const char *features, X86Kernel *out,
             char err[X86_ERR_MAX])
{
	return x86_jit_hooks(k, &x86_update_hooks, cpu, features, out, err);
}

void *x86_lookup(const X86Kernel *k, const char *name)
{
	LLVMOrcExecutorAddress addr;
	LLVMErrorRef e = LLVMOrcLLJITLookup(k->jit, &addr, name);
	if (e) {
		LLVMConsumeError(e);
		return NULL;
	}
	return (void *)(uintptr_t)addr;
}

bool x86_jit_hooks(const LowerKernel *k, const LowerHooks *hooks, const char *cpu, const char *features,
                   X86Kernel *out, char err[X86_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	LLVMTargetMachineRef tm = x86_target_machine(cpu, features, false, err);
	if (!tm)
		return false;
	bool ok = false;
	LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
	LLVMOrcLLJITRef jit = NULL;
	LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
	LLVMModuleRef mod = ll_module(ctx, k->name, tm);
	LowerKernel kv = *k;
	kv.vector_width = x86_schedule_width(&k->sched, tm);
	lower_kernel(ctx, mod, &kv, hooks);
	if (!ll_verify(mod, err, X86_ERR_MAX, "internal: invalid kernel module") || !x86_optimize(mod, tm, err)) {
		LLVMDisposeModule(mod);
		goto done;
	}
	LLVMOrcJITTargetMachineBuilderRef jtmb;
	if (!ll_ok(LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb), err, X86_ERR_MAX, "detecting the host")) {
		LLVMDisposeModule(mod);
		goto done;
	}
	LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
	if (!ll_ok(LLVMOrcCreateLLJIT(&jit, builder), err, X86_ERR_MAX, "creating the JIT")) {
		LLVMDisposeModule(mod);
		goto done;
	}
	LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
	if (!ll_ok(LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm), err, X86_ERR_MAX,
	           "adding the kernel")) {
		LLVMOrcDisposeThreadSafeModule(tsm);
		goto done;
	}
	LLVMOrcExecutorAddress addr;
	if (!ll_ok(LLVMOrcLLJITLookup(jit, &addr, k->name), err, X86_ERR_MAX, "finding the kernel"))
		goto done;
	out->fn = (X86KernelFn)(uintptr_t)addr;
	out->jit = jit;
	out->N = k->N;
	out->chunk = hooks == &x86_update_hooks ? x86_chunk_columns(&kv) : k->N;
	jit = NULL;
	ok = true;
done:
	if (jit)
		LLVMOrcDisposeLLJIT(jit);
	LLVMOrcDisposeThreadSafeContext(tsc);
	LLVMDisposeTargetMachine(tm);
	return ok;
}

void x86_kernel_free(X86Kernel *k)
{
	if (k->jit)
		LLVMOrcDisposeLLJIT((LLVMOrcLLJITRef)k->jit);
	memset(k, 0, sizeof *k);
}

typedef struct Job {
	const X86Kernel *k;
	const float *X, *values;
	float *C;
	const int32_t *const *index;
	int threads;
} Job;

static void run_slice(void *arg, int t)
{
	const Job *j = arg;
	const int64_t n0 = x86_slice_bound(j->k->N, t, j->threads), n1 = x86_slice_bound(j->k->N, t + 1, j->threads);
	const int64_t w = j->k->chunk > 0 ? j->k->chunk : n1 - n0;
	for (int64_t a = n0, b; a < n1; a = b) {
		b = x86_chunk_end(a, n1, w);
		j->k->fn(j->X, j->C, j->values, j->index, a, b);
	}
}

/* Column chunks.  Where X is large, a thread's columns are run in chunks
 * whose X (K x chunk floats, about X86_CHUNK_X_BYTES; at least one tile)
 * stays in L2 while every row reads it, instead of streaming all of X from
 * L3 once per block row; the weights are read once per chunk instead.
 * "Large" is X86_CHUNK_MRUN_FROM for the m runs (blocks, 2:4, the hybrid),
 * whose weights are few beside their work, and X86_CHUNK_FROM_BYTES for
 * the rest.  Not where the k run's outer loop is perforated
 * (row-balanced): its X blocks already stay in L1.  A chunk is a multiple
 * of the widest tile (64 columns for the AVX-512 m runs, X86_CHUNK_ALIGN
 * for the rest), so only a slice's last chunk has partial tiles; a
 * remainder under half a chunk goes with the slice's last chunk
 * (x86_chunk_end), since a chunk of a few columns reads all the weights
 * for little work.  The m runs under an outer k loop (blocks, the hybrid)
 * are blocked along it for the chunk's X (mrun_all_blocks), so their
 * chunks keep at least 128 columns; the other m runs (2:4; small blocks
 * going across) take chunks of one tile where that keeps X within
 * X86_CHUNK_X_BYTES.  The bounds are measured in docs/design/x86-chunks.md.
 * Returns N where there are no chunks. */
enum {
	X86_CHUNK_MRUN_FROM = 1 << 20,
	X86_CHUNK_FROM_BYTES = 8 << 20,
	X86_CHUNK_X_BYTES = 1 << 20,
	X86_CHUNK_ALIGN = 128
};

int64_t x86_chunk_columns(const LowerKernel *k)
{
	if (k->sched.chunk < 0)
		return k->N;
	if (k->sched.chunk > 0) { /* the schedule's: whole tiles of the widest kind */
		const int64_t al = (int64_t)k->vector_width * 8 > 0 ? (int64_t)k->vector_width * 8 : 1;
		const int64_t w = (k->sched.chunk + al - 1) / al * al;
		return w < k->N ? w : k->N;
	}
	const Pir *ir = k->ir;
	Nest nest;
	nest_of(ir, &nest);
	const int split = nest.split;
	const bool mrun = lower_path(k, &x86_update_hooks) == LOWER_MRUN;
	const double from = mrun ? X86_CHUNK_MRUN_FROM : X86_CHUNK_FROM_BYTES;
	if ((double)k->K * (double)k->N * 4 <= from || k->layout != PAT_LAYOUT_KN ||
	    (split < ir->nloops && pir_loop_is_perforated(&ir->loops[split])))
		return k->N;
	const int64_t tile = (int64_t)k->vector_width * mrun_nacc(k);
	const bool one_tile = mrun && (double)k->K * 4.0 * (double)tile <= X86_CHUNK_X_BYTES &&
	                      (nest.k_above < 0 || across_for(k) >= 0);
	const int64_t al = one_tile ? tile : X86_CHUNK_ALIGN;
	int64_t w = (int64_t)(X86_CHUNK_X_BYTES / (4.0 * (double)k->K)) / al * al;
	return w < al ? al : w;
}

void x86_run(const X86Kernel *k, const float *X, float *C, const float *values,
             const int32_t *const *index, int threads)
{
	if (threads < 1)
		threads = 1;
	if (threads > k->N)
		threads = (int)k->N;
	if (threads > POOL_MAX_THREADS)
		threads = POOL_MAX_THREADS;
	Job j = {k, X, values, C, index, threads};
	pool_run(threads, run_slice, &j);
}

void x86_kernel_traits(const LowerKernel *k, X86Traits *t)
{
	Nest nest;
	nest_of(k->ir, &nest);
	const int split = nest.split;
	t->path = lower_path(k, &x86_update_hooks);
	t->x_reuse = x_reuse(k);
	t->panel = panel_pays(k);
	t->chunk = x86_chunk_columns(k);
	t->rows_spread = x_rows_spread(k);
	t->across = t->path == LOWER_MRUN && split > 0 && across_for(k) >= 0;
	t->stores_c = x86_stores_c(k);
}
