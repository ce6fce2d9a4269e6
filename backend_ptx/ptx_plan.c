/* SPDX-License-Identifier: MIT */
/* ptx_plan.c - the GPU mapping's plan (ptx_plan: which loops go to thread
 * blocks, rows and columns per thread, split-K, the vector loads, staging),
 * the targets, the grid and what the blocks move (ptx_traffic); see ptx.h.
 * The tensor-core plan is tc_plan.c's. */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const PtxSchedule ptx_default_schedule = {32, 4, 4, 4, 1, 1, 0, 0, 0, 0, 0};

PtxSchedule ptx_schedule_of(const KernelSchedule *ks)
{
	return (PtxSchedule){ks->bx, ks->by, ks->v, ks->r, ks->ksplit, ks->stage, ks->wg, ks->wsum, ks->tcs, ks->tcw, 0};
}

static const char *const known_targets[] = {"sm_80", "sm_86", "sm_89", "sm_90"};

bool ptx_target_known(const char *sm)
{
	for (size_t i = 0; i < sizeof known_targets / sizeof *known_targets; i++)
		if (!strcmp(sm, known_targets[i]))
			return true;
	return false;
}

/* Threads that keep a GPU of this class busy: 132 multiprocessors with
 * 1024 resident threads each, half the maximum.  Below a quarter of it the
 * walk is split (up to 4 parts), then rows per thread go from 4 to 2; the
 * wide tiles (ptx_plan) are taken only above it.  Why these numbers: see
 * docs/design/ptx-schedule.md. */
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

/* Whether the rows of the group keep the same k: the loops after it are
 * dense (for the group Nest.mloop, Nest.mloop_shares_k). */
static bool rows_share_k(const Pir *ir, int group)
{
	Nest nest;
	nest_of(ir, &nest);
	return group >= 0 && nest.next_perf[group + 1] == nest.nloops;
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

/* Staging X in shared memory: where every thread of a block walks the
 * same k (a row group whose later loops are dense, the block's row sets
 * being chunks of one group), a thread's columns come in groups of 4 (X kn
 * with 16-byte groups, or X nk, copied element by element), and two
 * buffers of a stage fit in 48 KiB.  A stage holds the X rows of stage_u
 * iterations of the first walked loop (16 rows or more), each row the
 * block's columns in order (in layout nk padded by 4, so that the copies
 * down a column spread over the banks).  Where the threads walk the
 * weights along k 4 at a time and their row group inside the staged loop
 * (blocks), the stage holds the block's weights of those iterations too,
 * row r of row set y at r by + y, each row padded by PTX_WSTAGE_PAD floats so
 * that the rows the two halves of a warp read lie in different banks;
 * where they read them along the rows (wr: the group is the innermost
 * loop, tile_v), point j of the stage holds the block's r by rows, which
 * are adjacent in storage, at j r by. */
enum { STAGE_ROWS = 16, STAGE_BYTES = 48 << 10 }; /* PTX_WSTAGE_PAD: ptx_impl.h */

/* The shared memory of a stage's weights (wstage), both buffers (for wr,
 * whose rows need no padding, a bound). */
static int64_t wstage_bytes(const PtxPlan *plan)
{
	return 2 * (int64_t)plan->s.by * plan->s.r * (plan->stage_u * plan->stage_p + PTX_WSTAGE_PAD) * 4;
}

/* Floats per row of a stage: in layout nk padded by 4, so that the copies
 * down its columns fall in distinct banks (not where the emulator is told
 * to plant bank conflicts: PATC_EMU_INJECT=nopad). */
int64_t ptx_stage_width(const LowerKernel *k, const PtxPlan *plan)
{
	const bool pad = k->shape.layout == PAT_LAYOUT_NK && !(plan->emulate && ptx_emu_inject("nopad"));
	return (int64_t)plan->s.bx * plan->s.v + (pad ? 4 : 0);
}

/* Whether a thread's r rows (consecutive digits of the group loop, from a
 * multiple of r) come in runs of e adjacent rows from a multiple of e (r a
 * multiple of e): the group's rows are consecutive, every other loop's a
 * multiple of e apart. */
static bool rows_by(const Pir *ir, int group, int r, int e)
{
	if (r % e || ir->loops[group].comp[0].stride != 1)
		return false;
	for (int i = 0; i < ir->nloops; i++)
		for (int j = 0; j < ir->loops[i].ncomp; j++)
			if (i != group && ir->loops[i].comp[j].axis == PIR_AXIS_M && ir->loops[i].comp[j].stride % e)
				return false;
	return true;
}

/* Whether X can be staged under plan, split or not along the loop the
 * threads walk first (*outer, whose u iterations of p points each a stage
 * holds). */
static bool stage_fits(const LowerKernel *k, const PtxPlan *plan, int *outer_out, int64_t *u_out, int64_t *p_out)
{
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	const PtxSchedule *ps = &plan->s;
	if (!ps->stage || !rows_share_k(ir, plan->group) ||
	    !(plan->xvec || (k->shape.layout == PAT_LAYOUT_NK && ps->v % 4 == 0)))
		return false;
	int outer = plan->nspread;
	while (outer < n && outer == plan->group)
		outer++;
	if (outer >= n)
		return false;
	int64_t p = 1;
	for (int i = outer + 1; i < n; i++)
		if (i != plan->group)
			p *= ir->loops[i].nnz;
	int64_t u = p >= STAGE_ROWS ? 1 : STAGE_ROWS / p;
	if (u > ir->loops[outer].nnz)
		u = ir->loops[outer].nnz;
	*outer_out = outer, *u_out = u, *p_out = p;
	return 2 * u * p * ptx_stage_width(k, plan) * 4 <= STAGE_BYTES;
}

static void plan_stage(const LowerKernel *k, PtxPlan *plan)
{
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	PtxSchedule *ps = &plan->s;
	plan->stage = false;
	plan->outer = -1;
	int outer;
	int64_t u, p;
	if (!stage_fits(k, plan, &outer, &u, &p) || (plan->split >= 0 && plan->split != outer))
		return; /* a stage holds whole iterations of the loops inside */
	/* the block's row sets: consecutive chunks of one group */
	int64_t chunks = ir->loops[plan->group].nnz / ps->r;
	int by = ps->by;
	while (chunks % by)
		by--;
	ps->by = by;
	plan->stage = true;
	plan->outer = outer;
	if (outer == n - 1)
		plan->wk = false; /* staged one iteration at a time */
	plan->stage_u = u;
	plan->stage_p = p;
	/* the weights too, where the threads walk them along k with the rows'
	 * group inside the staged loop (its digit is all that tells the block's
	 * rows apart), or along the rows of an innermost group (wr) */
	plan->wstage = (plan->wk && plan->group > outer) || plan->wr;
	if (plan->wstage && 2 * u * p * ptx_stage_width(k, plan) * 4 + wstage_bytes(plan) > STAGE_BYTES)
		plan->wstage = false;
}

bool ptx_bx_legal(int bx) { return bx == 16 || (bx >= 32 && bx % 32 == 0); }

/* The CUDA-core plan from schedule s; tune: patc's choice (s a starting
 * point that it adapts to the grid). */
static void plan_cuda(const LowerKernel *k, const PtxSchedule *s, bool tune, PtxPlan *plan)
{
	const Pir *ir = k->ir;
	const char *tc_why = plan->tc_why; /* ptx_tc_plan's answer */
	memset(plan, 0, sizeof *plan);
	plan->tc_why = tc_why;
	plan->s = *s;
	PtxSchedule *ps = &plan->s;
	if (!ptx_bx_legal(ps->bx))
		ps->bx = 32;
	if (ps->by < 1 || ps->bx * ps->by > 1024)
		ps->by = 1;
	ps->v = ps->v < 1 ? 1 : ps->v > PTX_MAX_V ? PTX_MAX_V : ps->v;
	ps->r = ps->r < 1 ? 1 : ps->r > PTX_MAX_R ? PTX_MAX_R : ps->r;
	const int n = ir->nloops;
	Nest nest;
	nest_of(ir, &nest);
	/* the group: the dense m loop above the k run; the loops the blocks
	 * spread over: those above it down to the last with m */
	plan->group = nest.mloop;
	plan->nspread = nest.mloop >= 0 ? nest.m_above + 1 : nest.split;
	const PirLoop *g = nest.mloop >= 0 ? &ir->loops[nest.mloop] : NULL;
	const bool shared = rows_share_k(ir, plan->group);
	ps->r = shared ? group_rows(g, ps->r) : 1;
	plan_sets(ir, plan);
	const bool dense_m = nest.m_dense;
	bool spread_k = false;
	for (int i = 0; i < plan->nspread; i++)
		if (i != plan->group)
			spread_k |= pir_loop_has_axis(&ir->loops[i], PIR_AXIS_K);
	plan->atomic = spread_k;
	/* Split the walk along k over blockIdx.z (the parts add into a zeroed
	 * C with atomics): the loop the thread walks with the most digits, in
	 * whole units of the 4-digit walk, but where X can be staged the
	 * outermost one the threads walk (the stage holds whole iterations of
	 * the loops inside it, plan_stage) where it has digits enough for two
	 * parts (4 under patc's choice, which splits in at most half of them)
	 * or the schedule's.  Auto: see FILL_THREADS. */
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
	/* (the stage holds whole iterations of that loop: where it has digits
	 * enough for 2 parts or the schedule's, it is split instead) */
	plan->xvec = k->shape.layout == PAT_LAYOUT_KN && ptx_n_multiple(k, 4) && ps->v % 4 == 0;
	int outer;
	int64_t su, sp;
	if (stage_fits(k, plan, &outer, &su, &sp) && outer != best && !(outer == n - 1 && ir->loops[outer].nnz % 4 == 0) &&
	    ir->loops[outer].nnz >= (tune ? 4 : ps->ksplit > 2 ? ps->ksplit : 2))
		best = outer, best_units = ir->loops[outer].nnz;
	double t0 = plan_threads(plan, k->shape.N);
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
	while (tune && shared && ps->r > 2 && plan_threads(plan, k->shape.N) * (double)plan->nsplit < SPLIT_BELOW) {
		ps->r = group_rows(g, ps->r / 2);
		plan_sets(ir, plan);
	}
	/* the parts summed through the module's workspace (PtxPlan.wsum) */
	plan->wsum = ps->wsum > 0 && !k->n_runtime && plan->split >= 0 && !spread_k && plan->nsplit <= PTX_WSUM_PARTS &&
	             (double)plan->nsplit * (double)k->shape.M * (double)k->shape.N * 4 <= PTX_WSUM_BYTES;
	if (plan->wsum)
		plan->atomic = false;
	ps->wsum = plan->wsum;
	plan->zero = plan->atomic || !dense_m;
	/* the vector loads (see the kernel body; xvec above) */
	const PirLoop *in = &ir->loops[n - 1];
	plan->wk = n - 1 != plan->group && n - 1 >= plan->nspread && !pir_loop_has_axis(in, PIR_AXIS_M) &&
	           in->nnz % 4 == 0;
	plan->wr = plan->group == n - 1 && ps->r % 4 == 0;
	/* (C's columns start 16 or 8 bytes aligned in layout nk where M is a multiple of 4 or 2) */
	plan->mvec = 0;
	for (int e = 4; e > 1 && !plan->mvec; e /= 2)
		if (k->shape.layout == PAT_LAYOUT_NK && plan->group >= 0 && k->shape.M % e == 0 && rows_by(ir, plan->group, ps->r, e))
			plan->mvec = e;
	plan_stage(k, plan);
	if (plan->split >= 0 && plan->wsum)
		plan->why = "too few rows to fill the GPU: the walk along k is split over blocks, whose sums the last "
		            "to finish adds up from a workspace";
	else if (plan->split >= 0)
		plan->why = "too few rows to fill the GPU: the walk along k is split over blocks, which add to C "
		            "with atomics";
	else if (plan->atomic)
		plan->why = "a loop spread over thread blocks runs along k: threads add to C with atomics";
	else if (ps->r > 1)
		plan->why = "every row of C has one thread; each takes several rows that keep the same k";
	else
		plan->why = "every row of C has one thread, which accumulates it in registers";
}

/* patc's wide register tiles, tried first: 8 rows x 8 columns a thread
 * (half-warps along 128 columns, two row sets a warp), then 8 x 4.  See
 * ptx_plan. */
enum { WIDE_COPIES = 24 }; /* cp.async a thread per stage, at most (their addresses take registers) */
static const PtxSchedule wide_tiles[] = {{16, 8, 8, 8, 1, 1, 0, 0, 0, 0, 0}, {32, 4, 4, 8, 1, 1, 0, 0, 0, 0, 0}};

/* The cp.async copies a thread issues per stage (staged plans). */
static int64_t stage_copies(const LowerKernel *k, const PtxPlan *plan)
{
	const int64_t cols = (int64_t)plan->s.bx * plan->s.v, threads = (int64_t)plan->s.bx * plan->s.by;
	int64_t pieces = plan->stage_u * plan->stage_p * (k->shape.layout == PAT_LAYOUT_NK ? cols : cols / 4);
	if (plan->wstage)
		pieces += (int64_t)plan->s.by * plan->s.r * plan->stage_u * plan->stage_p / 4;
	return (pieces + threads - 1) / threads;
}

void ptx_plan(const LowerKernel *k, const PtxSchedule *s, PtxPlan *plan)
{
	memset(plan, 0, sizeof *plan);
	if (ptx_tc_plan(k, s, plan))
		return;
	if (s && s->bx) {
		plan_cuda(k, s, false, plan);
		return;
	}
	PtxSchedule d = ptx_default_schedule;
	if (s && s->stage < 0)
		d.stage = 0; /* patc's choice, but no staging */
	d.wsum = s ? s->wsum : 0;
	const int cap = s && s->r > 0 ? s->r : PTX_MAX_R; /* patc's choice, at most r rows a thread */
	if (d.r > cap)
		d.r = cap;
	/* Where X is staged, a thread's loads per FMA set the pace: each k
	 * costs a 16-byte shared load per 4 columns and a (warp-uniform)
	 * weight per row, for r v FMAs, and at 4 x 4 the shared loads alone
	 * take as long as the FMAs (a multiprocessor reads 128 bytes of
	 * shared memory a cycle against 128 FMAs).  So a wide tile where it
	 * applies whole (every row of it in the group, X staged) and the
	 * grid still fills the GPU without splitting k; else the default,
	 * adapted to the grid below. */
	/* why the last wide tile tried was not taken: 0 it does not apply (X
	 * not staged, or the group's rows not in 8s), 1 the grid would not
	 * fill the GPU, 2 a thread would copy too much of a stage */
	int why = 0;
	static const char *const wide_why[3][3] = {
		{"8 x 8 a thread: X is staged and the grid fills the GPU, so the shared loads of X per FMA are halved"},
		{"8 x 4 a thread: X is staged and the grid fills the GPU",
		 "8 x 4 a thread: X is staged and the grid fills the GPU (with 8 x 8 it would not)",
		 "8 x 4 a thread: X is staged and the grid fills the GPU (with 8 x 8 a thread would copy too much of a "
		 "stage)"},
		{NULL, "at most 4 rows a thread: with 8 the grid would not fill the GPU",
		 "at most 4 rows a thread: with 8 each thread would copy too much of a stage"},
	};
	for (size_t i = 0; d.stage && i < sizeof wide_tiles / sizeof *wide_tiles; i++) {
		PtxSchedule w = wide_tiles[i];
		if (w.r > cap)
			continue;
		w.wsum = d.wsum;
		plan_cuda(k, &w, true, plan);
		if (plan->s.bx * plan->s.by % 32) { /* whole warps: along the columns if the row sets do not pair */
			w.bx = 32;
			plan_cuda(k, &w, true, plan);
		}
		const int before = why;
		if (!rows_share_k(k->ir, plan->group) || k->ir->loops[plan->group].nnz % w.r || plan->s.v != w.v)
			why = 0;
		else if (plan->nsplit > 1 || plan->s.r != w.r || plan_threads(plan, k->shape.N) < SPLIT_BELOW)
			why = 1; /* (split, the walk is not staged; fewer rows: the grid was too small) */
		else if (!plan->stage)
			why = 0;
		else if (stage_copies(k, plan) > WIDE_COPIES)
			why = 2;
		else {
			plan->tile_why = wide_why[i][i ? before : 0];
			return;
		}
	}
	plan_cuda(k, &d, true, plan);
	plan->tile_why = wide_why[2][why];
}

int ptx_smem_limit(const char *sm)
{
	/* the CUDA C Programming Guide's table of compute capabilities: the
	 * shared memory a block may take (opt-in) */
	return !strcmp(sm, "sm_90") ? 227 << 10 : !strcmp(sm, "sm_80") ? 163 << 10 : 99 << 10;
}

void ptx_plan_target(const LowerKernel *k, const PtxSchedule *s, const char *sm, PtxPlan *plan)
{
	const bool hopper = !strcmp(sm, "sm_90");
	PtxSchedule t = s ? *s : (PtxSchedule){0};
	if (!hopper)
		t.wg = 0;
	const int limit = ptx_smem_limit(sm);
	if (t.smem > limit || (!t.smem && (t.tcs > 0 || t.tcw > 0)))
		t.smem = limit;
	ptx_plan(k, &t, plan);
	/* (a thread's 4 adjacent columns or mvec rows on CUDA cores, a lane's 2 columns on the tensor cores
	 * but under transposed wgmma, whose lanes hold single columns) */
	plan->vred = hopper && plan->atomic &&
	             (plan->tc ? k->shape.layout == PAT_LAYOUT_KN && ptx_n_multiple(k, 2) && !plan->tc_wgt : plan->xvec || plan->mvec);
}

int64_t ptx_grid_cols(const PtxPlan *plan)
{
	return plan->tc ? (int64_t)plan->tc_cols * PTX_TC_COLS : (int64_t)plan->s.bx * plan->s.v;
}

void ptx_grid(const PtxPlan *plan, int64_t n, unsigned grid[3], unsigned block[3])
{
	const PtxSchedule *s = &plan->s;
	if (plan->tc) { /* a warp per tc_wm 16-row chunks and PTX_TC_COLS columns */
		const int64_t cols = ptx_grid_cols(plan);
		grid[0] = (unsigned)(plan->nsets / plan->tc_rows);
		grid[1] = (unsigned)((n + cols - 1) / cols);
		grid[2] = (unsigned)plan->nsplit; /* split-K's parts */
		block[0] = 32, block[1] = (unsigned)s->by, block[2] = 1;
		return;
	}
	int64_t cols = ptx_grid_cols(plan);
	grid[0] = (unsigned)((plan->nsets + s->by - 1) / s->by);
	grid[1] = (unsigned)((n + cols - 1) / cols);
	grid[2] = (unsigned)plan->nsplit;
	block[0] = (unsigned)s->bx, block[1] = (unsigned)s->by, block[2] = 1;
}

bool ptx_grid_fits(const PtxPlan *plan, int64_t n, char err[PTX_ERR_MAX])
{
	const int64_t cols = ptx_grid_cols(plan);
	const int64_t y = (n + cols - 1) / cols;
	const int64_t x = plan->tc ? plan->nsets / plan->tc_rows : (plan->nsets + plan->s.by - 1) / plan->s.by;
	if (y > 65535) {
		snprintf(err, PTX_ERR_MAX, "N = %lld tokens make %lld blocks of %lld columns, past the 65535 of CUDA's grid "
		         "(at most %lld tokens a launch: split them)",
		         (long long)n, (long long)y, (long long)cols, 65535LL * cols);
		return false;
	}
	if (x > 2147483647LL) {
		snprintf(err, PTX_ERR_MAX, "%lld row blocks, past the 2^31 - 1 of CUDA's grid", (long long)x);
		return false;
	}
	if (plan->nsplit > 65535) {
		snprintf(err, PTX_ERR_MAX, "the walk along k split in %lld parts, past the 65535 of CUDA's grid",
		         (long long)plan->nsplit);
		return false;
	}
	return true;
}

/* ---- what the blocks move (ptx_traffic) ---- */

bool ptx_traffic(const LowerKernel *k, const PtxPlan *plan, PtxTraffic *t)
{
	memset(t, 0, sizeof *t);
	const Pir *ir = k->ir;
	if (!plan->stage)
		return false;
	PirMetrics pm; /* its values: the stored ones, padding included */
	pir_metrics(ir, &pm);
	t->macs = (double)pm.values * (double)k->shape.N;
	if (plan->tc)
		return ptx_tc_traffic(k, plan, t);
	unsigned grid[3], block[3];
	ptx_grid(plan, k->shape.N, grid, block);
	/* the X rows a block copies: whole stages of its part of the staged
	 * loop (the last stage of a part runs past its end, copying real rows) */
	const int64_t len = ir->loops[plan->outer].nnz, U = plan->stage_u;
	const int64_t chunk = plan->split == plan->outer ? plan->split_chunk : len;
	int64_t rows = 0;
	for (int64_t lo = 0; lo < len; lo += chunk) {
		const int64_t part = len - lo < chunk ? len - lo : chunk;
		rows += (part + U - 1) / U * U * plan->stage_p;
	}
	const double blocks = (double)grid[0] * grid[1];
	t->rows = (int64_t)plan->s.by * plan->s.r;
	t->cols = (int64_t)plan->s.bx * plan->s.v;
	t->x = blocks * (double)rows * (double)t->cols * 4;
	/* each block's rows' weights of those rows, staged or read by its threads */
	const double w = blocks * (double)rows * (double)t->rows * 4;
	if (plan->wstage)
		t->w_staged = w;
	else
		t->w_direct = w;
	int64_t adders = plan->nsplit;
	for (int i = 0; i < plan->nspread; i++)
		if (i != plan->group && pir_loop_has_axis(&ir->loops[i], PIR_AXIS_K))
			adders *= ir->loops[i].nnz;
	t->c = ptx_c_traffic(k, plan, adders);
	return true;
}
