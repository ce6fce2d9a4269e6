/* SPDX-License-Identifier: MIT */
/* ptx_stage.c - the CUDA-core kernel's staging: the copies of a stage of X
 * (and of the weights, wstage) into shared memory with cp.async, spread
 * over the block's threads (ptx_stage_issue, which ptx_body.c's walk
 * calls). */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

/* k of point jj (0 <= jj < stage_p, storage order, the group skipped) of
 * iteration d of the first walked loop, from the point p before it. */
static LLVMValueRef stage_k(LowerCtx *c, const GpuArg *a, const LowerPoint *p, LLVMValueRef d, LLVMValueRef jj)
{
	const Pir *ir = c->k->ir;
	const int n = ir->nloops, outer = a->plan->outer, group = a->plan->group;
	LLVMValueRef digit[PIR_MAX_LOOPS] = {0};
	digit[outer] = d;
	LLVMValueRef rest = jj;
	for (int i = n - 1; i > outer; i--) {
		if (i == group)
			continue;
		int64_t nnz = ir->loops[i].nnz;
		digit[i] = ll_urem(c, rest, nnz);
		rest = ll_udiv(c, rest, nnz);
	}
	LLVMValueRef row = p->row, k = p->k;
	for (int i = outer; i < n; i++) {
		if (i == group)
			continue; /* the loops after it are dense: their rows are not needed */
		const PirLoop *l = &ir->loops[i];
		LLVMValueRef at = ll_add(c, ll_mul(c, row, l->nnz), digit[i]);
		LLVMValueRef v = digit[i];
		if (c->idx[i])
			v = lower_index(c, i, at);
		row = at;
		LLVMValueRef dm, dk;
		lower_offsets(c, l, v, &dm, &dk);
		k = ll_add(c, k, dk);
	}
	return k;
}

/* Where every loop after the first walked one (the group aside) is
 * dense, k of point jj is k of the point's iteration (stage_k at jj 0)
 * plus a part of jj alone: that part (the loops' offsets), *linear where
 * it is linear in jj (one loop of one axis).  NULL where a loop keeps an
 * index. */
static LLVMValueRef stage_k_inner(LowerCtx *c, const GpuArg *a, LLVMValueRef jj, bool *linear)
{
	const Pir *ir = c->k->ir;
	const int n = ir->nloops, outer = a->plan->outer, group = a->plan->group;
	int loops = 0;
	bool joined = false;
	for (int i = outer + 1; i < n; i++)
		if (i != group && c->idx[i])
			return NULL;
		else if (i != group)
			loops++, joined |= ir->loops[i].ncomp > 1;
	/* then k is jj times the loop's stride (a joined loop's k is not
	 * linear in its digit where its parts are out of order) */
	*linear = loops <= 1 && !joined;
	int first = outer + 1 == group ? outer + 2 : outer + 1; /* its digit: what the others leave of jj */
	LLVMValueRef k = ll_i64(c, 0), rest = jj;
	for (int i = n - 1; i >= first; i--) {
		if (i == group)
			continue;
		const PirLoop *l = &ir->loops[i];
		LLVMValueRef dm, dk;
		lower_offsets(c, l, i == first ? rest : ll_urem(c, rest, l->nnz), &dm, &dk);
		rest = ll_udiv(c, rest, l->nnz);
		k = ll_add(c, k, dk);
	}
	return k;
}

/* What a stage's copies share: stage s (iterations olo + s u .. of the
 * first walked loop, ohi its end) into buffer buf, from point p. */
typedef struct StageCopy {
	const LowerPoint *p;
	LLVMValueRef s, buf, olo, ohi;
	LLVMValueRef x1, w1; /* X and the weights in the global space (emulated: as they are) */
} StageCopy;

/* Iteration d of the first walked loop for iteration u of the stage. */
static LLVMValueRef stage_d(LowerCtx *c, const GpuArg *a, const StageCopy *sc, LLVMValueRef u)
{
	LLVMValueRef d = LLVMBuildNSWAdd(
		c->b, sc->olo, ll_add(c, ll_mul(c, sc->s, a->plan->stage_u), u), "");
	if (a->ragged) /* past the end: any real row */
		d = ptx_min(c, d, LLVMBuildNSWSub(c->b, sc->ohi, ll_i64(c, 1), ""));
	return d;
}

/* Copies `bytes` (16 or 4) from global src to shared dst: cp.async
 * (emulated: counted, what, see ptx_emu_count). */
static void stage_copy(LowerCtx *c, const GpuArg *a, LLVMValueRef dst, LLVMValueRef src, int bytes, int what)
{
	if (a->plan->emulate) {
		ptx_emu_count(c, what, ll_i64(c, bytes));
		ptx_emu_cp(c, dst, src, (unsigned)bytes, NULL);
		return;
	}
	LLVMValueRef args[2] = {dst, src};
	ptx_call(c, bytes == 16 ? "llvm.nvvm.cp.async.cg.shared.global.16" : "llvm.nvvm.cp.async.ca.shared.global.4",
	         args, 2);
}

/* Piece q of a stage's `total`, copied by piece(): the thread's q = tid +
 * i threads for each i (unrolled, the last guarded where the threads do
 * not divide total). */
typedef void (*StagePiece)(LowerCtx *c, GpuArg *a, const StageCopy *sc, LLVMValueRef q, int64_t i);
static void stage_pieces(LowerCtx *c, GpuArg *a, const StageCopy *sc, int64_t total, StagePiece piece)
{
	const int64_t threads = (int64_t)a->plan->s.bx * a->plan->s.by;
	for (int64_t i = 0; i * threads < total; i++) {
		LLVMValueRef q = LLVMBuildNSWAdd(c->b, a->tid, ll_i64(c, i * threads), "q");
		LLVMBasicBlockRef next = NULL;
		if ((i + 1) * threads > total) {
			LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stgq");
			next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stgn");
			LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, q, ll_i64(c, total), ""), body, next);
			LLVMPositionBuilderAtEnd(c->b, body);
		}
		piece(c, a, sc, q, i);
		if (next) {
			LLVMBuildBr(c->b, next);
			LLVMPositionBuilderAtEnd(c->b, next);
		}
	}
}

/* Piece q of X's stage: in layout kn 16 bytes of 4 columns, a warp's
 * along a row; in layout nk one element, a warp's down a column (along k,
 * where X is contiguous), or where the stage's rows and columns allow, 8
 * k of 4 adjacent columns: a sector of each column, and with rows 4 words
 * longer than a multiple of the 32 banks (ptx_stage_width), one word of each
 * bank (down one column the 32 would fall in 8 banks). */
static void x_piece(LowerCtx *c, GpuArg *a, const StageCopy *sc, LLVMValueRef q, int64_t i)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	const bool nk = k->shape.layout == PAT_LAYOUT_NK;
	const int64_t rows = plan->stage_u * plan->stage_p, cols = (int64_t)plan->s.bx * a->v;
	const int64_t pieces = nk ? cols : cols / 4, threads = (int64_t)plan->s.bx * plan->s.by;
	const int64_t width = ptx_stage_width(k, plan);
	/* row jrow + jrow_add of the stage, piece g of the row; where the rows
	 * (nk) or the pieces of a row (kn) divide the threads, a thread keeps
	 * its row or its piece, and in layout kn its later pieces are the rows
	 * T = threads / pieces further on (jrow_add, a constant) */
	const int64_t T = !nk && threads % pieces == 0 ? threads / pieces : 0;
	LLVMValueRef jrow, g;
	int64_t jrow_add = 0;
	if (nk && rows % 8 == 0 && cols % 4 == 0) {
		/* 32 pieces: 8 x 4 (the 8 fastest), rows / 8 of those down the
		 * stage, then across; where the threads cover whole columns of
		 * them, a thread's later pieces are threads / rows columns on */
		const bool keep = threads % (4 * rows) == 0;
		LLVMValueRef lane = ll_urem(c, keep ? a->tid : q, 32);
		LLVMValueRef b8 = ll_udiv(c, keep ? a->tid : q, 32);
		LLVMValueRef down = ll_urem(c, b8, rows / 8);
		LLVMValueRef across = ll_udiv(c, b8, rows / 8);
		jrow = LLVMBuildNSWAdd(c->b, ll_mul(c, down, 8),
		                       ll_urem(c, lane, 8), "");
		g = LLVMBuildNSWAdd(c->b, ll_mul(c, across, 4),
		                    ll_udiv(c, lane, 8), "");
		if (keep)
			g = ll_add(c, g, ll_i64(c, i * (threads / rows)));
	} else if (nk && threads % rows == 0) {
		jrow = ll_urem(c, a->tid, rows);
		g = LLVMBuildNSWAdd(c->b, ll_udiv(c, a->tid, rows), ll_i64(c, i * (threads / rows)), "");
	} else if (nk) {
		jrow = ll_urem(c, q, rows);
		g = ll_udiv(c, q, rows);
	} else if (T) {
		jrow = ll_udiv(c, a->tid, pieces);
		jrow_add = i * T;
		g = ll_urem(c, a->tid, pieces);
	} else {
		jrow = ll_udiv(c, q, pieces);
		g = ll_urem(c, q, pieces);
	}
	/* the stage's iteration u, its point jj + jj_add; stated where the
	 * compiler cannot see it, so that the copies of one iteration share
	 * its index loads: one iteration a stage, u = 0; or in layout kn,
	 * where the block's rows of pieces divide the points, rows tid /
	 * pieces + i T are of iteration i T / stage_p */
	LLVMValueRef u, jj;
	int64_t jj_add = 0;
	if (plan->stage_u == 1)
		u = ll_i64(c, 0), jj = jrow, jj_add = jrow_add;
	else if (T && plan->stage_p % T == 0)
		u = ll_i64(c, i * T / plan->stage_p), jj = jrow, jj_add = i * T % plan->stage_p;
	else {
		LLVMValueRef r = ll_add(c, jrow, ll_i64(c, jrow_add));
		u = ll_udiv(c, r, plan->stage_p), jj = ll_urem(c, r, plan->stage_p);
	}
	/* columns past N: any real one (never stored) */
	LLVMValueRef col = ptx_min(c, ll_add(c, a->base, nk ? g : ll_mul(c, g, 4)),
	                         LLVMBuildNSWSub(c->b, c->N, ll_i64(c, nk ? 1 : 4), ""));
	LLVMValueRef d = stage_d(c, a, sc, u);
	/* where the loops after the walked one are dense and K is not padded,
	 * the address is X's row (kn) or element (nk) at the iteration's first
	 * k, shared by the copies of the iteration, plus what the thread's
	 * piece adds, the same in every stage (hoisted out of the stage loop),
	 * plus for its later pieces a constant (the copy's immediate offset
	 * where one loop is left, so k is linear in the point) */
	bool linear = false;
	LLVMValueRef kin = NULL;
	if (k->ir->ext[PIR_AXIS_K] == k->shape.K) {
		kin = stage_k_inner(c, a, jj, &linear);
		if (kin && jj_add && !linear)
			kin = stage_k_inner(c, a, ll_add(c, jj, ll_i64(c, jj_add)), &linear);
	}
	LLVMValueRef src;
	if (kin) {
		LLVMValueRef k0 = stage_k(c, a, sc->p, d, ll_i64(c, 0));
		LLVMValueRef rel = nk ? ll_add(c, ll_mul(c, col, k->shape.K), kin)
		                      : ll_add(c, ll_mulv(c, kin, c->N), col);
		LLVMValueRef at0 = nk ? k0 : ll_mulv(c, k0, c->N);
		src = LLVMBuildGEP2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, sc->x1, &at0, 1, "xrow"), &rel, 1, "");
		if (jj_add && linear) {
			bool unused;
			LLVMValueRef add = stage_k_inner(c, a, ll_i64(c, jj_add), &unused);
			if (!nk)
				add = ll_mulv(c, add, c->N);
			src = LLVMBuildGEP2(c->b, c->f32, src, &add, 1, "");
		}
	} else {
		LLVMValueRef kk = stage_k(c, a, sc->p, d, ll_add(c, jj, ll_i64(c, jj_add)));
		if (k->ir->ext[PIR_AXIS_K] > k->shape.K) /* padding (w = 0): any real row */
			kk = ptx_min(c, kk, ll_i64(c, k->shape.K - 1));
		LLVMValueRef src_at = nk ? ll_add(c, ll_mul(c, col, k->shape.K), kk)
		                         : ll_add(c, ll_mulv(c, kk, c->N), col);
		src = LLVMBuildGEP2(c->b, c->f32, sc->x1, &src_at, 1, "");
	}
	/* the buffer, the piece's place in it, the constant for later pieces */
	LLVMValueRef buf_at = ll_mul(c, sc->buf, rows * width);
	LLVMValueRef dst_at = LLVMBuildNSWAdd(c->b, ll_mul(c, jrow, width),
	                                      nk ? g : ll_mul(c, g, 4), "");
	LLVMValueRef xbuf = LLVMBuildGEP2(c->b, c->f32, a->xs, &buf_at, 1, "xbuf");
	LLVMValueRef dst = LLVMBuildGEP2(c->b, c->f32, xbuf, &dst_at, 1, "");
	if (jrow_add) {
		LLVMValueRef add = ll_i64(c, jrow_add * width);
		dst = LLVMBuildGEP2(c->b, c->f32, dst, &add, 1, "");
	}
	stage_copy(c, a, dst, src, nk ? 4 : 16, 0);
}

/* Where in storage a weight of the stage lies: point pt of the stage
 * (the walked loop's iteration pt / stage_p, the rest of the point over
 * the loops after it, innermost fastest), group digit g. */
static LLVMValueRef stage_w_src(LowerCtx *c, const GpuArg *a, const StageCopy *sc, LLVMValueRef pt, LLVMValueRef g)
{
	const PtxPlan *plan = a->plan;
	const Pir *ir = c->k->ir;
	const int n = ir->nloops, outer = plan->outer;
	LLVMValueRef digit[PIR_MAX_LOOPS] = {0};
	digit[outer] = stage_d(c, a, sc, ll_udiv(c, pt, plan->stage_p));
	digit[plan->group] = g;
	LLVMValueRef rest = ll_urem(c, pt, plan->stage_p);
	for (int l = n - 1; l > outer; l--) {
		if (l == plan->group)
			continue;
		digit[l] = ll_urem(c, rest, ir->loops[l].nnz);
		rest = ll_udiv(c, rest, ir->loops[l].nnz);
	}
	LLVMValueRef at = sc->p->row;
	for (int l = outer; l < n; l++)
		at = ll_add(c, ll_mul(c, at, ir->loops[l].nnz), digit[l]);
	return at;
}

/* Piece q of the weights' stage where the threads read them along the
 * rows (wr: the group is the innermost loop): 4 of the block's r by rows
 * (adjacent in storage, from the block's first group digit on) at point
 * q / (r by / 4) of the stage. */
static void w_piece_rows(LowerCtx *c, GpuArg *a, const StageCopy *sc, LLVMValueRef q)
{
	const PtxPlan *plan = a->plan;
	const int64_t br = (int64_t)plan->s.by * a->r;
	LLVMValueRef pt = ll_udiv(c, q, br / 4);
	LLVMValueRef g4 = ll_mul(c, ll_urem(c, q, br / 4), 4);
	LLVMValueRef first = LLVMBuildNSWSub(c->b, a->glo, ll_mul(c, a->ty, a->r), "");
	LLVMValueRef src_at = stage_w_src(c, a, sc, pt, ll_add(c, first, g4));
	LLVMValueRef dst_at = LLVMBuildNSWAdd(
		c->b,
		LLVMBuildNSWMul(
			c->b,
			ll_add(c, ll_mul(c, sc->buf, plan->stage_u * plan->stage_p), pt),
			ll_i64(c, br), ""),
		g4, "");
	stage_copy(c, a, LLVMBuildGEP2(c->b, c->f32, a->ws, &dst_at, 1, ""),
	           LLVMBuildGEP2(c->b, c->f32, sc->w1, &src_at, 1, ""), 16, 1);
}

/* Piece q of the weights' stage (wstage): 4 adjacent points (along the
 * innermost loop, adjacent in storage) of one of the block's rows, slot
 * r by + y of the buffer for row r of row set y, whose group digit is
 * the thread's own moved by y - ty sets.  Where the slots come in eights,
 * the 8 lanes a 16-byte cp.async serves together take the same points of
 * 8 slots, which rows PTX_WSTAGE_PAD floats longer than a multiple of 32 put in
 * distinct banks (the pieces of one row would put two rows in the same). */
static void w_piece(LowerCtx *c, GpuArg *a, const StageCopy *sc, LLVMValueRef q, int64_t i)
{
	const PtxPlan *plan = a->plan;
	if (plan->wr) {
		w_piece_rows(c, a, sc, q);
		return;
	}
	const int64_t per = plan->stage_u * plan->stage_p / 4, by = plan->s.by;
	const int64_t threads = (int64_t)plan->s.bx * by;
	/* where the slots of the block's threads (threads / per) are whole
	 * row sets, the thread's later pieces are the same row set's rows
	 * threads / per / by further on: a constant more in storage (along the
	 * group, the loops after it that far) and in the buffer */
	const bool eights = by * a->r % 8 == 0;
	const int64_t ahead =
		threads % (eights ? 8 * per : per) == 0 && threads / per % by == 0 ? i * (threads / per) : 0;
	if (ahead)
		q = a->tid;
	LLVMValueRef slot, pt;
	if (eights) {
		LLVMValueRef e = ll_urem(c, q, 8 * per);
		LLVMValueRef eights8 = ll_mul(c, ll_udiv(c, q, 8 * per), 8);
		slot = ll_add(c, eights8, ll_urem(c, e, 8));
		pt = ll_mul(c, ll_udiv(c, e, 8), 4);
	} else {
		slot = ll_udiv(c, q, per);
		pt = ll_mul(c, ll_urem(c, q, per), 4);
	}
	LLVMValueRef y = ll_urem(c, slot, by), r = ll_udiv(c, slot, by);
	LLVMValueRef row = ll_mul(c, LLVMBuildNSWSub(c->b, y, a->ty, ""), a->r);
	LLVMValueRef g = ll_add(c, a->glo, ll_add(c, row, r));
	LLVMValueRef src_at = stage_w_src(c, a, sc, pt, g);
	LLVMValueRef buf_at = ll_mul(c, sc->buf, by * a->r * a->wrow);
	LLVMValueRef dst_at = ll_add(c, ll_mul(c, slot, a->wrow), pt);
	LLVMValueRef wbuf = LLVMBuildGEP2(c->b, c->f32, a->ws, &buf_at, 1, "wbuf");
	LLVMValueRef dst = LLVMBuildGEP2(c->b, c->f32, wbuf, &dst_at, 1, "");
	LLVMValueRef src = LLVMBuildGEP2(c->b, c->f32, sc->w1, &src_at, 1, "");
	if (ahead) {
		const int64_t along = ahead / by * c->nest->stride[plan->group]; /* rows of the group further on */
		LLVMValueRef sa = ll_i64(c, along), da = ll_i64(c, ahead * a->wrow);
		src = LLVMBuildGEP2(c->b, c->f32, src, &sa, 1, "");
		dst = LLVMBuildGEP2(c->b, c->f32, dst, &da, 1, "");
	}
	stage_copy(c, a, dst, src, 16, 1);
}

/* Copies stage s into buffer buf, spread over the block's threads
 * (cp.async): X's rows and, wstage, the weights. */
void ptx_stage_issue(LowerCtx *c, GpuArg *a, const LowerPoint *p, LLVMValueRef s, LLVMValueRef buf,
                     LLVMValueRef olo, LLVMValueRef ohi)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	LLVMTypeRef global = LLVMPointerTypeInContext(c->ctx, 1);
	StageCopy sc = {.p = p, .s = s, .buf = buf, .olo = olo, .ohi = ohi, .x1 = c->X, .w1 = c->values};
	if (!plan->emulate) {
		sc.x1 = LLVMBuildAddrSpaceCast(c->b, c->X, global, "xg");
		sc.w1 = LLVMBuildAddrSpaceCast(c->b, c->values, global, "wg");
	}
	const int64_t cols = (int64_t)plan->s.bx * a->v, rows = plan->stage_u * plan->stage_p;
	stage_pieces(c, a, &sc, rows * (k->shape.layout == PAT_LAYOUT_NK ? cols : cols / 4), x_piece);
	if (plan->wstage)
		stage_pieces(c, a, &sc, (int64_t)plan->s.by * a->r * rows / 4, w_piece);
}
