/* SPDX-License-Identifier: MIT */
/* nkdot.c - layout nk (X is N x K, C is N x M, C = X W^T) without the
 * panels' transposes, for the nests whose rows of W share their kept k in
 * groups of rows contiguous along m, a vector of rows or more: tiles
 * (tile_v), channel_in, and blocks (block(bm, bk), bm >= 16 on AVX-512,
 * through a transposed copy of each block row).
 *
 * C[n, m..m+R) is a row of C, contiguous in nk.  Where R rows of W keep
 * the same k, C[n, m..m+R) = sum over kept k of X[n, k] W[m..m+R, k]: a
 * vector of W's column times X[n, k] broadcast.  A tile of T tokens x R
 * rows (12 x 32 on AVX-512: 24 accumulators of 16 floats) loads the R
 * floats of W's column once for T tokens and each X[n, k] once for R
 * rows, and stores each element of C once, fully summed, with the op's
 * epilogue.  Nothing is transposed and nothing reduced across lanes.
 * (The dot products along k that docs/design/x86-nk.md first proposed
 * need a horizontal reduction of each accumulator, about 3 vector ops per
 * element of C, as much as all the FMAs of a row at 93.75%: see there.)
 *
 * Two forms (NkForm):
 *  - columns: the innermost loop is a dense m loop under a loop along k
 *    (tile_v: m0 k^p m1; channel_in: k^p m), so each kept k's weights of
 *    the inner m loop are contiguous in values: W's column as stored.
 *    Tokens go outermost (each tile of T tokens walks all rows), so that
 *    the T rows of X stay in cache while the weights stream: kept k
 *    scattered along k use one float of each line of X they touch.
 *  - blocks: a dense k run under a dense m loop under a loop along k
 *    (block: m0 k0^p m1 k1): each block row's kept blocks are transposed
 *    into a buffer (the panels' 8 x 8 transposes, nk.c), k-major, then
 *    walked as columns by every tile of tokens.  Rows go outermost here:
 *    the buffer (one block row's kept weights) stays in L1 or L2, and the
 *    runs of k use X's lines whole; each kept block prefetches its lines
 *    of the next tile of tokens into L2 (prefetch_next).  The buffer
 *    comes from malloc; where it cannot be had the kernel runs the panels
 *    (`fallback`).
 * Every loop above is a plain dense m loop, so each element of C is
 * written by exactly one tile, once: C is neither zeroed nor re-read
 * (but for accumulate). */
#include "x86_impl.h"

#include <string.h>

/* Tiles: rows of accumulators up to X86_NK_ACC vectors, tokens T of them. */
enum { X86_NK_ACC = 24, X86_NK_MAXT = 16 };
/* Prefetches: of a run of k longer than this, only its first floats'
 * lines and its last. */
enum { X86_NK_MAXRUN = 256 };

/* Whether loop l is a loop along k only. */
static bool along_k(const PirLoop *l) { return !pir_loop_has_axis(l, PIR_AXIS_M); }

/* A plain dense m loop whose rows are contiguous (stride 1). */
static bool m_contiguous(const PirLoop *l) { return nest_loop_plain(l, PIR_AXIS_M) && l->comp[0].stride == 1; }

bool x86_nkdot_plan(const LowerKernel *k, NkPlan *pl)
{
	memset(pl, 0, sizeof *pl);
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	if (k->shape.layout != PAT_LAYOUT_NK || k->vector_width < 8 || n < 2)
		return false;
	const PirLoop *last = &ir->loops[n - 1];
	if (m_contiguous(last) && along_k(&ir->loops[n - 2])) {
		pl->form = NK_COLUMNS, pl->kloop = n - 2, pl->run = 1;
	} else if (n >= 3 && last->ncomp == 1 && last->comp[0].axis == PIR_AXIS_K && last->comp[0].stride == 1 &&
	           !pir_loop_is_perforated(last) && m_contiguous(&ir->loops[n - 2]) && along_k(&ir->loops[n - 3])) {
		pl->form = NK_BLOCKS, pl->kloop = n - 3, pl->run = last->len;
	} else {
		return false;
	}
	for (int i = 0; i < pl->kloop; i++)
		if (!nest_loop_plain(&ir->loops[i], PIR_AXIS_M))
			return false;
	pl->L = ir->loops[pl->kloop + 1].len;
	/* vectors of the host's width, the inner m loop's last rows masked
	 * where it is no multiple of them.  Not for fewer rows than a vector:
	 * 8 x 8 blocks in vectors of 8 rows, one FMA per broadcast of X, ran
	 * at half the panels' speed (768 x 768 x 512 at 50%, one thread:
	 * 3.81 ms against 1.97 ms) */
	pl->w = k->vector_width;
	if (pl->L < pl->w)
		return false;
	pl->nv = pl->L > pl->w ? 2 : 1;
	pl->T = pl->nv == 2 ? 12 : 16;
	return true;
}

/* ---- a tile: T tokens x nv vectors of rows ---- */

typedef struct Tile {
	const NkPlan *pl;
	LLVMTypeRef vty;
	LLVMValueRef fma;
	LLVMTypeRef fma_ty;
	LLVMValueRef acc[X86_NK_ACC]; /* token t, vector v: acc[t nv + v] (allocas) */
	LLVMValueRef xrow[X86_NK_MAXT]; /* X's row of each token */
	LLVMValueRef wmask[2];          /* vector v's rows within the inner m loop, or NULL: all */
	int T;
	LLVMValueRef wbase; /* blocks: the transposed block row */
	LLVMValueRef row0;  /* blocks: the storage prefix of the block row's first kept block */
	LLVMValueRef r0;    /* the tile's first row within the inner m loop (i64) */
} Tile;

/* llvm.masked.load/store of a vector of ty. */
static LLVMValueRef masked(LowerCtx *c, bool store, LLVMTypeRef vty, LLVMValueRef p, LLVMValueRef mask, LLVMValueRef v)
{
	const char *name = store ? "llvm.masked.store" : "llvm.masked.load";
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMTypeRef tys[2] = {vty, c->ptr};
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, tys, 2);
	LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, tys, 2);
	LLVMValueRef al = LLVMConstInt(c->i32, 4, 0);
	if (store)
		return LLVMBuildCall2(c->b, fty, fn, (LLVMValueRef[]){v, p, al, mask}, 4, "");
	return LLVMBuildCall2(c->b, fty, fn, (LLVMValueRef[]){p, al, mask, LLVMConstNull(vty)}, 4, "");
}

/* A vector at p: loaded whole, or masked (mask not NULL). */
static LLVMValueRef load_vec(LowerCtx *c, LLVMTypeRef vty, LLVMValueRef p, LLVMValueRef mask)
{
	if (mask)
		return masked(c, false, vty, p, mask, NULL);
	LLVMValueRef v = LLVMBuildLoad2(c->b, vty, p, "");
	LLVMSetAlignment(v, 4);
	return v;
}

/* X[n, k] of the tile's token t, broadcast; 0 for a padding k (k >= K). */
static LLVMValueRef x_at(LowerCtx *c, const Tile *t, int tok, LLVMValueRef k)
{
	const int64_t K = c->k->shape.K;
	const bool pads = c->k->ir->ext[PIR_AXIS_K] > K;
	LLVMValueRef kk = k;
	if (pads) /* read in range, then zero: 0 x X[n, K-1] could be NaN */
		kk = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, k, ll_i64(c, K), ""), k, ll_i64(c, K - 1), "");
	LLVMValueRef x = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, t->xrow[tok], &kk, 1, ""), "x");
	if (pads)
		x = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, k, ll_i64(c, K), ""), x,
		                    LLVMConstReal(c->f32, 0.0), "");
	return x86_splat(c, x, t->pl->w);
}

/* The tile's FMAs for one column: W's rows at wp (nv vectors) times X[., k]. */
static void column(LowerCtx *c, const Tile *t, LLVMValueRef wp, LLVMValueRef k)
{
	const int nv = t->pl->nv;
	LLVMValueRef w[2];
	for (int v = 0; v < nv; v++) {
		LLVMValueRef at = ll_i64(c, (int64_t)v * t->pl->w);
		w[v] = load_vec(c, t->vty, LLVMBuildGEP2(c->b, c->f32, wp, &at, 1, ""), t->wmask[v]);
	}
	for (int tok = 0; tok < t->T; tok++) {
		LLVMValueRef x = x_at(c, t, tok, k);
		for (int v = 0; v < nv; v++) {
			LLVMValueRef a = t->acc[tok * nv + v];
			LLVMValueRef args[3] = {w[v], x, LLVMBuildLoad2(c->b, t->vty, a, "")};
			LLVMBuildStore(c->b, LLVMBuildCall2(c->b, t->fma_ty, t->fma, args, 3, ""), a);
		}
	}
}

/* LowerAt over the k loop, columns: W's column of the point's kept k. */
static void at_column(LowerCtx *c, const LowerPoint *q, void *arg)
{
	const Tile *t = arg;
	LLVMValueRef at = ll_add(c, ll_mul(c, q->row, t->pl->L), t->r0);
	column(c, t, LLVMBuildGEP2(c->b, c->f32, c->values, &at, 1, "wcol"), q->k);
}

/* Prefetches into L2 of X[n + T, k] for each token n of the tile and k
 * from k0 to k0 + run - 1 (a float at every 16th k and the last): the
 * lines of this kept block that the next tile of tokens reads.  Without
 * them each block's first k waits on T misses to L3 or memory, since the
 * kept blocks of a row are scattered along k and no hardware prefetcher
 * follows them (4096^3, block 32 x 32 at 93.75%, 2 threads: 35-39 ms
 * without, 29-31 with, kn 26).  Into L2, not L1: X's rows are K floats
 * apart, so with K a multiple of 1024 the next tile's lines fall in the
 * same L1 set as this tile's and evicted them (33-43 ms).  Past X's end
 * a prefetch does nothing. */
static void prefetch_next(LowerCtx *c, const Tile *t, LLVMValueRef k0, int64_t run)
{
	static const char name[] = "llvm.prefetch";
	unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, &c->ptr, 1);
	LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, &c->ptr, 1);
	const int64_t ahead = (int64_t)t->T * c->k->shape.K;
	int64_t offs[X86_NK_MAXRUN / 16 + 2], n = 0; /* k - k0 of the floats prefetched */
	for (int64_t off = 0; off < run && n < X86_NK_MAXRUN / 16; off += 16)
		offs[n++] = off;
	if ((run - 1) % 16) /* the last line, wherever the run starts within one */
		offs[n++] = run - 1;
	for (int tok = 0; tok < t->T; tok++)
		for (int64_t i = 0; i < n; i++) {
			LLVMValueRef at = ll_add(c, k0, ll_i64(c, ahead + offs[i]));
			LLVMValueRef args[4] = {LLVMBuildGEP2(c->b, c->f32, t->xrow[tok], &at, 1, ""),
			                        LLVMConstInt(c->i32, 0, 0), /* read */
			                        LLVMConstInt(c->i32, 2, 0), /* L2 */
			                        LLVMConstInt(c->i32, 1, 0)}; /* data */
			LLVMBuildCall2(c->b, fty, fn, args, 4, "");
		}
}

/* LowerAt over the k loop, blocks: the kept block's run of k, its columns
 * in the transposed buffer (column j of block d at (d run + j) L). */
static void at_block(LowerCtx *c, const LowerPoint *q, void *arg)
{
	const Tile *t = arg;
	const NkPlan *pl = t->pl;
	prefetch_next(c, t, q->k, pl->run);
	LLVMValueRef d = LLVMBuildNSWSub(c->b, q->row, t->row0, "d");
	LowerLoop lj;
	LLVMValueRef j = lower_loop_begin(c, &lj, ll_i64(c, 0), ll_i64(c, pl->run), "kj");
	LLVMValueRef at = ll_add(c, ll_mul(c, ll_add(c, ll_mul(c, d, pl->run), j), pl->L), t->r0);
	column(c, t, LLVMBuildGEP2(c->b, c->f32, t->wbase, &at, 1, "wcol"), ll_add(c, q->k, j));
	lower_loop_end(c, &lj);
}

/* C's rows of the tile (rows m.. of tokens n..), with the epilogue: bias
 * read where withbias, lanes of rows >= M left alone where partial. */
static void store_tile(LowerCtx *c, const Tile *t, LLVMValueRef n, LLVMValueRef m, bool withbias, bool partial)
{
	const int64_t M = c->k->shape.M;
	const int nv = t->pl->nv, w = t->pl->w;
	LLVMValueRef mask[2] = {NULL, NULL}, bias[2] = {NULL, NULL};
	for (int v = 0; v < nv; v++) {
		LLVMValueRef mv = ll_add(c, m, ll_i64(c, (int64_t)v * w));
		if (partial) { /* lanes i with mv + i < M */
			LLVMValueRef iota[64], left = LLVMBuildNSWSub(c->b, ll_i64(c, M), mv, "");
			for (int i = 0; i < w; i++)
				iota[i] = ll_i64(c, i);
			LLVMTypeRef ity = LLVMVectorType(c->i64, (unsigned)w);
			LLVMValueRef one = LLVMBuildInsertElement(c->b, LLVMGetUndef(ity), left, LLVMConstInt(c->i32, 0, 0), "");
			LLVMValueRef bl = LLVMBuildShuffleVector(c->b, one, LLVMGetUndef(ity), LLVMConstNull(LLVMVectorType(c->i32, (unsigned)w)), "");
			mask[v] = LLVMBuildICmp(c->b, LLVMIntSLT, LLVMConstVector(iota, (unsigned)w), bl, "rows");
		}
		if (withbias)
			bias[v] = load_vec(c, t->vty, LLVMBuildGEP2(c->b, c->f32, c->bias, &mv, 1, ""), mask[v]);
	}
	for (int tok = 0; tok < t->T; tok++)
		for (int v = 0; v < nv; v++) {
			LLVMValueRef at = ll_add(c, ll_mul(c, ll_add(c, n, ll_i64(c, tok)), M), ll_add(c, m, ll_i64(c, (int64_t)v * w)));
			LLVMValueRef cp = LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, "");
			LLVMValueRef old = c->k->shape.accumulate ? load_vec(c, t->vty, cp, mask[v]) : NULL;
			LLVMValueRef s = lower_epilogue(c, LLVMBuildLoad2(c->b, t->vty, t->acc[tok * nv + v], ""), bias[v], old);
			if (mask[v])
				masked(c, true, t->vty, cp, mask[v], s);
			else
				LLVMSetAlignment(LLVMBuildStore(c->b, s, cp), 4);
		}
}

/* One tile: rows m.. (r0 within the inner m loop, p the point above the
 * k loop), tokens n..n+T: its accumulators summed over the kept k and
 * stored.  Tiles wholly in M's padding are skipped. */
static void tile(LowerCtx *c, Tile *t, const LowerPoint *p, LLVMValueRef n)
{
	const NkPlan *pl = t->pl;
	const int64_t M = c->k->shape.M, R = (int64_t)pl->w * pl->nv;
	LLVMValueRef m = ll_add(c, p->m, t->r0);
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "tile"),
	                  skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "tiled");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, M), ""), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	for (int tok = 0; tok < t->T; tok++) {
		LLVMValueRef at = ll_mul(c, ll_add(c, n, ll_i64(c, tok)), c->k->shape.K);
		t->xrow[tok] = LLVMBuildGEP2(c->b, c->f32, c->X, &at, 1, "xrow");
		for (int v = 0; v < pl->nv; v++)
			LLVMBuildStore(c->b, LLVMConstNull(t->vty), t->acc[tok * pl->nv + v]);
	}
	t->row0 = ll_mul(c, p->row, c->k->ir->loops[pl->kloop].nnz);
	lower_nest(c, pl->kloop, pl->kloop + 1, p, pl->form == NK_COLUMNS ? at_column : at_block, t);
	/* with the bias and without, whole rows and (only where M is not a
	 * multiple of the tile's rows) the last, partial ones */
	const bool may_part = M % R != 0;
	LLVMValueRef whole = may_part ? LLVMBuildICmp(c->b, LLVMIntSLE, ll_add(c, m, ll_i64(c, R)), ll_i64(c, M), "") : NULL;
	LLVMValueRef hasb = LLVMBuildIsNotNull(c->b, c->bias, "");
	for (int part = 0; part <= (int)may_part; part++) {
		LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cpart");
		if (may_part) {
			LLVMBasicBlockRef here = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cwhole");
			LLVMBuildCondBr(c->b, whole, part ? next : here, part ? here : next);
			LLVMPositionBuilderAtEnd(c->b, here);
		}
		LLVMBasicBlockRef wb = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cbias"),
		                  nb = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cnobias");
		LLVMBuildCondBr(c->b, hasb, wb, nb);
		LLVMPositionBuilderAtEnd(c->b, wb);
		store_tile(c, t, n, m, true, part);
		LLVMBuildBr(c->b, skip);
		LLVMPositionBuilderAtEnd(c->b, nb);
		store_tile(c, t, n, m, false, part);
		LLVMBuildBr(c->b, skip);
		LLVMPositionBuilderAtEnd(c->b, next);
	}
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

/* ---- the walks ---- */

typedef struct Walk {
	Tile *tile;
	LLVMValueRef n;      /* columns: the tile's first token */
	const LowerPoint *p; /* blocks: the point above the k loop */
	LLVMValueRef buffer; /* blocks: the transposed block row */
	LLVMValueRef tr;     /* blocks: patc.transpose */
} Walk;

typedef void (*TokensAt)(LowerCtx *c, LLVMValueRef n, Walk *wk);

/* The tokens n0..n1 in tiles of the plan's T, then of 4, then of 1. */
static void tokens(LowerCtx *c, Walk *wk, TokensAt at)
{
	const int ts[3] = {wk->tile->pl->T, 4, 1};
	LLVMValueRef from = c->n0;
	for (int i = 0; i < 3; i++) {
		wk->tile->T = ts[i];
		LLVMValueRef cnt = LLVMBuildSDiv(c->b, LLVMBuildNSWSub(c->b, c->n1, from, ""), ll_i64(c, ts[i]), "ntiles");
		LowerLoop lt;
		LLVMValueRef g = lower_loop_begin(c, &lt, ll_i64(c, 0), cnt, "ntile");
		at(c, ll_add(c, from, ll_mul(c, g, ts[i])), wk);
		lower_loop_end(c, &lt);
		from = ll_add(c, from, ll_mul(c, cnt, ts[i]));
	}
}

/* The row tiles of the point above the k loop: the inner m loop's whole
 * tiles of R rows in a loop, then its last rows, if any, in a tile whose
 * rows past the loop's end are not read. */
static void row_tiles(LowerCtx *c, Tile *t, const LowerPoint *p, LLVMValueRef n)
{
	const int w = t->pl->w;
	const int64_t R = (int64_t)w * t->pl->nv, L = t->pl->L;
	t->wmask[0] = t->wmask[1] = NULL;
	if (L / R == 1) {
		t->r0 = ll_i64(c, 0);
		tile(c, t, p, n);
	} else if (L / R > 1) {
		LowerLoop lr;
		t->r0 = ll_mul(c, lower_loop_begin(c, &lr, ll_i64(c, 0), ll_i64(c, L / R), "rtile"), R);
		tile(c, t, p, n);
		lower_loop_end(c, &lr);
	}
	if (L % R == 0)
		return;
	t->r0 = ll_i64(c, L / R * R);
	for (int v = 0; v < t->pl->nv; v++) {
		const int64_t left = L % R - (int64_t)v * w;
		LLVMValueRef bits[64];
		for (int i = 0; i < w; i++)
			bits[i] = LLVMConstInt(LLVMInt1TypeInContext(c->ctx), i < left, 0);
		t->wmask[v] = left >= w ? NULL : LLVMConstVector(bits, (unsigned)w);
	}
	tile(c, t, p, n);
}

/* Columns: every point above the k loop for one tile of tokens. */
static void at_outer_columns(LowerCtx *c, const LowerPoint *p, void *arg)
{
	Walk *wk = arg;
	row_tiles(c, wk->tile, p, wk->n);
}

static void columns_tokens(LowerCtx *c, LLVMValueRef n, Walk *wk)
{
	wk->n = n;
	LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
	lower_nest(c, 0, wk->tile->pl->kloop, &start, at_outer_columns, wk);
}

static void blocks_tokens(LowerCtx *c, LLVMValueRef n, Walk *wk) { row_tiles(c, wk->tile, wk->p, n); }

/* Blocks: the block row's kept blocks transposed into the buffer (block
 * d's L x run weights, row-major, to run x L), then every tile of tokens. */
static void at_outer_blocks(LowerCtx *c, const LowerPoint *p, void *arg)
{
	Walk *wk = arg;
	const NkPlan *pl = wk->tile->pl;
	const int64_t nnz = c->k->ir->loops[pl->kloop].nnz, blk = pl->L * pl->run;
	LowerLoop ld;
	LLVMValueRef d = lower_loop_begin(c, &ld, ll_i64(c, 0), ll_i64(c, nnz), "tblock");
	LLVMValueRef src = ll_mul(c, ll_add(c, ll_mul(c, p->row, nnz), d), blk), dst = ll_mul(c, d, blk);
	LLVMValueRef args[6] = {LLVMBuildGEP2(c->b, c->f32, c->values, &src, 1, ""), ll_i64(c, pl->run),
	                        LLVMBuildGEP2(c->b, c->f32, wk->buffer, &dst, 1, ""), ll_i64(c, pl->L), ll_i64(c, pl->L),
	                        ll_i64(c, pl->run)};
	LLVMBuildCall2(c->b, LLVMGlobalGetValueType(wk->tr), wk->tr, args, 6, "");
	lower_loop_end(c, &ld);
	wk->p = p;
	wk->tile->wbase = wk->buffer;
	tokens(c, wk, blocks_tokens);
}

/* The index arrays of the perforated loops, loaded once (as lower_kernel). */
static void load_index(LowerCtx *c)
{
	const Pir *ir = c->k->ir;
	for (int i = 0; i < ir->nloops; i++)
		if (pir_loop_is_perforated(&ir->loops[i])) {
			LLVMValueRef at = ll_i64(c, i);
			LLVMValueRef slot = LLVMBuildGEP2(c->b, c->ptr, c->index, &at, 1, "");
			c->idx[i] = lower_invariant(c, LLVMBuildLoad2(c->b, c->ptr, slot, ir->loops[i].name));
		}
}

LLVMValueRef x86_nkdot(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k, const NkPlan *pl,
                       LLVMValueRef fallback)
{
	Nest nest;
	nest_of(k->ir, &nest);
	LowerCtx c = {.ctx = ctx, .nest = &nest};
	lower_function(&c, mod, k);
	c.split = nest.split;
	load_index(&c);
	Tile t = {.pl = pl, .vty = LLVMVectorType(c.f32, (unsigned)pl->w)};
	unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
	t.fma = LLVMGetIntrinsicDeclaration(mod, id, &t.vty, 1);
	t.fma_ty = LLVMIntrinsicGetType(ctx, id, &t.vty, 1);
	for (int i = 0; i < pl->T * pl->nv; i++)
		t.acc[i] = lower_entry_alloca(&c, t.vty, "acc");
	Walk wk = {.tile = &t};
	if (pl->form == NK_COLUMNS) {
		tokens(&c, &wk, columns_tokens);
		LLVMBuildRetVoid(c.b);
		LLVMDisposeBuilder(c.b);
		return c.fn;
	}
	/* blocks: one block row's kept blocks, transposed */
	const int64_t bytes = k->ir->loops[pl->kloop].nnz * pl->L * pl->run * 4;
	LLVMValueRef raw;
	wk.buffer = x86_malloc64(&c, ll_i64(&c, bytes), &raw, "wcols");
	wk.tr = x86_transpose_fn(ctx, mod, NULL);
	LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(ctx, c.fn, "wcols"),
	                  slow = LLVMAppendBasicBlockInContext(ctx, c.fn, "panels"),
	                  done = LLVMAppendBasicBlockInContext(ctx, c.fn, "done");
	LLVMBuildCondBr(c.b, LLVMBuildIsNotNull(c.b, raw, ""), fast, slow);
	LLVMPositionBuilderAtEnd(c.b, slow);
	LLVMValueRef args[8];
	for (unsigned i = 0; i < 8; i++)
		args[i] = LLVMGetParam(c.fn, i);
	LLVMBuildCall2(c.b, LLVMGlobalGetValueType(fallback), fallback, args, 8, "");
	LLVMBuildBr(c.b, done);
	LLVMPositionBuilderAtEnd(c.b, fast);
	LowerPoint start = {ll_i64(&c, 0), ll_i64(&c, 0), ll_i64(&c, 0)};
	lower_nest(&c, 0, pl->kloop, &start, at_outer_blocks, &wk);
	x86_free(&c, raw);
	LLVMBuildBr(c.b, done);
	LLVMPositionBuilderAtEnd(c.b, done);
	LLVMBuildRetVoid(c.b);
	LLVMDisposeBuilder(c.b);
	return c.fn;
}
