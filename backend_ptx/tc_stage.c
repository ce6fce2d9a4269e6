/* SPDX-License-Identifier: MIT */
/* tc_stage.c - the tensor-core mapping's staged walk (plan->stage): the
 * steps' copies into shared memory with cp.async, the warps' fragments
 * read back with ldmatrix (or by wgmma through descriptors), and the
 * pipeline of buffers that tc_staged_walk runs. */
#define _POSIX_C_SOURCE 200809L
#include "tc_impl.h"

#include <stdio.h>

/* Where step `step` of the block's walk is: the loops along k before the
 * dense m loop take the digits of step / (steps of a tile), outermost most
 * significant, the loops along m their fixed digits (digit[i]), the dense
 * m loop the block's first row.  *k: the step's first k; *m: that row's m;
 * *row: where the step's weights of the block's first row start, in units
 * of 16 values (row r of the block at 16 row + r len), or on the sparse
 * tensor cores the first row's place in storage, the step's first chunk
 * being 8 *kstep. */
void tc_locate(LowerCtx *c, LLVMValueRef const *digit, LLVMValueRef step, LLVMValueRef *row, LLVMValueRef *m,
               LLVMValueRef *k, LLVMValueRef *kstep_out)
{
	const PtxPlan *plan = c->backend;
	const Pir *ir = c->k->ir;
	const int n = ir->nloops;
	const PirLoop *lk = &ir->loops[n - 1];
	const int lmi = n - (plan->tc_sp ? 3 : 2);
	const int64_t per = plan->tc_sp ? (ir->loops[n - 2].len + 7) / 8 : lk->len / tc_step_k(plan);
	LLVMValueRef kstep = tc_urem32(c, step, per), rest = tc_udiv32(c, step, per);
	LLVMValueRef d[PIR_MAX_LOOPS];
	for (int i = lmi - 1; i >= 0; i--) {
		if (pir_loop_has_axis(&ir->loops[i], PIR_AXIS_M)) {
			d[i] = digit[i];
			continue;
		}
		d[i] = tc_urem32(c, rest, ir->loops[i].nnz);
		rest = tc_udiv32(c, rest, ir->loops[i].nnz);
	}
	d[lmi] = digit[lmi];
	LLVMValueRef r = ll_i64(c, 0), mm = ll_i64(c, 0), kk = ll_i64(c, 0);
	for (int i = 0; i <= lmi; i++) {
		const PirLoop *l = &ir->loops[i];
		r = ll_add(c, ll_mul(c, r, l->nnz), d[i]);
		LLVMValueRef v = d[i];
		if (c->idx[i])
			v = lower_index(c, i, r);
		LLVMValueRef dm, dk;
		lower_offsets(c, l, v, &dm, &dk);
		mm = ll_add(c, mm, dm), kk = ll_add(c, kk, dk);
	}
	*m = mm;
	if (kstep_out)
		*kstep_out = kstep;
	if (plan->tc_sp) { /* 8 chunks of 4 k a step */
		*k = ll_add(c, kk, ll_mul(c, kstep, 32));
		*row = r;
		return;
	}
	*k = ll_add(c, kk, ll_mul(c, kstep, tc_step_k(plan) * lk->comp[0].stride));
	/* the step's weights start tc_step_k further along the row per step */
	*row = ll_add(c, ll_mul(c, r, lk->len / 16), ll_mul(c, kstep, tc_step_k(plan) / 16));
}

/* One 16-byte piece from element at0 + at + more of base (i16 elements,
 * global) to dst (shared): cp.async, zero-filled where !ok.  at0 is the
 * step's part (shared by its copies), at the piece's (the same in every
 * step, hoisted out of the walk), more a constant (a thread's later
 * pieces); with at0 NULL, at + more is read only where ok (base itself
 * otherwise), else they must address a valid element either way.
 * Emulated, counted where ok (what: ptx_emu_count). */
static void tc_copy(LowerCtx *c, const PtxPlan *plan, LLVMValueRef dst, LLVMValueRef base, LLVMValueRef at0,
                    LLVMValueRef at, int64_t more, LLVMValueRef ok, int what)
{
	LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
	if (!plan->emulate)
		base = LLVMBuildAddrSpaceCast(c->b, base, LLVMPointerTypeInContext(c->ctx, 1), "");
	if (at0)
		base = LLVMBuildGEP2(c->b, i16, base, &at0, 1, "step");
	else {
		at = LLVMBuildSelect(c->b, ok, ll_add(c, at, ll_i64(c, more)), ll_i64(c, 0), "");
		more = 0;
	}
	LLVMValueRef src = LLVMBuildGEP2(c->b, i16, base, &at, 1, "");
	if (more) {
		LLVMValueRef m = ll_i64(c, more);
		src = LLVMBuildGEP2(c->b, i16, src, &m, 1, "");
	}
	if (plan->emulate) {
		ptx_emu_count(c, what, LLVMBuildSelect(c->b, ok, ll_i64(c, 16), ll_i64(c, 0), ""));
		ptx_emu_cp(c, dst, src, 16, ok); /* (the source aligned, read or not; inside X where read) */
		return;
	}
	LLVMValueRef args[3] = {dst, src,
	                        LLVMBuildSelect(c->b, ok, LLVMConstInt(c->i32, 16, 0), LLVMConstInt(c->i32, 0, 0), "")};
	ptx_call(c, "llvm.nvvm.cp.async.cg.shared.global.16.s", args, 3);
}

/* Element `at` (halves) of the buffers, then `more` further (a constant:
 * the address's immediate offset). */
static LLVMValueRef smem(LowerCtx *c, const TcStage *st, LLVMValueRef at, int64_t more)
{
	LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
	LLVMValueRef p = LLVMBuildGEP2(c->b, i16, st->xs, &at, 1, "");
	if (more) {
		LLVMValueRef m = ll_i64(c, more);
		p = LLVMBuildGEP2(c->b, i16, p, &m, 1, "");
	}
	return p;
}

/* `total` pieces, piece q = tid + nthreads i, through piece(q, i). */
typedef void (*PieceFn)(LowerCtx *c, const PtxPlan *plan, const TcStage *st, LLVMValueRef q, int64_t i, void *arg);
static void tc_pieces(LowerCtx *c, const PtxPlan *plan, const TcStage *st, int64_t total, int64_t threads,
                      PieceFn fn, void *arg)
{
	for (int64_t i = 0; i * threads < total; i++) {
		LLVMValueRef q = ll_add(c, st->tid, ll_i64(c, i * threads));
		LLVMBasicBlockRef next = NULL;
		if ((i + 1) * threads > total) {
			LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "piece");
			next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "pieced");
			LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, q, ll_i64(c, total), ""), body, next);
			LLVMPositionBuilderAtEnd(c->b, body);
		}
		fn(c, plan, st, q, i, arg);
		if (next) {
			LLVMBuildBr(c->b, next);
			LLVMPositionBuilderAtEnd(c->b, next);
		}
	}
}

typedef struct IssueArg {
	LLVMValueRef buf0; /* the stage's first half in the buffers */
	LLVMValueRef row, k;
	LLVMValueRef kstep; /* the step within its kept tile (tc_locate) */
} IssueArg;

/* Under wgmma (tc_wg) a stage holds its operands as 8 x 8 core matrices
 * of 128 contiguous bytes, each 16-byte row of one the 8 halves a
 * cp.async copies, per 16 k of the step (tc_wgu of them, the weights' of
 * all first, then X's): the weights' 64 x 16 (K-major: core matrix (i, j) of
 * rows 8i.., k 8j.. at (2 i + j) 64 halves, row r % 8 of it 8 (r % 8)
 * further) and X's 16 x cols alike with i along the columns (core matrix
 * (i, j) of columns 8i.., k 8j..; its rows are k in layout kn, which
 * wgmma reads N-major, and columns in layout nk, K-major).  So the
 * descriptors of both have the same strides, 128 bytes from a core matrix
 * to the next along k (leading) and 256 along the rows or columns
 * (stride), and piece q of a stage goes to halves 8 q: q % 8 is the row of
 * its core matrix, q / 8 % 2 its k half, q / 16 its 8 rows or columns
 * (WG_LBO, WG_SBO; the PTX ISA's canonical layouts without swizzling). */
enum { WG_LBO = 128, WG_SBO = 256 };

/* Piece q of rows `per` pieces long, padded to an odd number of 16 bytes
 * (tc_row, tc_nk_row): its row *r and its place *h in it.  The 8 lanes that
 * a 16-byte cp.async serves together take the same place in 8 rows, which
 * fall in distinct banks; consecutive pieces of a row would not (2 or 4
 * pieces and the padding, 48 or 80 bytes a row, put two rows in the same
 * banks).  A warp's 32 still read whole rows (sectors) of global memory. */
static void group_piece(LowerCtx *c, LLVMValueRef q, int64_t per, LLVMValueRef *r, LLVMValueRef *h)
{
	*r = ll_add(c, ll_mul(c, ll_udiv(c, q, 8 * per), 8), ll_urem(c, q, 8));
	*h = ll_udiv(c, ll_urem(c, q, 8 * per), 8);
}

/* Piece q of the weights: of the stage's tc_rows x 16 rows, where
 * group_piece puts it (tc_wg: of 16 k q / P of the step, row 8 (q % P /
 * 16) + q % 8, half q / 8 % 2, see above; P = 32 tc_rows pieces a 16 k). */
static void a_piece(LowerCtx *c, const PtxPlan *plan, const TcStage *st, LLVMValueRef q, int64_t i, void *arg)
{
	const IssueArg *ia = arg;
	const int64_t len = c->k->ir->loops[c->k->ir->nloops - 1].len, per = tc_step_k(plan) / 8;
	/* the thread's later pieces: rows nthreads / per further on, where
	 * the threads cover whole groups (a constant more, an immediate
	 * offset) */
	const int64_t ahead = !plan->tc_wg && st->nthreads % (8 * per) == 0 ? i * (st->nthreads / per) : 0;
	if (ahead)
		q = st->tid;
	LLVMValueRef r, h, more = ll_i64(c, 0);
	if (plan->tc_wg) {
		const int64_t wper = 32 * (int64_t)plan->tc_rows; /* pieces a 16 k */
		r = ll_add(c, ll_mul(c, ll_udiv(c, ll_urem(c, q, wper), 16), 8), ll_urem(c, q, 8)), h = ll_urem(c, ll_udiv(c, q, 8), 2);
		more = ll_udiv(c, q, wper);
	} else {
		group_piece(c, q, per, &r, &h);
	}
	LLVMValueRef dst = ll_add(c, ia->buf0, plan->tc_wg ? ll_mul(c, q, 8) : ll_add(c, ll_mul(c, r, tc_row(plan)), ll_mul(c, h, 8)));
	tc_copy(c, plan, smem(c, st, dst, ahead * tc_row(plan)), c->values, ll_mul(c, ia->row, 16),
	        ll_add(c, ll_add(c, ll_mul(c, r, len), ll_mul(c, more, 16)), ll_mul(c, h, 8)), ahead * len,
	        LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, 0), 1);
}

/* Piece q of X: layout kn, 8 columns of one of the step's k rows; layout
 * nk, 8 k of one column. */
static void x_piece(LowerCtx *c, const PtxPlan *plan, const TcStage *st, LLVMValueRef q, int64_t i, void *arg)
{
	const IssueArg *ia = arg;
	const LowerKernel *k = c->k;
	const bool kn = k->shape.layout == PAT_LAYOUT_KN;
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS, per = tc_step_k(plan) / 8;
	const int64_t ks = plan->tc_sp ? 1 : k->ir->loops[k->ir->nloops - 1].comp[0].stride;
	/* a row of X past K: where k is padded, or on the sparse tensor cores
	 * where 32 k a step overrun the 2:4 loop */
	const bool kpast = k->ir->ext[PIR_AXIS_K] > k->shape.K || (plan->tc_sp && k->ir->loops[k->ir->nloops - 2].len % 8);
	/* the thread's later pieces, where the threads cover whole rows of
	 * pieces: layout kn, nthreads / (cols / 8) k rows further on; nk,
	 * where the columns are not clamped, nthreads / per columns (ahead:
	 * that many; a constant more, an immediate offset) */
	int64_t ahead = 0;
	if (!plan->tc_wg && !kpast && kn && st->nthreads % (cols / 8) == 0 && !k->n_runtime) /* (N rows on: N's) */
		ahead = i * (st->nthreads / (cols / 8));
	else if (!plan->tc_wg && !kpast && !kn && st->nthreads % (8 * per) == 0 && ptx_n_multiple(k, cols))
		ahead = i * (st->nthreads / per);
	if (ahead)
		q = st->tid;
	LLVMValueRef x0 = ll_add(c, ia->buf0, ll_i64(c, tc_stage_a(plan)));
	LLVMValueRef dk, col, dst; /* the piece's k past the step's first, its first column */
	int64_t src_more = 0, dst_more = 0;
	if (plan->tc_wg) { /* see a_piece: 16 k u of the step, piece qq of them */
		LLVMValueRef u = ll_udiv(c, q, 2 * cols), qq = ll_urem(c, q, 2 * cols);
		LLVMValueRef r = ll_urem(c, qq, 8), h = ll_add(c, ll_urem(c, ll_udiv(c, qq, 8), 2), ll_mul(c, u, 2)), ii = ll_udiv(c, qq, 16);
		if (kn) {
			dk = ll_mul(c, ll_add(c, ll_mul(c, h, 8), r), ks);
			col = ll_add(c, st->ncol, ll_mul(c, ii, 8));
		} else {
			dk = ll_mul(c, h, 8);
			col = ll_add(c, st->ncol, ll_add(c, ll_mul(c, ii, 8), r));
		}
		dst = ll_add(c, x0, ll_mul(c, q, 8));
	} else if (kn) {
		LLVMValueRef ii = ll_udiv(c, q, cols / 8), p = ll_urem(c, q, cols / 8);
		dk = ll_mul(c, ii, ks);
		col = ll_add(c, st->ncol, ll_mul(c, p, 8));
		dst = ll_add(c, x0, ll_add(c, ll_mul(c, ii, tc_kn_row(plan)), ll_mul(c, p, 8)));
		/* (ahead: only where N is specialised, above) */
		src_more = ahead * ks * k->shape.N, dst_more = ahead * tc_kn_row(plan);
	} else {
		LLVMValueRef j, h;
		group_piece(c, q, per, &j, &h);
		dk = ll_mul(c, h, 8);
		col = ll_add(c, st->ncol, j);
		dst = ll_add(c, x0, ll_add(c, ll_mul(c, j, tc_nk_row(plan)), ll_mul(c, h, 8)));
		src_more = ahead * k->shape.K, dst_more = ahead * tc_nk_row(plan);
	}
	/* a column past N: only where the blocks' columns do not divide N (the
	 * kernel runs with n1 = N); it then reads a real one (N's last 8 in
	 * layout kn, whose rows are 16-byte aligned) and fills zeros */
	LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, 0);
	if (!ptx_n_multiple(k, cols)) {
		ok = LLVMBuildICmp(c->b, LLVMIntSLT, col, c->n1, "");
		col = ptx_min(c, col, LLVMBuildNSWSub(c->b, c->N, ll_i64(c, kn ? 8 : 1), ""));
	}
	/* past K the whole address is formed per step, read only where ok;
	 * else the step's row (kn) or element (nk), and the piece's place from
	 * it, the same in every step */
	if (kpast) {
		LLVMValueRef kk = ll_add(c, ia->k, dk);
		ok = LLVMBuildAnd(c->b, ok, LLVMBuildICmp(c->b, LLVMIntSLT, kk, ll_i64(c, k->shape.K), ""), "");
		const int64_t tile = 4 * k->ir->loops[k->ir->nloops - 2].len; /* the 2:4 loop's k */
		if (plan->tc_sp && tile % 32) /* past the kept tile's k: its A is padding, X not read */
			ok = LLVMBuildAnd(c->b, ok,
			                  LLVMBuildICmp(c->b, LLVMIntSLT, ll_add(c, ll_mul(c, ia->kstep, 32), dk), ll_i64(c, tile), ""),
			                  "");
		tc_copy(c, plan, smem(c, st, dst, 0), c->X, NULL,
		        kn ? ll_add(c, ll_mulv(c, kk, c->N), col) : ll_add(c, ll_mul(c, col, k->shape.K), kk), 0, ok, 0);
	} else {
		tc_copy(c, plan, smem(c, st, dst, dst_more), c->X, kn ? ll_mulv(c, ia->k, c->N) : ia->k,
		        kn ? ll_add(c, ll_mulv(c, dk, c->N), col) : ll_add(c, ll_mul(c, col, k->shape.K), dk), src_more, ok, 0);
	}
}

/* Copies step `step` (when below the walk's length) into buffer buf, then
 * commits the copies as one group (an empty one past the end). */
static void tc_issue(LowerCtx *c, const PtxPlan *plan, TcStage *st, LLVMValueRef step, LLVMValueRef buf)
{
	const LowerKernel *k = c->k;
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "issue");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "issued");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, step, st->end, ""), body, next);
	LLVMPositionBuilderAtEnd(c->b, body);
	IssueArg ia = {.buf0 = ll_mul(c, buf, tc_stage_halves(k, plan))};
	LLVMValueRef m;
	tc_locate(c, st->digit, step, &ia.row, &m, &ia.k, &ia.kstep);
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
	if (!plan->tc_sp)
		tc_pieces(c, plan, st, (int64_t)plan->tc_rows * 2 * tc_step_k(plan), st->nthreads, a_piece, &ia);
	tc_pieces(c, plan, st, tc_step_k(plan) / 8 * cols, st->nthreads, x_piece, &ia);
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, next);
	ptx_cp_commit(c);
}

/* ldmatrix.x4 from the lane's row at `at` (halves into the buffers). */
static void tc_ldm(LowerCtx *c, const PtxPlan *plan, const TcStage *st, LLVMValueRef at, bool trans, LLVMValueRef *w)
{
	LLVMValueRef p = smem(c, st, at, 0);
	if (plan->emulate) {
		p = ptx_emu_access(c, p, 16, false); /* each lane's row */
		LLVMValueRef fn = LLVMBuildLoad2(c->b, c->ptr, st->ldm, "ldm");
		LLVMValueRef args[3] = {p, st->eo, LLVMConstInt(c->i32, trans, 0)};
		LLVMBuildCall2(c->b, st->ldm_ty, fn, args, 3, "");
		for (int e = 0; e < 4; e++) {
			LLVMValueRef ie = LLVMConstInt(c->i32, (unsigned)e, 0);
			w[e] = LLVMBuildLoad2(c->b, c->i32, LLVMBuildGEP2(c->b, c->i32, st->eo, &ie, 1, ""), "");
		}
		return;
	}
	LLVMTypeRef pt = LLVMTypeOf(p);
	LLVMValueRef r = ptx_call_typed(c,
	                                trans ? "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
	                                      : "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16",
	                                &pt, 1, &p, 1);
	for (int e = 0; e < 4; e++)
		w[e] = LLVMBuildExtractValue(c->b, r, (unsigned)e, "");
}

/* The first row, within the block's, of chunk ci of warp row wr's. */
static LLVMValueRef chunk_row(LowerCtx *c, const PtxPlan *plan, LLVMValueRef wr, int ci)
{
	return ll_mul(c, ll_add(c, ll_mul(c, wr, plan->tc_wm), ll_i64(c, ci)), 16);
}

/* The sparse tensor cores, staged: the A fragments and metadata of step
 * `step` for the warp's chunks (warp row wr), from global memory into the
 * allocas a->spa, a->spm.  The walk loads them a step ahead, before the
 * barrier that starts the step, so that the warps, which leave a barrier
 * together, do not all wait on them then. */
static void sp_load(LowerCtx *c, TcArg *a, const TcStage *st, LLVMValueRef step, LLVMValueRef wr)
{
	const PtxPlan *plan = a->plan;
	LLVMValueRef row, m, kk, kstep, aw[4], meta;
	tc_locate(c, st->digit, step, &row, &m, &kk, &kstep);
	for (int ci = 0; ci < plan->tc_wm; ci++) {
		tc_sp_fragments(c, a, ll_add(c, row, chunk_row(c, plan, wr, ci)), kstep, aw, &meta);
		for (int e = 0; e < 4; e++)
			LLVMBuildStore(c->b, aw[e], a->spa[ci][e]);
		LLVMBuildStore(c->b, meta, a->spm[ci]);
	}
}

/* The sparse tensor cores' mma.sp of step `step` in buffer buf: the A
 * fragments and metadata sp_load left, B with one ldmatrix.x4 per column
 * tile (lane l addresses k row l of the step, or in layout nk column l % 8
 * of the tile at k 8 (l / 8)). */
static void tc_sp_compute(LowerCtx *c, TcArg *a, const TcStage *st, LLVMValueRef buf, LLVMValueRef lane,
                          LLVMValueRef wc)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	LLVMValueRef aw[PTX_TC_WM][4], meta[PTX_TC_WM];
	for (int ci = 0; ci < plan->tc_wm; ci++) {
		for (int e = 0; e < 4; e++)
			aw[ci][e] = LLVMBuildLoad2(c->b, c->i32, a->spa[ci][e], "a");
		meta[ci] = LLVMBuildLoad2(c->b, c->i32, a->spm[ci], "meta");
	}
	LLVMValueRef x0 = ll_mul(c, buf, tc_stage_halves(k, plan));
	LLVMValueRef wn = ll_mul(c, wc, PTX_TC_COLS);
	for (int j = 0; j < PTX_TC_TILES; j++) {
		LLVMValueRef n0 = ll_add(c, wn, ll_i64(c, 8 * j)), bat;
		if (k->shape.layout == PAT_LAYOUT_KN)
			bat = ll_add(c, x0, ll_add(c, ll_mul(c, lane, tc_kn_row(plan)), n0));
		else
			bat = ll_add(c, x0, ll_add(c, ll_mul(c, ll_add(c, n0, ll_urem(c, lane, 8)), tc_nk_row(plan)), ll_mul(c, ll_udiv(c, lane, 8), 8)));
		LLVMValueRef bw[4];
		tc_ldm(c, plan, st, bat, k->shape.layout == PAT_LAYOUT_KN, bw);
		for (int ci = 0; ci < plan->tc_wm; ci++)
			tc_mma(c, a, aw[ci], bw, meta[ci], ci * PTX_TC_TILES + j);
	}
}

/* A wgmma descriptor of the operand at byte addr of shared memory, laid
 * out as a_piece says (no swizzling): the address, the leading and the
 * stride byte offsets, each without its 4 low bits, in bits 0-13, 16-29
 * and 32-45. */
static LLVMValueRef wg_desc(LowerCtx *c, LLVMValueRef addr)
{
	LLVMValueRef d = LLVMBuildLShr(c->b, LLVMBuildAnd(c->b, addr, ll_i64(c, 0x3FFFF), ""), ll_i64(c, 4), "");
	return LLVMBuildOr(c->b, d, ll_i64(c, (int64_t)(WG_LBO >> 4) << 16 | (int64_t)(WG_SBO >> 4) << 32), "desc");
}

/* The warpgroup's wgmma of the step in buffer buf (tc_wg, tc_wg_ops), A and
 * B read by the tensor cores from the stage; the warp's accumulators are
 * those of its 16 rows (chunk wr), or transposed of its 16 of each 64
 * columns. */
static void tc_wg_compute(LowerCtx *c, TcArg *a, const TcStage *st, LLVMValueRef buf, LLVMValueRef wr)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	TcWgOp ops[TC_WG_MAXOPS];
	const int nops = tc_wg_ops(k, plan, ops), nacc = tc_wg_nacc(plan);
	LLVMValueRef b0 = ll_mul(c, buf, tc_stage_halves(k, plan));
	/* byte addresses in shared memory (emulated: offsets into the buffers) */
	LLVMValueRef addr = plan->emulate ? ll_mul(c, b0, 2) : LLVMBuildPtrToInt(c->b, smem(c, st, b0, 0), c->i64, "");
	LLVMValueRef desc[2 * TC_WG_MAXOPS];
	for (int i = 0; i < nops; i++) {
		for (int j = 0; j < 2; j++) {
			LLVMValueRef at = ll_add(c, addr, ll_i64(c, 2 * (j ? ops[i].b : ops[i].a)));
			if (plan->emulate) /* (a descriptor drops the address's low 4 bits) */
				ptx_emu_check(c, at, 16, NULL);
			desc[2 * i + j] = wg_desc(c, at);
		}
	}
	if (plan->emulate) { /* (the host keeps the accumulators in ewacc through the walk) */
		LLVMValueRef v = LLVMBuildTrunc(c->b, ll_mul(c, wr, 1 << 10), c->i32, "");
		for (int i = 0; i < nops; i++) {
			const TcWgOp *o = &ops[i];
			const unsigned info = (unsigned)(o->nacc * 2) | (unsigned)o->trans_b << 9 |
			                      (unsigned)(k->shape.dtype == PAT_F16) << 12 | (unsigned)o->trans_a << 13;
			LLVMValueRef fn = LLVMBuildLoad2(c->b, c->ptr, a->wg, "wgmma");
			LLVMValueRef at = LLVMConstInt(c->i32, (unsigned)o->acc, 0);
			LLVMValueRef args[6] = {smem(c, st, ll_i64(c, 0), 0), ll_i64(c, plan->tc_stages * tc_stage_halves(k, plan) * 2),
			                        desc[2 * i], desc[2 * i + 1], LLVMBuildGEP2(c->b, c->f32, a->ewacc, &at, 1, ""),
			                        LLVMBuildOr(c->b, v, LLVMConstInt(c->i32, info, 0), "info")};
			LLVMBuildCall2(c->b, a->wg_ty, fn, args, 6, "");
		}
		ptx_emu_call(c, "patc_emu_wgcommit", NULL, NULL, 0);
		if (!plan->tc_wga)
			tc_wg_wait(c, a, 0);
		return;
	}
	LLVMValueRef args[64 + 2 * TC_WG_MAXOPS + 1];
	for (int i = 0; i < nacc; i++)
		args[i] = LLVMBuildLoad2(c->b, c->f32, a->acc[i / 4][i % 4], "");
	for (int i = 0; i < 2 * nops; i++)
		args[nacc + i] = desc[i];
	args[nacc + 2 * nops] = LLVMConstInt(c->i32, 1, 0);
	LLVMValueRef d = LLVMBuildCall2(c->b, a->wg_ty, a->wg, args, (unsigned)(nacc + 2 * nops + 1), "d");
	unsigned conv = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(d, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, conv, 0));
	for (int i = 0; i < nacc; i++)
		LLVMBuildStore(c->b, LLVMBuildExtractValue(c->b, d, (unsigned)i, ""), a->acc[i / 4][i % 4]);
}

/* The warp's mma of the step in buffer buf: its tc_wm chunks of 16 rows
 * (warp row wr of the block) and its PTX_TC_COLS columns (slice wc). */
static void tc_compute(LowerCtx *c, TcArg *a, const TcStage *st, LLVMValueRef buf, LLVMValueRef lane, LLVMValueRef wr,
                       LLVMValueRef wc)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	if (plan->tc_wg) {
		tc_wg_compute(c, a, st, buf, wr);
		return;
	}
	if (plan->tc_sp) {
		tc_sp_compute(c, a, st, buf, lane, wc);
		return;
	}
	LLVMValueRef b0 = ll_mul(c, buf, tc_stage_halves(k, plan));
	LLVMValueRef x0 = ll_add(c, b0, ll_i64(c, tc_stage_a(plan)));
	LLVMValueRef q = ll_udiv(c, lane, 8), i = ll_urem(c, lane, 8);
	LLVMValueRef qk = ll_mul(c, LLVMBuildAnd(c->b, q, ll_i64(c, 1), ""), 8);
	LLVMValueRef qn = ll_add(c, ll_mul(c, wc, PTX_TC_COLS), ll_mul(c, LLVMBuildLShr(c->b, q, ll_i64(c, 1), ""), 8));
	for (int64_t u = 0; u < tc_step_k(plan) / 16; u++) { /* each 16 k of the step */
		/* A of each of the warp's chunks: lane l addresses row l % 16, k 8 (l / 16) */
		LLVMValueRef aw[PTX_TC_WM][4];
		for (int ci = 0; ci < plan->tc_wm; ci++) {
			LLVMValueRef r0 = chunk_row(c, plan, wr, ci);
			LLVMValueRef at = ll_add(c, b0, ll_add(c, ll_mul(c, ll_add(c, r0, ll_urem(c, lane, 16)), tc_row(plan)),
			                                 ll_add(c, ll_mul(c, ll_udiv(c, lane, 16), 8), ll_i64(c, 16 * u))));
			tc_ldm(c, plan, st, at, false, aw[ci]);
		}
		/* B, two column tiles per ldmatrix: matrix q = l / 8 is k 8 (q & 1)
		 * of tile 2 jj + (q >> 1), row i = l % 8 of it */
		for (int jj = 0; jj < PTX_TC_TILES / 2; jj++) {
			LLVMValueRef n = ll_add(c, qn, ll_i64(c, 16 * jj));
			LLVMValueRef kk = ll_add(c, qk, ll_i64(c, 16 * u));
			LLVMValueRef bat = k->shape.layout == PAT_LAYOUT_KN
			                           ? ll_add(c, x0, ll_add(c, ll_mul(c, ll_add(c, i, kk), tc_kn_row(plan)), n))
			                           : ll_add(c, x0, ll_add(c, ll_mul(c, ll_add(c, n, i), tc_nk_row(plan)), kk));
			LLVMValueRef bw[4];
			tc_ldm(c, plan, st, bat, k->shape.layout == PAT_LAYOUT_KN, bw);
			for (int ci = 0; ci < plan->tc_wm; ci++) {
				tc_mma(c, a, aw[ci], bw, NULL, ci * PTX_TC_TILES + 2 * jj);
				tc_mma(c, a, aw[ci], bw + 2, NULL, ci * PTX_TC_TILES + 2 * jj + 1);
			}
		}
	}
}

/* Before a step's barrier: this thread's copies but the last `pending`
 * groups landed, under tc_wga the warp's wgmma but the last step's
 * complete, and on wgmma the copies' writes fenced for the tensor cores. */
static void tc_wait(LowerCtx *c, TcArg *a, int pending)
{
	const PtxPlan *plan = a->plan;
	ptx_cp_wait(c, pending);
	if (plan->tc_wga)
		tc_wg_wait(c, a, 1);
	if (plan->tc_wg && plan->emulate) {
		if (!ptx_emu_inject("nofence"))
			ptx_emu_call(c, "patc_emu_fence", NULL, NULL, 0);
	} else if (plan->tc_wg) { /* the copies' writes made visible to the tensor cores' reads (the async proxy) */
		static const char fence[] = "fence.proxy.async.shared::cta;";
		LLVMTypeRef vt = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), NULL, 0, 0);
		LLVMValueRef asm_ = LLVMGetInlineAsm(vt, fence, sizeof fence - 1, "~{memory}", 9, 1, 0,
		                                     LLVMInlineAsmDialectATT, 0);
		LLVMBuildCall2(c->b, vt, asm_, NULL, 0, "");
	}
	ptx_barrier(c);
}

/* The staged walk: tc_stages - 1 steps copied ahead; each step waits
 * for its copies (and the block's), computes, then copies the one
 * tc_stages - 1 further into the buffer the block finished with
 * before the wait (after the mma: a warp issues in order, and the copies'
 * addresses wait on an index load, which the mma then overlap).
 * tc_stages steps an iteration, so that each step's buffers are
 * constants (its shared-memory addresses immediates); where they do not
 * divide the walk, the last iteration stops after the last step.  The
 * walk is steps st->begin .. st->end - 1 (a part of it, split).
 *
 * Under tc_wga a step's wgmma are still reading its buffer when the next
 * step begins: each step waits for those of the step before the last
 * (wgmma.wait_group 1) before its barrier, and copies tc_stages - 2 steps
 * ahead, into that step's buffer. */
void tc_staged_walk(LowerCtx *c, TcArg *a, TcStage *st, LLVMValueRef lane, LLVMValueRef wr, LLVMValueRef wc)
{
	const PtxPlan *plan = a->plan;
	const int S = plan->tc_stages, ahead = plan->tc_wga ? S - 2 : S - 1;
	for (int s = 0; s < ahead; s++)
		tc_issue(c, plan, st, ll_add(c, st->begin, ll_i64(c, s)), ll_i64(c, s));
	if (plan->tc_sp)
		sp_load(c, a, st, st->begin, wr);
	LowerLoop l;
	LLVMValueRef n = LLVMBuildNSWSub(c->b, st->end, st->begin, "nsteps");
	LLVMValueRef i = lower_loop_begin(c, &l, ll_i64(c, 0), ll_udiv(c, ll_add(c, n, ll_i64(c, S - 1)), S), "step");
	/* a last iteration cut short: where S does not divide the walk, or its parts */
	const bool cut = plan->nsplit > 1 || plan->tc_steps % S;
	LLVMBasicBlockRef done = cut ? LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stepsdone") : NULL;
	for (int j = 0; j < S; j++) {
		LLVMValueRef step = ll_add(c, st->begin, ll_add(c, ll_mul(c, i, S), ll_i64(c, j)));
		if (done && j > 0) {
			LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stepj");
			LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, step, st->end, ""), body, done);
			LLVMPositionBuilderAtEnd(c->b, body);
		}
		tc_wait(c, a, ahead - 1);
		tc_compute(c, a, st, ll_i64(c, j), lane, wr, wc);
		tc_issue(c, plan, st, ll_add(c, step, ll_i64(c, ahead)), ll_i64(c, (j + ahead) % S));
		if (plan->tc_sp) /* the next step's (past the end: the last one's again, unused) */
			sp_load(c, a, st, ptx_min(c, ll_add(c, step, ll_i64(c, 1)), LLVMBuildNSWSub(c->b, st->end, ll_i64(c, 1), "")),
			        wr);
	}
	if (done) {
		LLVMBuildBr(c->b, done);
		LLVMPositionBuilderAtEnd(c->b, done);
	}
	lower_loop_end(c, &l);
	ptx_cp_wait(c, 0); /* the empty groups */
	if (plan->tc_wga || (plan->tc_wg && plan->emulate))
		tc_wg_wait(c, a, 0);
	if (plan->tc_wg && plan->emulate)
		for (int e = 0; e < tc_wg_nacc(plan); e++) {
			LLVMValueRef ee = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, a->ewacc, &ee, 1, ""), ""),
			               a->acc[e / 4][e % 4]);
		}
}

/* TcStage's buffers and, in emulation, ldmatrix's host function. */
void tc_stage_init(LowerCtx *c, const PtxPlan *plan, TcStage *st)
{
	LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
	LLVMTypeRef aty = LLVMArrayType2(i16, (uint64_t)(plan->tc_stages * tc_stage_halves(c->k, plan)));
	/* past the static shared memory, the launch's dynamic one: .extern
	 * .shared, no size (the emulator keeps the sized buffer, whose bounds
	 * it checks), named as PTX spells an identifier, which LLVM does not
	 * mend for an external one */
	const bool dyn = plan->smem_dyn && !plan->emulate;
	char gname[160];
	snprintf(gname, sizeof gname, dyn ? "%s_smem" : "%s.tcs", LLVMGetValueName(c->fn));
	st->xs = LLVMAddGlobalInAddressSpace(c->mod, dyn ? LLVMArrayType2(i16, 0) : aty, gname, plan->emulate ? 0 : 3);
	if (dyn) {
		LLVMSetLinkage(st->xs, LLVMExternalLinkage);
	} else {
		LLVMSetInitializer(st->xs, plan->emulate ? LLVMConstNull(aty) : LLVMGetUndef(aty));
		LLVMSetLinkage(st->xs, LLVMInternalLinkage);
	}
	LLVMSetAlignment(st->xs, 16);
	if (plan->emulate) {
		st->ldm = ptx_emu_hook(c, "patc_emu_ldm");
		LLVMTypeRef params[3] = {c->ptr, c->ptr, c->i32};
		st->ldm_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, 3, 0);
		st->eo = lower_entry_alloca(c, LLVMArrayType2(c->i32, 4), "eo");
	}
}
