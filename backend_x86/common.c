/* SPDX-License-Identifier: MIT */
/* common.c - the pieces of IR the x86 run kinds (krun.c, mrun.c) build on:
 * writing a tile of C (its first write storing, the others adding), a
 * weight broadcast to a vector, the k < K test, the smaller column tiles
 * after the full ones, blocks of storage digits, and X packed into panels.
 * It calls no other file of the backend. */
#include "x86_impl.h"

/* ---- writing C ----
 *
 * Where every element of C's columns is written by the body (no row of C
 * skipped), a tile's first write can store its sum instead of adding it to
 * C, and C needs no zeroing first (LowerHooks.stores_c: zeroing was 15% of
 * 8x8 blocks at 93.75% on 768/768/512).  That holds where each loop above
 * the point that writes a tile is a dense loop along m only, or a loop
 * along k only: then a tile is first written at the point whose k digits
 * above are all 0 (x86_c_fresh_at), which the nest reaches before the others
 * of that tile, and a blocked walk along k (x86_krun_all) reaches in its
 * first block. */

/* Whether the point of storage prefix `row` over loops 0..upto-1 is the first
 * to write its rows of C: its digits of the loops along k are 0, and so is
 * the first digit of the block of any loop below that is walked in blocks
 * (c->lo: the m runs and k runs blocked along k). */
LLVMValueRef x86_c_fresh_at(LowerCtx *c, LLVMValueRef row, int upto)
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

/* The same at the other end: its digits of the loops along k are their
 * last, and so is the block of any loop below walked in blocks (c->hi at
 * the loop's nnz).  The nest reaches it after every other point of the
 * tile wherever x86_c_fresh_at holds of the first. */
LLVMValueRef x86_c_last_at(LowerCtx *c, LLVMValueRef row, int upto)
{
	const Pir *ir = c->k->ir;
	LLVMValueRef f = LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, 0);
	for (int j = upto; j < ir->nloops; j++)
		if (c->hi[j] && !pir_loop_has_axis(&ir->loops[j], PIR_AXIS_M))
			f = LLVMBuildAnd(c->b, f, LLVMBuildICmp(c->b, LLVMIntEQ, c->hi[j], ll_i64(c, ir->loops[j].nnz), ""),
			                 "last");
	for (int j = upto - 1; j >= 0; j--) {
		const PirLoop *l = &ir->loops[j];
		if (!pir_loop_has_axis(l, PIR_AXIS_M)) {
			const int64_t place = nest_kept(c->nest, j + 1, upto);
			LLVMValueRef d = place > 1 ? ll_udiv(c, row, place) : row;
			d = ll_urem(c, d, l->nnz);
			f = LLVMBuildAnd(c->b, f, LLVMBuildICmp(c->b, LLVMIntEQ, d, ll_i64(c, l->nnz - 1), ""), "last");
		}
	}
	return f;
}

X86When x86_c_when(LowerCtx *c, LLVMValueRef row, int upto, bool store)
{
	return (X86When){store ? x86_c_fresh_at(c, row, upto) : NULL,
	                 x86_epilogue_fused(c->k) ? x86_c_last_at(c, row, upto) : NULL};
}

/* Emits emit(c, add, epi, arg) for add as fresh says (NULL: add; a
 * constant: that; else a branch on it) and epi as last says (NULL: none). */
static void c_write_epi(LowerCtx *c, LLVMValueRef fresh, bool epi, X86CWrite emit, const void *arg)
{
	if (!fresh || LLVMIsAConstantInt(fresh)) {
		emit(c, !fresh || !LLVMConstIntGetZExtValue(fresh), epi, arg);
		return;
	}
	LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cstore"),
	                  ad = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cadd"),
	                  nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cwritten");
	LLVMBuildCondBr(c->b, fresh, st, ad);
	LLVMPositionBuilderAtEnd(c->b, st);
	emit(c, false, epi, arg);
	LLVMBuildBr(c->b, nx);
	LLVMPositionBuilderAtEnd(c->b, ad);
	emit(c, true, epi, arg);
	LLVMBuildBr(c->b, nx);
	LLVMPositionBuilderAtEnd(c->b, nx);
}

/* Emits emit(c, add, epi, arg): with add, C += the sums; without, C = them;
 * with epi, the epilogue of the result (the tile's last write). */
void x86_c_write(LowerCtx *c, X86When w, X86CWrite emit, const void *arg)
{
	if (!w.last || LLVMIsAConstantInt(w.last)) {
		c_write_epi(c, w.fresh, w.last && LLVMConstIntGetZExtValue(w.last), emit, arg);
		return;
	}
	LLVMBasicBlockRef ep = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "clast"),
	                  no = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cnotlast"),
	                  nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "cdone");
	LLVMBuildCondBr(c->b, w.last, ep, no);
	LLVMPositionBuilderAtEnd(c->b, ep);
	c_write_epi(c, w.fresh, true, emit, arg);
	LLVMBuildBr(c->b, nx);
	LLVMPositionBuilderAtEnd(c->b, no);
	c_write_epi(c, w.fresh, false, emit, arg);
	LLVMBuildBr(c->b, nx);
	LLVMPositionBuilderAtEnd(c->b, nx);
}

void x86_c_update(LowerCtx *c, LLVMTypeRef vty, LLVMValueRef cp, LLVMValueRef sum, bool add, LLVMValueRef bias)
{
	if (add) {
		LLVMValueRef cv = LLVMBuildLoad2(c->b, vty, cp, "");
		LLVMSetAlignment(cv, 4);
		sum = LLVMBuildFAdd(c->b, cv, sum, "");
	}
	if (bias)
		sum = lower_epilogue(c, sum, bias, NULL);
	LLVMSetAlignment(LLVMBuildStore(c->b, sum, cp), 4);
}

/* A float 0 in the module, that a NULL bias reads instead. */
static LLVMValueRef zero_float(LowerCtx *c)
{
	LLVMValueRef g = LLVMGetNamedGlobal(c->mod, "patc.zero");
	if (!g) {
		g = LLVMAddGlobal(c->mod, c->f32, "patc.zero");
		LLVMSetInitializer(g, LLVMConstReal(c->f32, 0.0));
		LLVMSetGlobalConstant(g, 1);
		LLVMSetLinkage(g, LLVMPrivateLinkage);
		LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
	}
	return g;
}

LLVMValueRef x86_row_bias(LowerCtx *c, LLVMValueRef m, int width)
{
	LLVMValueRef have = LLVMBuildIsNotNull(c->b, c->bias, "");
	LLVMValueRef at = LLVMBuildGEP2(c->b, c->f32, c->bias, &m, 1, "");
	LLVMValueRef b = LLVMBuildLoad2(c->b, c->f32, LLVMBuildSelect(c->b, have, at, zero_float(c), ""), "bias");
	return x86_splat(c, b, width);
}

LLVMValueRef x86_splat(LowerCtx *c, LLVMValueRef x, int width)
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
LLVMValueRef x86_k_in_range(LowerCtx *c, const LowerPoint *p)
{
	if (c->k->ir->ext[PIR_AXIS_K] == c->k->shape.K)
		return LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, 0);
	return LLVMBuildICmp(c->b, LLVMIntSLT, p->k, ll_i64(c, c->k->shape.K), "");
}

/* Emits `tile(c, nacc, n, arg)` for the columns n.. n + vl nacc - 1 once
 * for each nacc = top/2, top/4, .., 1 whose tile still fits before n1,
 * starting at *from (an i64 alloca) and advancing it. */
void x86_smaller_tiles(LowerCtx *c, LLVMValueRef from, int vl, int top, X86ColumnTile tile, void *arg)
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

/* X rows one storage digit of loop `run` (a loop along k) spans: the loops
 * below it along k, on average over its kept digits.  The loops along m
 * below it (the m runs under K0 of blocks) add no rows of X. */
double x86_run_rows_per_digit(const Pir *ir, int run)
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
LLVMValueRef x86_digit_block(LowerCtx *c, int l, LLVMValueRef bi, int64_t db)
{
	const int64_t nnz = c->k->ir->loops[l].nnz;
	LLVMValueRef lo = LLVMBuildNSWMul(c->b, bi, ll_i64(c, db), "blo");
	LLVMValueRef hi = ll_add(c, lo, ll_i64(c, db));
	c->lo[l] = lo;
	c->hi[l] = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, hi, ll_i64(c, nnz), ""), hi, ll_i64(c, nnz), "bhi");
	return lo;
}

/* ---- panel-packed X (X86Panel: see x86_impl.h) ---- */

/* Copies the K x nt floats of X from column col into dst, row k at dst + k nt. */
static void panel_copy(LowerCtx *c, LLVMValueRef dst, LLVMValueRef col, int64_t nt)
{
	const LowerKernel *k = c->k;
	LowerLoop lk, lj;
	LLVMValueRef kk = lower_loop_begin(c, &lk, ll_i64(c, 0), ll_i64(c, k->shape.K), "pk");
	LLVMValueRef src = ll_add(c, ll_mulv(c, kk, c->N), col);
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
void x86_panel_tile(LowerCtx *c, const X86Panel *pn, LLVMValueRef n, LLVMValueRef *xt, LLVMValueRef *ldk)
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
		LLVMValueRef off = ll_mul(c, LLVMBuildNSWSub(c->b, n, c->n0, ""), k->shape.K);
		inp = LLVMBuildGEP2(c->b, c->f32, pn->base, &off, 1, "");
	}
	LLVMValueRef inx = LLVMBuildGEP2(c->b, c->f32, c->X, &n, 1, "");
	*xt = LLVMBuildSelect(c->b, have, inp, inx, "xt");
	*ldk = LLVMBuildSelect(c->b, have, ll_i64(c, pn->nt), c->N, "ldk");
}

/* The C library's function `name`, ret(arg), declared where missing. */
static LLVMValueRef libc_fn(LowerCtx *c, const char *name, LLVMTypeRef ret, LLVMTypeRef arg)
{
	return ll_function(c->mod, name, LLVMFunctionType(ret, &arg, 1, 0));
}

LLVMValueRef x86_malloc64(LowerCtx *c, LLVMValueRef bytes, LLVMValueRef *raw, const char *name)
{
	LLVMValueRef fmalloc = libc_fn(c, "malloc", c->ptr, c->i64);
	LLVMValueRef all = ll_add(c, bytes, ll_i64(c, 64));
	*raw = LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fmalloc), fmalloc, &all, 1, "raw");
	LLVMValueRef addr = LLVMBuildPtrToInt(c->b, *raw, c->i64, "");
	LLVMValueRef pad = LLVMBuildAnd(c->b, LLVMBuildNeg(c->b, addr, ""), ll_i64(c, 63), "");
	return LLVMBuildGEP2(c->b, LLVMInt8TypeInContext(c->ctx), *raw, &pad, 1, name);
}

/* Allocates the panels and fills them (all the thread's tiles; a per-tile
 * panel: one tile's room, filled by x86_panel_tile); returns the malloc'd
 * pointer (to free). */
LLVMValueRef x86_panel_pack(LowerCtx *c, X86Panel *pn)
{
	const LowerKernel *k = c->k;
	const int64_t nt = pn->nt;
	LLVMValueRef tiles = pn->per_tile
	                             ? ll_i64(c, 1)
	                             : LLVMBuildSDiv(c->b, LLVMBuildNSWSub(c->b, c->n1, c->n0, ""), ll_i64(c, nt), "ptiles");
	LLVMValueRef raw;
	LLVMValueRef al = x86_malloc64(c, ll_mul(c, tiles, nt * k->shape.K * 4), &raw, "panels");
	LLVMValueRef have = LLVMBuildIsNotNull(c->b, raw, "");
	if (!pn->per_tile) {
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "pack");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "packed");
		LLVMBuildCondBr(c->b, have, body, done);
		LLVMPositionBuilderAtEnd(c->b, body);
		LowerLoop lt;
		LLVMValueRef t = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "pt");
		LLVMValueRef col = ll_add(c, c->n0, ll_mul(c, t, nt));
		LLVMValueRef off = ll_mul(c, t, k->shape.K * nt);
		panel_copy(c, LLVMBuildGEP2(c->b, c->f32, al, &off, 1, ""), col, nt);
		lower_loop_end(c, &lt);
		LLVMBuildBr(c->b, done);
		LLVMPositionBuilderAtEnd(c->b, done);
	}
	pn->base = LLVMBuildSelect(c->b, have, al, LLVMConstPointerNull(c->ptr), "panel");
	return raw;
}

void x86_free(LowerCtx *c, LLVMValueRef raw)
{
	LLVMValueRef ffree = libc_fn(c, "free", LLVMVoidTypeInContext(c->ctx), c->ptr);
	LLVMBuildCall2(c->b, LLVMGlobalGetValueType(ffree), ffree, &raw, 1, "");
}
