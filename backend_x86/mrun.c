/* SPDX-License-Identifier: MIT */
/* mrun.c - the x86 m runs (LowerHooks.mrun, .mrun_all, .minner): several
 * rows of C sharing each row of X, condensed X, the runs accumulated across
 * the k loops above them (small blocks), the runs blocked along k for L2,
 * and a dense m loop innermost under a k loop.  It builds on the k runs'
 * tiles (krun.c). */
#include "x86_impl.h"

/* ---- m runs: several rows of C share each row of X ----
 *
 * A dense k run under a dense m loop (blocks: M0 K0^c M1 K1) keeps the
 * same k in every row, so the rows are taken X86_ROWS at a time: each X
 * vector is loaded once and multiplied into every row's accumulators. */
enum { X86_ROWS = 4 };

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
	X86When when; /* see KrunArg */
} MrunArg;

static void mrun_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	MrunArg *a = arg;
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mpoint");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mpad");
	LLVMBuildCondBr(c->b, x86_k_in_range(c, p), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	LLVMValueRef xs = a->xt ? a->xt : a->xbuf ? a->xbuf : c->X;
	LLVMValueRef row = a->xt     ? LLVMBuildNSWMul(c->b, p->k, a->ldk, "")
	                   : a->xbuf ? ll_mul(c, LLVMBuildNSWSub(c->b, p->k, a->klo, ""), a->ldx)
	                             : ll_mulv(c, p->k, c->N);
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
		LLVMValueRef wv = x86_splat(c, w, a->width);
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
	x86_krun_point(c, p, &t);
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
static void krun_row(LowerCtx *c, const LowerPoint *p, int first, X86When when)
{
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "row");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "rowpad");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->m, ll_i64(c, c->k->shape.M), ""), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	x86_krun_at(c, p, first, when);
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

static void mrun_write(LowerCtx *c, bool add, bool epi, const void *arg)
{
	const MrunWrite *w = arg;
	const MrunArg *a = w->a;
	const LowerKernel *k = c->k;
	for (int r = 0; r < a->rows; r++) {
		LLVMValueRef m = ll_add(c, w->m0, ll_i64(c, (w->r0 + r) * a->sm));
		LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mstore");
		LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mstored");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, k->shape.M), ""), st, nx);
		LLVMPositionBuilderAtEnd(c->b, st);
		LLVMValueRef base = ll_add(c, ll_mulv(c, m, c->N), a->n);
		LLVMValueRef bias = epi ? x86_row_bias(c, m, a->width) : NULL;
		for (int u = 0; u < a->nacc; u++) {
			LLVMValueRef at = ll_add(c, base, ll_i64(c, (int64_t)u * a->width));
			x86_c_update(c, a->vty, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""),
			         LLVMBuildLoad2(c->b, a->vty, a->acc[r][u], ""), add, bias);
		}
		LLVMBuildBr(c->b, nx);
		LLVMPositionBuilderAtEnd(c->b, nx);
	}
}

/* Writes the accumulators of a's rows to C's rows m0 + (r0 + r) sm, those
 * below M, at columns a->n.. (adding, or storing where a->when.fresh; with
 * the epilogue where a->when.last). */
static void mrun_store(LowerCtx *c, const MrunArg *a, LLVMValueRef m0, int64_t r0)
{
	MrunWrite w = {a, m0, r0};
	x86_c_write(c, a->when, mrun_write, &w);
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
	x86_smaller_tiles(c, from, a->width, a->nacc, mrest_tile, &ma);
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
	x86_smaller_tiles(c, from, a->width, a->nacc, mrest_tile, &ma);
	KrunArg r1 = {.width = 1, .nacc = 1, .vty = c->f32, .when = a->when};
	x86_krun_fma(c, &r1);
	r1.acc[0] = lower_entry_alloca(c, c->f32, "macc1");
	for (int r = 0; r < X86_ROWS; r++) {
		LowerPoint qr = {ll_add(c, q->row, ll_i64(c, r)),
		                 ll_add(c, q->m, ll_i64(c, (int64_t)r * a->sm)), q->k};
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mrest");
		LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mrested");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, qr.m, ll_i64(c, k->shape.M), ""), body, skip);
		LLVMPositionBuilderAtEnd(c->b, body);
		LowerLoop lr;
		r1.n = lower_loop_begin(c, &lr, LLVMBuildLoad2(c->b, c->i64, from, "from"), c->n1, "mrestn");
		x86_krun_tile(c, &qr, first + 1, &r1);
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
	if (k->n_runtime)
		return; /* its rows are N + 16 floats apart: a size fixed at compile time */
	const int64_t ldx = k->shape.N + X86_MBUF_PAD;
	/* the copy (span x N) must be small beside the work on it (rows x span
	 * x N), and pays only where X's rows share L1's sets (x86_x_rows_spread);
	 * see docs/design/x86-m-runs.md */
	if (span < 16 || ir->loops[first].len < 16 || span * ldx * 4 > X86_MBUF_BYTES || x86_x_rows_spread(k))
		return;
	LLVMValueRef buf = lower_entry_alloca(c, LLVMArrayType2(c->f32, (uint64_t)(span * ldx)), "mxbuf");
	LLVMSetAlignment(buf, 64);
	LowerLoop lj, ln;
	LLVMValueRef j = lower_loop_begin(c, &lj, ll_i64(c, 0), ll_i64(c, span), "mxrow");
	LLVMValueRef kk = ll_add(c, p->k, j);
	LLVMBasicBlockRef cp = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mxcopy");
	LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mxcopied");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kk, ll_i64(c, k->shape.K), ""), cp, nx);
	LLVMPositionBuilderAtEnd(c->b, cp);
	LLVMValueRef src0 = ll_mulv(c, kk, c->N);
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

void x86_mrun(LowerCtx *c, const LowerPoint *p, int first)
{
	const LowerKernel *k = c->k;
	const PirLoop *l = &k->ir->loops[first];
	const int64_t len = l->len, sm = l->comp[0].stride;
	const int64_t S = c->nest->stride[first];
	const int vl = k->vector_width > 1 ? k->vector_width : 1;
	const int shared = c->nest->next_perf[first + 1];
	const int64_t Sd = nest_kept(c->nest, first + 1, shared);
	MrunArg a = {.width = vl, .nacc = x86_mrun_nacc(k), .S = S, .shared = shared, .Sd = Sd,
	             .rows = X86_ROWS, .sm = sm};
	a.when = x86_c_when(c, p->row, first, x86_stores_c(k));
	a.vty = vl > 1 ? LLVMVectorType(c->f32, (unsigned)vl) : c->f32;
	{
		KrunArg f = {.vty = a.vty};
		x86_krun_fma(c, &f);
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
			x86_panel_tile(c, panel, a.n, &a.xt, &a.ldk);
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
			x86_panel_tile(c, panel, a.n, &a.xt, &a.ldk);
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
		krun_row(c, &qd, first + 1, a.when);
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
 * traffic dominates: the m loop (`first`) at most X86_ACROSS_ROWS long
 * (the choice: x86_across_for, plan.c). */

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
	a->when = x->a1->when = x86_c_when(c, p->row, x->outer + 1, x->store);
	const int64_t nt = (int64_t)a->width * a->nacc;
	LLVMValueRef tiles = mrun_tiles(c, a);
	LowerLoop lt;
	LLVMValueRef ti = lower_loop_begin(c, &lt, ll_i64(c, 0), tiles, "atile");
	a->n = LLVMBuildNSWAdd(c->b, c->n0, ll_mul(c, ti, nt), "n");
	x86_panel_tile(c, x->pn, a->n, &a->xt, &a->ldk);
	across_rows(c, x, a);
	lower_loop_end(c, &lt);
	a->xt = a->ldk = NULL;
	LLVMValueRef from = lower_entry_alloca(c, c->i64, "afrom");
	LLVMBuildStore(c->b, ll_add(c, c->n0, ll_mul(c, tiles, nt)), from);
	x86_smaller_tiles(c, from, a->width, a->nacc, across_small_tile, x);
	LowerLoop lr;
	x->a1->n = lower_loop_begin(c, &lr, LLVMBuildLoad2(c->b, c->i64, from, "from"), c->n1, "arest");
	across_rows(c, x, x->a1);
	lower_loop_end(c, &lr);
}

static void mrun_across(LowerCtx *c, int outer, int first, const X86Panel *pn)
{
	const LowerKernel *k = c->k;
	const PirLoop *l = &k->ir->loops[first];
	const int64_t S = c->nest->stride[first];
	const int vl = k->vector_width;
	MrunArg a = {.width = vl, .nacc = x86_mrun_nacc(k), .S = S, .shared = k->ir->nloops, .rows = X86_ROWS,
	             .sm = l->comp[0].stride};
	const bool store = x86_stores_c(k);
	a.vty = LLVMVectorType(c->f32, (unsigned)vl);
	KrunArg f = {.vty = a.vty}, f1 = {.vty = c->f32};
	x86_krun_fma(c, &f);
	x86_krun_fma(c, &f1);
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

void x86_mrun_all(LowerCtx *c, int first)
{
	const int vl = c->k->vector_width;
	if (!x86_panel_pays(c->k) || c->backend) {
		mrun_all_blocks(c, first);
		return;
	}
	int outer = x86_across_for(c->k); /* first: Nest.mloop */
	X86Panel pn = {NULL, (int64_t)vl * x86_mrun_nacc(c->k), false};
	LLVMValueRef raw = x86_panel_pack(c, &pn);
	if (outer >= 0) {
		mrun_across(c, outer, first, &pn);
	} else {
		c->backend = &pn;
		mrun_all_blocks(c, first);
		c->backend = NULL;
	}
	x86_free(c, raw);
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
	const double span = x86_run_rows_per_digit(ir, run);
	const int64_t chunk = x86_chunk_columns(c->k), hint = c->k->shape.N;
	const double width = (double)(ko >= 0 && chunk < hint ? chunk : hint);
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
	x86_digit_block(c, run, bi, db);
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

void x86_minner(LowerCtx *c, const LowerPoint *p, int first)
{
	const LowerKernel *k = c->k;
	const PirLoop *l = &k->ir->loops[first + 1];
	const int64_t len = l->nnz;
	const int vl = k->vector_width > 1 ? k->vector_width : 1;
	MrunArg a = {.width = vl, .nacc = x86_mrun_nacc(k), .S = 1, .rows = X86_ROWS,
	             .sm = l->comp[0].stride, .inner = true};
	a.when = x86_c_when(c, p->row, first, x86_stores_c(k));
	a.vty = vl > 1 ? LLVMVectorType(c->f32, (unsigned)vl) : c->f32;
	MrunArg a1 = a;
	a1.width = 1, a1.nacc = 1, a1.vty = c->f32;
	KrunArg f = {.vty = a.vty}, f1 = {.vty = c->f32};
	x86_krun_fma(c, &f);
	x86_krun_fma(c, &f1);
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
