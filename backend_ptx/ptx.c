/* ptx.c - the NVPTX backend; see ptx.h. */
#define _POSIX_C_SOURCE 200809L
#include "ptx.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const PtxSchedule ptx_default_schedule = {32, 4, 4, 4, 1};

enum { PTX_MAX_R = 16, PTX_MAX_V = 8 };

static const char *const known_targets[] = {"sm_80", "sm_86", "sm_89", "sm_90"};

bool ptx_target_known(const char *sm)
{
	for (size_t i = 0; i < sizeof known_targets / sizeof *known_targets; i++)
		if (!strcmp(sm, known_targets[i]))
			return true;
	return false;
}


/* Threads that keep a GPU of this class busy: 132 multiprocessors (H100,
 * H200; an A100 has 108) with 1024 resident threads each, half the
 * maximum.  Measured on an H200 (tests/gpu/run.sh, SWEEP=1): splitting
 * the walk along k pays only on grids far below it (the zeroing of C and
 * the atomics cost more than the idle multiprocessors at 93.75%), and 4
 * rows per thread beat 8 and 2.  So below a quarter of it the walk is
 * split (up to 4 parts), then rows per thread go from 4 to 2. */
static const double FILL_THREADS = 132.0 * 1024;
static const double SPLIT_BELOW = 132.0 * 1024 / 4;

/* The rows per thread that divide the group's length, at most want. */
static int group_rows(const PirLoop *g, int want)
{
	for (int d = want; d >= 1; d--)
		if (g->nnz % d == 0)
			return d;
	return 1;
}

/* Threads the plan launches for n columns. */
static double plan_threads(const PtxPlan *plan, int64_t n)
{
	int64_t cols = (int64_t)plan->s.bx * plan->s.v;
	return (double)plan->nsets * (double)((n + cols - 1) / cols) * plan->s.bx;
}

static void plan_sets(const Pir *ir, PtxPlan *plan)
{
	plan->nsets = 1;
	for (int i = 0; i < plan->nspread; i++)
		if (i != plan->group)
			plan->nsets *= ir->loops[i].nnz;
	if (plan->group >= 0)
		plan->nsets *= ir->loops[plan->group].nnz / plan->s.r;
}

void ptx_plan(const LowerKernel *k, const PtxSchedule *s, PtxPlan *plan)
{
	const Pir *ir = k->ir;
	memset(plan, 0, sizeof *plan);
	bool tune = !s || !s->bx;
	plan->s = tune ? ptx_default_schedule : *s;
	PtxSchedule *ps = &plan->s;
	if (ps->bx < 32 || ps->bx % 32)
		ps->bx = 32;
	if (ps->by < 1 || ps->bx * ps->by > 1024)
		ps->by = 1;
	ps->v = ps->v < 1 ? 1 : ps->v > PTX_MAX_V ? PTX_MAX_V : ps->v;
	ps->r = ps->r < 1 ? 1 : ps->r > PTX_MAX_R ? PTX_MAX_R : ps->r;
	const int n = ir->nloops;
	int last = -1;
	for (int i = 0; i < n; i++)
		if (pir_loop_has_axis(&ir->loops[i], PIR_AXIS_M))
			last = i;
	const PirLoop *g = last >= 0 ? &ir->loops[last] : NULL;
	plan->group = -1;
	plan->nspread = last + 1;
	if (g && !pir_loop_is_perforated(g) && g->ncomp == 1 && g->comp[0].axis == PIR_AXIS_M) {
		plan->group = last;
		int prev = last - 1;
		while (prev >= 0 && !pir_loop_has_axis(&ir->loops[prev], PIR_AXIS_M))
			prev--;
		plan->nspread = prev + 1;
	}
	bool shared = plan->group >= 0;
	for (int i = plan->group + 1; shared && i < n; i++)
		shared = !pir_loop_is_perforated(&ir->loops[i]);
	ps->r = shared ? group_rows(g, ps->r) : 1;
	plan_sets(ir, plan);
	bool dense_m = true;
	for (int i = 0; i < n; i++) {
		const PirLoop *l = &ir->loops[i];
		if (i < plan->nspread && i != plan->group)
			plan->atomic |= pir_loop_has_axis(l, PIR_AXIS_K);
		if (pir_loop_has_axis(l, PIR_AXIS_M) && pir_loop_is_perforated(l))
			dense_m = false;
	}
	/* Split the walk along k over blockIdx.z (the parts add into a zeroed
	 * C with atomics): the loop the thread walks with the most digits, in
	 * whole units of the 4-digit walk.  Auto: see FILL_THREADS. */
	plan->split = -1;
	plan->nsplit = 1;
	int best = -1;
	int64_t best_units = 1;
	for (int i = plan->nspread; i < n; i++) {
		const PirLoop *l = &ir->loops[i];
		int64_t units = l->nnz / (i == n - 1 && l->nnz % 4 == 0 ? 4 : 1);
		if (i != plan->group && units > best_units)
			best = i, best_units = units;
	}
	double t0 = plan_threads(plan, k->N);
	int64_t parts = !tune ? ps->ksplit : t0 < SPLIT_BELOW ? (int64_t)ceil(FILL_THREADS / t0) : 1;
	if (tune && parts > 4)
		parts = 4;
	if (tune && parts > best_units / 2)
		parts = best_units / 2;
	if (parts > best_units)
		parts = best_units;
	if (best >= 0 && parts >= 2) {
		const PirLoop *l = &ir->loops[best];
		int64_t unit = l->nnz / best_units;
		plan->split = best;
		plan->split_chunk = (best_units + parts - 1) / parts * unit;
		plan->nsplit = (l->nnz + plan->split_chunk - 1) / plan->split_chunk;
		plan->atomic = true;
	}
	ps->ksplit = (int)plan->nsplit;
	while (tune && shared && ps->r > 2 && plan_threads(plan, k->N) * (double)plan->nsplit < SPLIT_BELOW) {
		ps->r = group_rows(g, ps->r / 2);
		plan_sets(ir, plan);
	}
	plan->zero = plan->atomic || !dense_m;
	/* the vector loads (see the kernel body) */
	plan->xvec = k->layout == PAT_LAYOUT_KN && k->N % 4 == 0 && ps->v % 4 == 0;
	const PirLoop *in = &ir->loops[n - 1];
	plan->wk = n - 1 != plan->group && n - 1 >= plan->nspread && !pir_loop_has_axis(in, PIR_AXIS_M) &&
	           in->nnz % 4 == 0;
	plan->wr = plan->group == n - 1 && ps->r % 4 == 0;
	if (plan->split >= 0)
		plan->why = "too few rows to fill the GPU: the walk along k is split over blocks, which add to C "
		            "with atomics";
	else if (plan->atomic)
		plan->why = "a loop spread over thread blocks runs along k: threads add to C with atomics";
	else if (ps->r > 1)
		plan->why = "every row of C has one thread; each takes several rows that keep the same k";
	else
		plan->why = "every row of C has one thread, which accumulates it in registers";
}

void ptx_grid(const PtxPlan *plan, int64_t n, unsigned grid[3], unsigned block[3])
{
	const PtxSchedule *s = &plan->s;
	int64_t cols = (int64_t)s->bx * s->v;
	grid[0] = (unsigned)((plan->nsets + s->by - 1) / s->by);
	grid[1] = (unsigned)((n + cols - 1) / cols);
	grid[2] = (unsigned)plan->nsplit;
	block[0] = (unsigned)s->bx, block[1] = (unsigned)s->by, block[2] = 1;
}

/* ---- the kernel body ----
 *
 * Loads are the bottleneck of a CUDA-core SpMM (one FMA per load when
 * nothing is shared), so the body loads in 16-byte vectors where the
 * layout allows:
 *   - X (layout kn, N a multiple of 4, v a multiple of 4): a thread's
 *     columns come in groups of 4 adjacent ones, a warp's groups adjacent
 *     (512 coalesced bytes per load);
 *   - the weights, along k: when the innermost loop runs along k, is walked
 *     by the thread and keeps a multiple of 4, it is walked 4 storage
 *     digits at a time, and the 4 weights of each row are one load;
 *   - the weights, along the rows: when the row group is the innermost
 *     loop, the r weights of one k are adjacent in storage. */

typedef struct GpuArg {
	const PtxPlan *plan;
	int r, v;
	LLVMValueRef acc[PTX_MAX_R][PTX_MAX_V]; /* allocas */
	LLVMValueRef col[PTX_MAX_V];            /* clamped columns (xvec: of each group), i64 */
	LLVMValueRef mrow;                      /* alloca: the thread's first row */
	int64_t row_step, m_step;               /* the next row of the group */
	bool xvec, wk, wr;                      /* the vector loads above */
	int inner;                              /* wk: the loop walked 4 digits at a time */
	int u;                                  /* wk: which of the 4 digits */
	LLVMValueRef wv[PTX_MAX_R];             /* wk: the 4 weights of each row */
	LLVMValueRef zlo, zhi;                  /* the split loop's digits for this block */
	LLVMValueRef fma;
	LLVMTypeRef fma_ty, v4;
} GpuArg;

static LLVMValueRef i64c(LowerCtx *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }

static LLVMValueRef sreg(LowerCtx *c, const char *name)
{
	const PtxPlan *plan = c->backend;
	if (plan->emulate) { /* a global the host's emulator sets per thread */
		char gname[64];
		snprintf(gname, sizeof gname, "patc_emu_%s", name);
		for (char *q = gname; *q; q++)
			if (*q == '.')
				*q = '_';
		LLVMValueRef g = LLVMGetNamedGlobal(c->mod, gname);
		if (!g) {
			g = LLVMAddGlobal(c->mod, c->i32, gname);
			LLVMSetInitializer(g, LLVMConstInt(c->i32, 0, 0));
		}
		return LLVMBuildZExt(c->b, LLVMBuildLoad2(c->b, c->i32, g, name), c->i64, "");
	}
	char full[64];
	snprintf(full, sizeof full, "llvm.nvvm.read.ptx.sreg.%s", name);
	unsigned id = LLVMLookupIntrinsicID(full, strlen(full));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
	LLVMTypeRef t = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
	LLVMValueRef v = LLVMBuildCall2(c->b, t, f, NULL, 0, name);
	return LLVMBuildZExt(c->b, v, c->i64, "");
}

static LLVMValueRef load_f32(LowerCtx *c, LLVMValueRef base, LLVMValueRef at, const char *name)
{
	return LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, base, &at, 1, ""), name);
}

/* Four adjacent floats at base[at] (at a multiple of 4). */
static LLVMValueRef load_v4(LowerCtx *c, const GpuArg *a, LLVMValueRef base, LLVMValueRef at, const char *name)
{
	LLVMValueRef l = LLVMBuildLoad2(c->b, a->v4, LLVMBuildGEP2(c->b, c->f32, base, &at, 1, ""), name);
	LLVMSetAlignment(l, 16);
	return l;
}

static LLVMValueRef lane(LowerCtx *c, LLVMValueRef v, int i)
{
	return LLVMBuildExtractElement(c->b, v, LLVMConstInt(c->i32, (unsigned)i, 0), "");
}

/* The innermost point: the X elements of the thread's columns, r
 * weights, r v FMAs. */
static void gpu_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const LowerKernel *k = c->k;
	LLVMBuildStore(c->b, p->m, a->mrow);
	LLVMValueRef w[PTX_MAX_R];
	for (int r = 0; r < a->r; r++) { /* weights: in bounds (padding holds zeros) */
		if (a->wk)
			w[r] = lane(c, a->wv[r], a->u);
		else if (a->wr && r % 4 == 0) {
			LLVMValueRef v = load_v4(c, a, c->values, LLVMBuildNSWAdd(c->b, p->row, i64c(c, r), ""), "w4");
			for (int e = 0; e < 4; e++)
				w[r + e] = lane(c, v, e);
		} else if (!a->wr)
			w[r] = load_f32(c, c->values, LLVMBuildNSWAdd(c->b, p->row, i64c(c, r * a->row_step), ""), "w");
	}
	/* a padding column of W (only where k is padded): no X row */
	bool kpad = k->ir->ext[PIR_AXIS_K] > k->K;
	LLVMBasicBlockRef body = NULL, skip = NULL;
	if (kpad) {
		body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "point");
		skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "pad");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->k, i64c(c, k->K), ""), body, skip);
		LLVMPositionBuilderAtEnd(c->b, body);
	}
	LLVMValueRef x[PTX_MAX_V];
	for (int j = 0; j < a->v; j++) {
		if (a->xvec) {
			if (j % 4 == 0) {
				LLVMValueRef at = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, p->k, i64c(c, k->N), ""), a->col[j], "");
				LLVMValueRef v = load_v4(c, a, c->X, at, "x4");
				for (int e = 0; e < 4; e++)
					x[j + e] = lane(c, v, e);
			}
			continue;
		}
		LLVMValueRef at = k->layout == PAT_LAYOUT_KN
		                      ? LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, p->k, i64c(c, k->N), ""), a->col[j], "")
		                      : LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, a->col[j], i64c(c, k->K), ""), p->k, "");
		x[j] = load_f32(c, c->X, at, "x");
	}
	for (int r = 0; r < a->r; r++)
		for (int j = 0; j < a->v; j++) {
			LLVMValueRef acc = LLVMBuildLoad2(c->b, c->f32, a->acc[r][j], "");
			LLVMValueRef args[3] = {w[r], x[j], acc};
			LLVMBuildStore(c->b, LLVMBuildCall2(c->b, a->fma_ty, a->fma, args, 3, ""), a->acc[r][j]);
		}
	if (kpad) {
		LLVMBuildBr(c->b, skip);
		LLVMPositionBuilderAtEnd(c->b, skip);
	}
}

/* wk: the point before the innermost loop; walks it 4 digits at a time. */
static void gpu_chunk(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const PirLoop *l = &c->k->ir->loops[a->inner];
	LowerLoop loop;
	bool split = a->plan->split == a->inner;
	LLVMValueRef from = split ? LLVMBuildUDiv(c->b, a->zlo, i64c(c, 4), "") : i64c(c, 0);
	LLVMValueRef to = split ? LLVMBuildUDiv(c->b, a->zhi, i64c(c, 4), "") : i64c(c, l->nnz / 4);
	LLVMValueRef d4 = lower_loop_begin(c, &loop, from, to, "d4");
	LLVMValueRef d = LLVMBuildNSWMul(c->b, d4, i64c(c, 4), "");
	LLVMValueRef row = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, p->row, i64c(c, l->nnz), ""), d, "");
	for (int r = 0; r < a->r; r++)
		a->wv[r] = load_v4(c, a, c->values, LLVMBuildNSWAdd(c->b, row, i64c(c, r * a->row_step), ""), "w4");
	for (a->u = 0; a->u < 4; a->u++) {
		c->lo[a->inner] = LLVMBuildNSWAdd(c->b, d, i64c(c, a->u), "");
		c->hi[a->inner] = LLVMBuildNSWAdd(c->b, c->lo[a->inner], i64c(c, 1), "");
		lower_nest(c, a->inner, a->inner + 1, p, gpu_point, a);
	}
	c->lo[a->inner] = c->hi[a->inner] = NULL;
	lower_loop_end(c, &loop);
}

static void gpu_body(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	const LowerKernel *k = c->k;
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	GpuArg a = {.plan = plan, .r = plan->s.r, .v = plan->s.v};
	unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
	a.fma = LLVMGetIntrinsicDeclaration(c->mod, id, &c->f32, 1);
	a.fma_ty = LLVMIntrinsicGetType(c->ctx, id, &c->f32, 1);
	a.v4 = LLVMVectorType(c->f32, 4);
	a.xvec = plan->xvec;
	a.wk = plan->wk;
	a.wr = plan->wr;
	a.inner = n - 1;

	LLVMValueRef tx = sreg(c, "tid.x"), ty = sreg(c, "tid.y");
	LLVMValueRef cx = sreg(c, "ctaid.x"), cy = sreg(c, "ctaid.y");
	LLVMValueRef set = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, cx, i64c(c, plan->s.by), ""), ty, "set");
	LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, set, i64c(c, plan->nsets), ""), work, done);
	LLVMPositionBuilderAtEnd(c->b, work);

	/* the set's digits, innermost first: the group's chunk, then the
	 * spread loops from the last */
	LLVMValueRef rest = set;
	if (plan->group >= 0) {
		const PirLoop *g = &ir->loops[plan->group];
		int64_t chunks = g->nnz / a.r;
		LLVMValueRef chunk = LLVMBuildURem(c->b, rest, i64c(c, chunks), "");
		rest = LLVMBuildUDiv(c->b, rest, i64c(c, chunks), "");
		c->lo[plan->group] = LLVMBuildNSWMul(c->b, chunk, i64c(c, a.r), "glo");
		c->hi[plan->group] = LLVMBuildNSWAdd(c->b, c->lo[plan->group], i64c(c, 1), "ghi");
		int64_t step = 1;
		for (int i = plan->group + 1; i < n; i++)
			step *= ir->loops[i].nnz;
		a.row_step = step;
		a.m_step = g->comp[0].stride;
	}
	for (int i = plan->nspread - 1; i >= 0; i--) {
		if (i == plan->group)
			continue;
		int64_t nnz = ir->loops[i].nnz;
		c->lo[i] = i ? LLVMBuildURem(c->b, rest, i64c(c, nnz), "") : rest;
		c->hi[i] = LLVMBuildNSWAdd(c->b, c->lo[i], i64c(c, 1), "");
		if (i)
			rest = LLVMBuildUDiv(c->b, rest, i64c(c, nnz), "");
	}

	if (plan->split >= 0) { /* this block's part of the split loop */
		LLVMValueRef lo = LLVMBuildNSWMul(c->b, sreg(c, "ctaid.z"), i64c(c, plan->split_chunk), "zlo");
		LLVMValueRef hi = LLVMBuildNSWAdd(c->b, lo, i64c(c, plan->split_chunk), "");
		LLVMValueRef nnz = i64c(c, ir->loops[plan->split].nnz);
		hi = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, hi, nnz, ""), hi, nnz, "zhi");
		a.zlo = lo, a.zhi = hi;
		if (plan->split != a.inner || !a.wk)
			c->lo[plan->split] = lo, c->hi[plan->split] = hi;
	}

	/* the thread's columns (clamped into range for the loads): v apart
	 * by bx, or groups of 4 adjacent ones, 4 bx apart */
	LLVMValueRef base = LLVMBuildNSWAdd(c->b, c->n0, LLVMBuildNSWMul(c->b, cy, i64c(c, (int64_t)plan->s.bx * a.v), ""), "");
	LLVMValueRef first = LLVMBuildNSWAdd(c->b, base, a.xvec ? LLVMBuildNSWMul(c->b, tx, i64c(c, 4), "") : tx, "");
	LLVMValueRef valid[PTX_MAX_V], ncol[PTX_MAX_V];
	for (int j = 0; j < a.v; j++) {
		int64_t off = a.xvec ? (int64_t)(j / 4) * 4 * plan->s.bx + j % 4 : (int64_t)j * plan->s.bx;
		ncol[j] = LLVMBuildNSWAdd(c->b, first, i64c(c, off), "n");
		valid[j] = LLVMBuildICmp(c->b, LLVMIntSLT, ncol[j], c->n1, "");
		/* xvec: a group is whole or out (N and n0 multiples of 4); an
		 * out group reads the last 4 columns */
		LLVMValueRef last = LLVMBuildNSWSub(c->b, c->n1, i64c(c, a.xvec ? 4 - j % 4 : 1), "");
		a.col[j] = LLVMBuildSelect(c->b, valid[j], ncol[j], last, "");
	}
	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	for (int r = 0; r < a.r; r++)
		for (int j = 0; j < a.v; j++) {
			a.acc[r][j] = lower_entry_alloca(c, c->f32, "acc");
			LLVMBuildStore(c->b, zero, a.acc[r][j]);
		}
	a.mrow = lower_entry_alloca(c, c->i64, "mrow");
	LLVMBuildStore(c->b, i64c(c, k->M), a.mrow);

	LowerPoint start = {i64c(c, 0), i64c(c, 0), i64c(c, 0)};
	if (a.wk)
		lower_nest(c, 0, n - 1, &start, gpu_chunk, &a);
	else
		lower_nest(c, 0, n, &start, gpu_point, &a);

	/* write the tile: one owner stores, shared rows add atomically */
	LLVMValueRef m0 = LLVMBuildLoad2(c->b, c->i64, a.mrow, "m0");
	for (int r = 0; r < a.r; r++) {
		LLVMValueRef m = LLVMBuildNSWAdd(c->b, m0, i64c(c, r * a.m_step), "m");
		LLVMValueRef mok = LLVMBuildICmp(c->b, LLVMIntSLT, m, i64c(c, k->M), "");
		for (int j = 0; j < a.v; j += a.xvec && !plan->atomic ? 4 : 1) {
			LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "store");
			LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
			LLVMBuildCondBr(c->b, LLVMBuildAnd(c->b, mok, valid[j], ""), st, next);
			LLVMPositionBuilderAtEnd(c->b, st);
			LLVMValueRef at = k->layout == PAT_LAYOUT_KN
			                      ? LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, m, i64c(c, k->N), ""), ncol[j], "")
			                      : LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, ncol[j], i64c(c, k->M), ""), m, "");
			LLVMValueRef cp = LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, "");
			if (a.xvec && !plan->atomic) {
				LLVMValueRef v = LLVMGetUndef(a.v4);
				for (int e = 0; e < 4; e++)
					v = LLVMBuildInsertElement(c->b, v, LLVMBuildLoad2(c->b, c->f32, a.acc[r][j + e], ""),
					                           LLVMConstInt(c->i32, (unsigned)e, 0), "");
				LLVMSetAlignment(LLVMBuildStore(c->b, v, cp), 16);
			} else {
				LLVMValueRef v = LLVMBuildLoad2(c->b, c->f32, a.acc[r][j], "");
				if (plan->atomic)
					LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpFAdd, cp, v, LLVMAtomicOrderingMonotonic, 0);
				else
					LLVMBuildStore(c->b, v, cp);
			}
			LLVMBuildBr(c->b, next);
			LLVMPositionBuilderAtEnd(c->b, next);
		}
	}
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, done);
}

static void no_prologue(LowerCtx *c) { (void)c; }

LowerHooks ptx_hooks(PtxPlan *plan)
{
	return (LowerHooks){.prologue = no_prologue, .body = gpu_body, .backend = plan};
}

/* ---- the module ---- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_nvptx(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

static bool take_error(LLVMErrorRef e, char err[PTX_ERR_MAX], const char *what)
{
	if (!e)
		return false;
	char *msg = LLVMGetErrorMessage(e);
	snprintf(err, PTX_ERR_MAX, "%s: %s", what, msg);
	LLVMDisposeErrorMessage(msg);
	return true;
}

bool ptx_compile(PtxKernelSpec *ks, int nk, const char *sm, char **ptx, char **llvm,
                 char err[PTX_ERR_MAX])
{
	*ptx = NULL;
	if (llvm)
		*llvm = NULL;
	if (!ptx_target_known(sm)) {
		snprintf(err, PTX_ERR_MAX, "unknown GPU target '%s'", sm);
		return false;
	}
	pthread_once(&init_once, init_nvptx);
	const char *triple = "nvptx64-nvidia-cuda";
	LLVMTargetRef target;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		snprintf(err, PTX_ERR_MAX, "no NVPTX target in this LLVM: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		return false;
	}
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, sm, "+ptx80", LLVMCodeGenLevelAggressive,
	                                                  LLVMRelocDefault, LLVMCodeModelDefault);
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("patc", ctx);
	LLVMSetTarget(mod, triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	char *dl = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(mod, dl);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);
	unsigned readonly = LLVMGetEnumAttributeKindForName("readonly", 8);
	for (int i = 0; i < nk; i++) {
		ptx_plan(&ks[i].k, &ks[i].s, &ks[i].plan);
		LowerHooks hooks = ptx_hooks(&ks[i].plan);
		LLVMValueRef fn = lower_kernel(ctx, mod, &ks[i].k, &hooks);
		LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
		const unsigned ro[] = {1, 3, 4}; /* X, values, index */
		for (size_t j = 0; j < sizeof ro / sizeof *ro; j++)
			LLVMAddAttributeAtIndex(fn, ro[j], LLVMCreateEnumAttribute(ctx, readonly, 0));
	}
	bool ok = true;
	char *verr = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &verr)) {
		snprintf(err, PTX_ERR_MAX, "internal error: invalid kernel module: %.400s", verr);
		ok = false;
	}
	LLVMDisposeMessage(verr);
	if (ok) {
		LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
		ok = !take_error(LLVMRunPasses(mod, "default<O3>", tm, po), err, "optimising the kernels");
		LLVMDisposePassBuilderOptions(po);
	}
	if (ok && llvm) {
		char *text = LLVMPrintModuleToString(mod);
		*llvm = strdup(text);
		LLVMDisposeMessage(text);
		if (!*llvm) {
			snprintf(err, PTX_ERR_MAX, "out of memory");
			ok = false;
		}
	}
	LLVMMemoryBufferRef buf = NULL;
	if (ok && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &buf)) {
		snprintf(err, PTX_ERR_MAX, "emitting PTX: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		ok = false;
	}
	if (ok) {
		size_t len = LLVMGetBufferSize(buf);
		*ptx = malloc(len + 1);
		if (!*ptx) {
			snprintf(err, PTX_ERR_MAX, "out of memory");
			ok = false;
		} else {
			memcpy(*ptx, LLVMGetBufferStart(buf), len);
			(*ptx)[len] = 0;
		}
		LLVMDisposeMemoryBuffer(buf);
	}
	if (!ok && llvm) {
		free(*llvm);
		*llvm = NULL;
	}
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return ok;
}
