/* SPDX-License-Identifier: MIT */
/* krun.c - the x86 k runs (LowerHooks.krun, .krun_all): a tile of one row
 * of C in vector registers over a run along k, the columns after the full
 * tiles, and the runs blocked along k (condensed X, panels, rows two at a
 * time).  The m runs (mrun.c) reuse its tiles. */
#include "x86_impl.h"

/* ---- k runs: a tile of one row of C in registers ----
 *
 * When the innermost loops run along k only (blocks, N:M, rows), the
 * kernel walks them once per tile of U vectors of C's row m: each kept
 * weight broadcasts and FMAs into the tile's accumulators, and the tile
 * is added to C once at the end, instead of loading and storing C for
 * every weight.  Columns left over after the tiles get the same with one
 * scalar accumulator.  (KrunArg, X86_UNROLL: x86_impl.h.) */

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
	/* a padding column of W: its weight is 0, and X has no such row */
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kpoint");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kpad");
	LLVMBuildCondBr(c->b, x86_k_in_range(c, p), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	LLVMValueRef row = p->row;
	LLVMValueRef w = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, c->values, &row, 1, ""), "w");
	LLVMValueRef wv = x86_splat(c, w, a->width);
	LLVMValueRef xs = a->xt ? a->xt : a->xbuf ? a->xbuf : c->X;
	LLVMValueRef base = a->xt     ? LLVMBuildNSWMul(c->b, p->k, a->ldk, "")
	                    : a->xbuf ? ll_mul(c, LLVMBuildNSWSub(c->b, p->k, a->klo, ""), a->ldx)
	                              : ll_add(c, ll_mulv(c, p->k, c->N), a->n);
	if (!a->xt && a->xbuf && a->xcol)
		base = ll_add(c, base, a->n);
	if (!a->xt && a->xbuf && a->xrows > 0) { /* outside the buffer's rows: X itself */
		LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntULT, LLVMBuildSub(c->b, p->k, a->klo, ""), ll_i64(c, a->xrows), "");
		LLVMValueRef direct = ll_add(c, ll_mulv(c, p->k, c->N), a->n);
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

void x86_krun_point(LowerCtx *c, const LowerPoint *p, void *arg) { krun_point_at(c, p, arg, 0); }

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

static void krun_write(LowerCtx *c, bool add, bool epi, const void *arg)
{
	const KrunWrite *w = arg;
	const KrunArg *a = w->a;
	LLVMValueRef base = ll_add(c, ll_mulv(c, w->p->m, c->N), a->n);
	LLVMValueRef bias = epi ? x86_row_bias(c, w->p->m, a->width) : NULL;
	for (int u = 0; u < a->nacc; u++) {
		LLVMValueRef at = ll_add(c, base, ll_i64(c, (int64_t)u * a->width));
		x86_c_update(c, a->vty, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""),
		         LLVMBuildLoad2(c->b, a->vty, a->acc[w->r * a->nacc + u], ""), add, bias);
	}
}

/* One pass of the k run for columns n.. n + width * nacc - 1. */
void x86_krun_tile(LowerCtx *c, const LowerPoint *p, int first, KrunArg *a)
{
	const LowerKernel *k = c->k;
	LLVMValueRef zero = LLVMConstNull(a->vty);
	for (int u = 0; u < a->nacc; u++)
		LLVMBuildStore(c->b, zero, a->acc[u]);
	lower_nest(c, first, k->ir->nloops, p, x86_krun_point, a);
	KrunWrite w = {p, a, 0};
	x86_c_write(c, a->when, krun_write, &w);
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
		x86_c_write(c, a->when, krun_write, &w);
	}
}

/* Declares llvm.fmuladd for a's vector type. */
void x86_krun_fma(LowerCtx *c, KrunArg *a)
{
	unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
	a->fma = LLVMGetIntrinsicDeclaration(c->mod, id, &a->vty, 1);
	a->fma_ty = LLVMIntrinsicGetType(c->ctx, id, &a->vty, 1);
}

typedef struct KrestArg {
	const LowerPoint *p;
	int first, vl;
	X86When when;
} KrestArg;

static void krest_tile(LowerCtx *c, int nacc, LLVMValueRef n, void *arg)
{
	const KrestArg *ka = arg;
	KrunArg t = {.width = ka->vl, .nacc = nacc, .n = n, .vty = LLVMVectorType(c->f32, (unsigned)ka->vl),
	             .when = ka->when};
	x86_krun_fma(c, &t);
	for (int u = 0; u < nacc; u++)
		t.acc[u] = lower_entry_alloca(c, t.vty, "racc");
	x86_krun_tile(c, ka->p, ka->first, &t);
}

/* The columns from *from (an i64 alloca) to n1 after the full tiles: one
 * pass for each smaller power-of-two count of vectors that still fits
 * (at most one each), then one scalar pass per column left. */
static void krun_rest(LowerCtx *c, const LowerPoint *p, int first, int vl, int unroll,
                      LLVMValueRef from, X86When when)
{
	KrestArg ka = {p, first, vl, when};
	x86_smaller_tiles(c, from, vl, unroll, krest_tile, &ka);
	KrunArg r = {.width = 1, .nacc = 1, .vty = c->f32, .when = when};
	x86_krun_fma(c, &r);
	r.acc[0] = lower_entry_alloca(c, c->f32, "acc1");
	LowerLoop lr;
	r.n = lower_loop_begin(c, &lr, LLVMBuildLoad2(c->b, c->i64, from, "from"), c->n1, "rest");
	x86_krun_tile(c, p, first, &r);
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
	x86_krun_fma(c, t);
	for (int u = 0; u < t->nacc; u++)
		t->acc[u] = lower_entry_alloca(c, t->vty, "acc");
	return (int64_t)vl * t->nacc;
}

/* The k run at p from loop `first`, over all the columns; when: see
 * KrunArg. */
void x86_krun_at(LowerCtx *c, const LowerPoint *p, int first, X86When when)
{
	KrunArg t;
	const int64_t nt = krun_full_tile(c, &t);
	t.when = when;
	const int vl = t.width, unroll = t.nacc;
	LLVMValueRef span = LLVMBuildNSWSub(c->b, c->n1, c->n0, "");
	LLVMValueRef tiles = LLVMBuildSDiv(c->b, span, ll_i64(c, nt), "tiles");
	LowerLoop lt;
	LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "tile");
	t.n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
	x86_krun_tile(c, p, first, &t);
	lower_loop_end(c, &lt);
	/* the columns left over */
	LLVMValueRef from = lower_entry_alloca(c, c->i64, "from");
	LLVMBuildStore(c->b, ll_add(c, c->n0, ll_mul(c, tiles, nt)), from);
	krun_rest(c, p, first, vl, unroll, from, when);
}

void x86_krun(LowerCtx *c, const LowerPoint *p, int first)
{
	x86_krun_at(c, p, first, x86_c_when(c, p->row, first, x86_stores_c(c->k)));
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
 * docs/design/x86-k-runs.md).  (X86_KBLOCK_ROWS, X86_KBLOCK_DIGITS,
 * X86_XSLACK, X86_KROW_BYTES, X86_XBUF_REUSE: x86_impl.h.) */

/* The most bytes of X's rows a k run copies into its buffer, which is on
 * the kernel's stack (a thread's may be small); past it X is read where
 * it lies. */
enum { X86_XBUF_MAX = 256 << 10 };

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
	LLVMValueRef real = LLVMBuildICmp(c->b, LLVMIntSLT, p->m, ll_i64(c, c->k->shape.M), "real");
	LLVMBuildCondBr(c->b, real, body, *skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	return real;
}

static void kblock_tile_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	KblockArg *a = arg;
	LLVMBasicBlockRef skip;
	skip_padding_rows(c, p, &skip);
	a->t->when = x86_c_when(c, p->row, a->first, a->store);
	x86_krun_tile(c, p, a->first, a->t);
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

static void kblock_rest_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	KblockArg *a = arg;
	LLVMBasicBlockRef skip;
	skip_padding_rows(c, p, &skip);
	LLVMBuildStore(c->b, a->rest, a->from);
	krun_rest(c, p, a->first, a->vl, a->unroll, a->from, x86_c_when(c, p->row, a->first, a->store));
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
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, ps[rows - 1].m, ll_i64(c, c->k->shape.M), ""), all, each);
	LLVMPositionBuilderAtEnd(c->b, all);
	t->when = x86_c_when(c, ps[0].row, a->first, a->store);
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

void x86_krun_all(LowerCtx *c, int split)
{
	const Pir *ir = c->k->ir;
	const PirLoop *outer = &ir->loops[split];
	double span = x86_run_rows_per_digit(ir, split);
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
		if ((x86_x_reuse(c->k) >= X86_XBUF_REUSE || !x86_x_rows_spread(c->k)) && rows_m_only && outer->ncomp == 1 &&
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
			if (approx && x86_panel_pays(c->k)) { /* panels instead: every k is in them */
				panel.nt = nt;
				raw = x86_panel_pack(c, &panel);
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
		x86_panel_tile(c, &panel, t.n, &t.xt, &t.ldk);
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
			x86_digit_block(c, 0, ri, dr);
		}
	}
	int64_t blocks = (outer->nnz + db - 1) / db;
	LLVMValueRef bi = lower_loop_begin(c, &lb, ll_i64(c, 0), ll_i64(c, blocks), "kblock");
	LLVMValueRef lo = x86_digit_block(c, split, bi, db);
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
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kk, ll_i64(c, c->k->shape.K), ""), cp, nx);
		LLVMPositionBuilderAtEnd(c->b, cp);
		LLVMValueRef src = ll_add(c, ll_mulv(c, kk, c->N), t.n);
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
		x86_free(c, raw);
	/* the columns left over, unblocked */
	a.rest = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, tiles, nt), "rest");
	lower_nest(c, 0, split, &start, kblock_rest_point, &a);
}
