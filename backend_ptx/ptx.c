/* SPDX-License-Identifier: MIT */
/* ptx.c - the NVPTX backend; see ptx.h. */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

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

const PtxSchedule ptx_default_schedule = {32, 4, 4, 4, 1, 1, 0, 0, 0, 0, 0};

PtxSchedule ptx_schedule_of(const KernelSchedule *ks)
{
	return (PtxSchedule){ks->bx, ks->by, ks->v, ks->r, ks->ksplit, ks->stage, ks->wg, ks->wsum, ks->tcs, ks->tcw, 0};
}

enum { PTX_MAX_R = 16, PTX_MAX_V = 8 };

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
 * row r of row set y at r by + y, each row padded by WSTAGE_PAD floats so
 * that the rows the two halves of a warp read lie in different banks;
 * where they read them along the rows (wr: the group is the innermost
 * loop, tile_v), point j of the stage holds the block's r by rows, which
 * are adjacent in storage, at j r by. */
enum { STAGE_ROWS = 16, STAGE_BYTES = 48 << 10, WSTAGE_PAD = 4 };

/* The shared memory of a stage's weights (wstage), both buffers (for wr,
 * whose rows need no padding, a bound). */
static int64_t wstage_bytes(const PtxPlan *plan)
{
	return 2 * (int64_t)plan->s.by * plan->s.r * (plan->stage_u * plan->stage_p + WSTAGE_PAD) * 4;
}

/* Floats per row of a stage: in layout nk padded by 4, so that the copies
 * down its columns fall in distinct banks (not where the emulator is told
 * to plant bank conflicts: PATC_EMU_INJECT=nopad). */
static int64_t stage_width(const LowerKernel *k, const PtxPlan *plan)
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
	return 2 * u * p * stage_width(k, plan) * 4 <= STAGE_BYTES;
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
	if (plan->wstage && 2 * u * p * stage_width(k, plan) * 4 + wstage_bytes(plan) > STAGE_BYTES)
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
	plan->xvec = k->shape.layout == PAT_LAYOUT_KN && k->shape.N % 4 == 0 && ps->v % 4 == 0;
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
	plan->wsum = ps->wsum > 0 && plan->split >= 0 && !spread_k && plan->nsplit <= PTX_WSUM_PARTS &&
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
	             (plan->tc ? k->shape.layout == PAT_LAYOUT_KN && k->shape.N % 2 == 0 && !plan->tc_wgt : plan->xvec || plan->mvec);
}

void ptx_grid(const PtxPlan *plan, int64_t n, unsigned grid[3], unsigned block[3])
{
	const PtxSchedule *s = &plan->s;
	if (plan->tc) { /* a warp per tc_wm 16-row chunks and PTX_TC_COLS columns */
		const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
		grid[0] = (unsigned)(plan->nsets / plan->tc_rows);
		grid[1] = (unsigned)((n + cols - 1) / cols);
		grid[2] = (unsigned)plan->nsplit; /* split-K's parts */
		block[0] = 32, block[1] = (unsigned)s->by, block[2] = 1;
		return;
	}
	int64_t cols = (int64_t)s->bx * s->v;
	grid[0] = (unsigned)((plan->nsets + s->by - 1) / s->by);
	grid[1] = (unsigned)((n + cols - 1) / cols);
	grid[2] = (unsigned)plan->nsplit;
	block[0] = (unsigned)s->bx, block[1] = (unsigned)s->by, block[2] = 1;
}

bool ptx_grid_fits(const PtxPlan *plan, int64_t n, char err[PTX_ERR_MAX])
{
	const int64_t cols = plan->tc ? (int64_t)plan->tc_cols * PTX_TC_COLS : (int64_t)plan->s.bx * plan->s.v;
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
	bool cols4;                             /* a thread's columns in groups of 4 (xvec, staged) */
	int inner;                              /* wk: the loop walked 4 digits at a time */
	int u;                                  /* wk: which of the 4 digits */
	LLVMValueRef wv[PTX_MAX_R];             /* wk: the 4 weights of each row */
	LLVMValueRef zlo, zhi;                  /* the split loop's digits for this block */
	/* staging */
	LLVMValueRef xs;                        /* the shared buffers [2][rows][bx v] */
	LLVMValueRef ws;                        /* wstage: the weights' [2][r by][wrow], row r by + ty
	                                         * (wr: [2][u p][r by]) */
	int64_t wrow;                           /* wstage: floats a row of ws (its points, padded) */
	LLVMValueRef ty, glo;                   /* the thread's row set in the block, its first group digit */
	LLVMValueRef buf, j;                    /* the buffer computed on (i64), point counter (alloca) */
	bool ragged;                            /* the last stage may run past the loop's end */
	LLVMValueRef scol[PTX_MAX_V];           /* offsets of the thread's groups in a row */
	LLVMValueRef tid, base;                 /* thread in the block, the block's first column */
	LLVMValueRef fma;
	LLVMTypeRef fma_ty, v4;
} GpuArg;

static LLVMValueRef load_f32(LowerCtx *c, LLVMValueRef base, LLVMValueRef at, const char *name)
{
	LLVMValueRef l = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, base, &at, 1, ""), name);
	ptx_align(c, l, 4);
	return l;
}

/* Four adjacent floats at base[at] (at a multiple of 4). */
static LLVMValueRef load_v4(LowerCtx *c, const GpuArg *a, LLVMValueRef base, LLVMValueRef at, const char *name)
{
	LLVMValueRef l = LLVMBuildLoad2(c->b, a->v4, LLVMBuildGEP2(c->b, c->f32, base, &at, 1, ""), name);
	ptx_align(c, l, 16);
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
	const PtxPlan *plan = a->plan;
	/* staged: the point's row jrow of the stage, row `rows` of the buffers */
	LLVMValueRef jrow = plan->stage ? LLVMBuildLoad2(c->b, c->i64, a->j, "j") : NULL, rows = NULL;
	if (plan->stage)
		rows = ll_add(c, ll_mul(c, a->buf, plan->stage_u * plan->stage_p), jrow);
	LLVMValueRef w[PTX_MAX_R];
	for (int r = 0; r < a->r; r++) { /* weights: in bounds (padding holds zeros) */
		if (a->wk)
			w[r] = lane(c, a->wv[r], a->u);
		else if (a->wr && r % 4 == 0) {
			const int64_t br = (int64_t)plan->s.by * a->r;
			LLVMValueRef v =
				plan->wstage
					? load_v4(c, a, a->ws,
				                  LLVMBuildNSWAdd(c->b, ll_mul(c, rows, br),
				                                  ll_add(c, ll_mul(c, a->ty, a->r), ll_i64(c, r)),
				                                  ""),
				                  "ws4")
					: load_v4(c, a, c->values, ll_add(c, p->row, ll_i64(c, r)), "w4");
			for (int e = 0; e < 4; e++)
				w[r + e] = lane(c, v, e);
		} else if (!a->wr)
			w[r] = load_f32(c, c->values, ll_add(c, p->row, ll_i64(c, r * a->row_step)), "w");
	}
	/* a padding column of W (only where k is padded): no X row */
	bool kpad = k->ir->ext[PIR_AXIS_K] > k->shape.K && !plan->stage; /* staged: the loader clamps */
	LLVMBasicBlockRef body = NULL, skip = NULL;
	if (kpad) {
		body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "point");
		skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "pad");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->k, ll_i64(c, k->shape.K), ""), body, skip);
		LLVMPositionBuilderAtEnd(c->b, body);
	}
	LLVMValueRef x[PTX_MAX_V];
	if (plan->stage) { /* X from the stage: row j of the buffer */
		LLVMBuildStore(c->b, ll_add(c, jrow, ll_i64(c, 1)), a->j);
		LLVMValueRef rowat = LLVMBuildNSWMul(c->b, rows, ll_i64(c, stage_width(k, plan)), "");
		for (int g = 0; g < a->v; g += 4) {
			LLVMValueRef at = ll_add(c, rowat, a->scol[g]);
			LLVMValueRef v = load_v4(c, a, a->xs, at, "xs4");
			for (int e = 0; e < 4; e++)
				x[g + e] = lane(c, v, e);
		}
	}
	for (int j = 0; j < a->v && !plan->stage; j++) {
		if (a->xvec) {
			if (j % 4 == 0) {
				LLVMValueRef at = ll_add(c, ll_mul(c, p->k, k->shape.N), a->col[j]);
				LLVMValueRef v = load_v4(c, a, c->X, at, "x4");
				for (int e = 0; e < 4; e++)
					x[j + e] = lane(c, v, e);
			}
			continue;
		}
		LLVMValueRef at = k->shape.layout == PAT_LAYOUT_KN
		                      ? ll_add(c, ll_mul(c, p->k, k->shape.N), a->col[j])
		                      : ll_add(c, ll_mul(c, a->col[j], k->shape.K), p->k);
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

/* wk: the point before the innermost loop; walks it 4 digits at a time,
 * the 4 weights of each of the thread's rows one 16-byte load: where the
 * weights are staged, from the stage in shared memory (copied a stage
 * ahead with X, so that no load from global memory waits in the loop),
 * else from global memory. */
static void gpu_chunk(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const PtxPlan *plan = a->plan;
	const PirLoop *l = &c->k->ir->loops[a->inner];
	LowerLoop loop;
	bool split = plan->split == a->inner;
	LLVMValueRef from = split ? ll_udiv(c, a->zlo, 4) : ll_i64(c, 0);
	LLVMValueRef to = split ? ll_udiv(c, a->zhi, 4) : ll_i64(c, l->nnz / 4);
	LLVMValueRef d4 = lower_loop_begin(c, &loop, from, to, "d4");
	LLVMValueRef d = ll_mul(c, d4, 4);
	if (plan->wstage) { /* row r of the thread: row r by + ty of the buffer, its points from j on */
		LLVMValueRef j = LLVMBuildLoad2(c->b, c->i64, a->j, "j");
		LLVMValueRef rows = LLVMBuildNSWMul(c->b, a->buf, ll_i64(c, (int64_t)plan->s.by * a->r), "");
		for (int r = 0; r < a->r; r++) {
			LLVMValueRef slot =
			        ll_add(c, rows, ll_add(c, a->ty, ll_i64(c, r * plan->s.by)));
			LLVMValueRef at = ll_add(c, ll_mul(c, slot, a->wrow), j);
			a->wv[r] = load_v4(c, a, a->ws, at, "ws4");
		}
	} else {
		LLVMValueRef row = ll_add(c, ll_mul(c, p->row, l->nnz), d);
		for (int r = 0; r < a->r; r++)
			a->wv[r] = load_v4(c, a, c->values, ll_add(c, row, ll_i64(c, r * a->row_step)), "w4");
	}
	for (a->u = 0; a->u < 4; a->u++) {
		c->lo[a->inner] = ll_add(c, d, ll_i64(c, a->u));
		c->hi[a->inner] = ll_add(c, c->lo[a->inner], ll_i64(c, 1));
		lower_nest(c, a->inner, a->inner + 1, p, gpu_point, a);
	}
	c->lo[a->inner] = c->hi[a->inner] = NULL;
	lower_loop_end(c, &loop);
}

/* ---- staging X in shared memory ---- */

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
 * longer than a multiple of the 32 banks (stage_width), one word of each
 * bank (down one column the 32 would fall in 8 banks). */
static void x_piece(LowerCtx *c, GpuArg *a, const StageCopy *sc, LLVMValueRef q, int64_t i)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	const bool nk = k->shape.layout == PAT_LAYOUT_NK;
	const int64_t rows = plan->stage_u * plan->stage_p, cols = (int64_t)plan->s.bx * a->v;
	const int64_t pieces = nk ? cols : cols / 4, threads = (int64_t)plan->s.bx * plan->s.by;
	const int64_t width = stage_width(k, plan);
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
	                         ll_i64(c, k->shape.N - (nk ? 1 : 4)));
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
		                      : ll_add(c, ll_mul(c, kin, k->shape.N), col);
		LLVMValueRef at0 = nk ? k0 : ll_mul(c, k0, k->shape.N);
		src = LLVMBuildGEP2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, sc->x1, &at0, 1, "xrow"), &rel, 1, "");
		if (jj_add && linear) {
			bool unused;
			LLVMValueRef add = stage_k_inner(c, a, ll_i64(c, jj_add), &unused);
			if (!nk)
				add = ll_mul(c, add, k->shape.N);
			src = LLVMBuildGEP2(c->b, c->f32, src, &add, 1, "");
		}
	} else {
		LLVMValueRef kk = stage_k(c, a, sc->p, d, ll_add(c, jj, ll_i64(c, jj_add)));
		if (k->ir->ext[PIR_AXIS_K] > k->shape.K) /* padding (w = 0): any real row */
			kk = ptx_min(c, kk, ll_i64(c, k->shape.K - 1));
		LLVMValueRef src_at = nk ? ll_add(c, ll_mul(c, col, k->shape.K), kk)
		                         : ll_add(c, ll_mul(c, kk, k->shape.N), col);
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
 * 8 slots, which rows WSTAGE_PAD floats longer than a multiple of 32 put in
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
static void stage_issue(LowerCtx *c, GpuArg *a, const LowerPoint *p, LLVMValueRef s, LLVMValueRef buf,
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

/* Waits for all but the last `wait` groups of the thread's copies (none:
 * wait < 0), then for the block. */
static void stage_sync(LowerCtx *c, int wait)
{
	if (wait >= 0)
		ptx_cp_wait(c, wait);
	ptx_barrier(c);
}

/* The point before the first walked loop: its iterations in stages of
 * stage_u, the next stage copied while the current one is computed. */
static void gpu_stages(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const PtxPlan *plan = a->plan;
	const Pir *ir = c->k->ir;
	const int outer = plan->outer, n = ir->nloops;
	const int64_t U = plan->stage_u, P = plan->stage_p;
	LLVMValueRef olo = c->lo[outer] ? c->lo[outer] : ll_i64(c, 0);
	LLVMValueRef ohi = c->hi[outer] ? c->hi[outer] : ll_i64(c, ir->loops[outer].nnz);
	/* whether the last stage can run past the loop's end (a split loop's
	 * part, or stages that do not divide it) */
	a->ragged = c->lo[outer] || ir->loops[outer].nnz % U;
	LLVMValueRef nst = LLVMBuildUDiv(
		c->b, ll_add(c, LLVMBuildNSWSub(c->b, ohi, olo, ""), ll_i64(c, U - 1)), ll_i64(c, U), "nst");
	stage_issue(c, a, p, ll_i64(c, 0), ll_i64(c, 0), olo, ohi);
	ptx_cp_commit(c);
	LowerLoop sl;
	LLVMValueRef s = lower_loop_begin(c, &sl, ll_i64(c, 0), nst, "stage");
	a->buf = LLVMBuildAnd(c->b, s, ll_i64(c, 1), "buf");
	LLVMValueRef s1 = ll_add(c, s, ll_i64(c, 1));
	LLVMBasicBlockRef pre = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "prefetch");
	LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "compute");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, s1, nst, ""), pre, go);
	LLVMPositionBuilderAtEnd(c->b, pre);
	stage_issue(c, a, p, s1, LLVMBuildXor(c->b, a->buf, ll_i64(c, 1), ""), olo, ohi);
	LLVMBuildBr(c->b, go);
	LLVMPositionBuilderAtEnd(c->b, go);
	ptx_cp_commit(c);
	stage_sync(c, 1); /* stage s has landed, for every thread */
	for (int64_t u = 0; u < U; u++) {
		LLVMValueRef d = LLVMBuildNSWAdd(
			c->b, olo, ll_add(c, ll_mul(c, s, U), ll_i64(c, u)), "");
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "iter");
		LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "itern");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, d, ohi, ""), body, next);
		LLVMPositionBuilderAtEnd(c->b, body);
		LLVMBuildStore(c->b, ll_i64(c, u * P), a->j);
		c->lo[outer] = d;
		c->hi[outer] = ll_add(c, d, ll_i64(c, 1));
		if (a->wk)
			lower_nest(c, outer, n - 1, p, gpu_chunk, a);
		else
			lower_nest(c, outer, n, p, gpu_point, a);
		LLVMBuildBr(c->b, next);
		LLVMPositionBuilderAtEnd(c->b, next);
	}
	c->lo[outer] = c->hi[outer] = NULL;
	stage_sync(c, -1); /* everyone is done with this buffer */
	lower_loop_end(c, &sl);
}

/* How write_tile writes the thread's tile: to C (stored, or added with
 * atomics where the plan adds), to its part's slice of the workspace
 * (wsum), or to C as the sum of every part's slice, in part order. */
enum { TILE_C, TILE_PART, TILE_SUM };

/* The workspace's slice of part z (i64), which ptx_c_ptr addresses as it does C. */
static LLVMValueRef wsum_part(LowerCtx *c, LLVMValueRef ws, LLVMValueRef z)
{
	LLVMValueRef at = ll_mul(c, z, c->k->shape.M * c->k->shape.N);
	return LLVMBuildGEP2(c->b, c->f32, ws, &at, 1, "part");
}

/* A load or store of the workspace: aligned as C's on the GPU (the slices
 * are whole multiples of the vector), byte-aligned on the host, where the
 * emulator's checks of shared memory must not take it for a buffer of
 * the block. */
static LLVMValueRef wsum_access(LowerCtx *c, LLVMValueRef inst, unsigned bytes)
{
	const PtxPlan *plan = c->backend;
	LLVMSetAlignment(inst, plan->emulate ? 1 : bytes);
	return inst;
}

/* v[0..n) as one value: the float itself, or a vector of n floats. */
static LLVMValueRef pack(LowerCtx *c, const LLVMValueRef *v, int n)
{
	if (n == 1)
		return v[0];
	LLVMValueRef vv = LLVMGetUndef(LLVMVectorType(c->f32, (unsigned)n));
	for (int e = 0; e < n; e++)
		vv = LLVMBuildInsertElement(c->b, vv, v[e], LLVMConstInt(c->i32, (unsigned)e, 0), "");
	return vv;
}

/* Writes the thread's r x v tile (TILE_*): one owner stores, shared rows
 * add atomically; 4 adjacent columns (xvec) or mvec rows of C as one
 * vector where stored or added by vector red.  ws: the workspace (not
 * TILE_C). */
static void write_tile(LowerCtx *c, GpuArg *a, LLVMValueRef m0, LLVMValueRef *valid, LLVMValueRef *ncol, int how,
                       LLVMValueRef ws)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	const bool vec = (plan->xvec || plan->mvec) && (!plan->atomic || plan->vred);
	const int rstep = vec && plan->mvec ? plan->mvec : 1, jstep = vec && plan->xvec ? 4 : 1, nvec = rstep * jstep;
	LLVMTypeRef vty = nvec > 1 ? LLVMVectorType(c->f32, (unsigned)nvec) : c->f32;
	LLVMValueRef C = c->C, part = how == TILE_PART ? wsum_part(c, ws, ptx_sreg(c, "ctaid.z")) : NULL;
	for (int r = 0; r < a->r; r += rstep) {
		LLVMValueRef m = LLVMBuildNSWAdd(c->b, m0, ll_i64(c, r * a->m_step), "m");
		LLVMValueRef mok = LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, k->shape.M), "");
		for (int j = 0; j < a->v; j += jstep) {
			LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "store");
			LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
			LLVMBuildCondBr(c->b, LLVMBuildAnd(c->b, mok, valid[j], ""), st, next);
			LLVMPositionBuilderAtEnd(c->b, st);
			LLVMValueRef v[4] = {NULL};
			if (how == TILE_SUM) { /* part 0's slice, then each next one added */
				LLVMValueRef sum = NULL;
				for (int64_t z = 0; z < plan->nsplit; z++) {
					c->C = wsum_part(c, ws, ll_i64(c, z));
					LLVMValueRef l = wsum_access(c, LLVMBuildLoad2(c->b, vty, ptx_c_ptr(c, m, ncol[j]), "part"),
					                             4 * (unsigned)nvec);
					LLVMSetVolatile(l, 1); /* (from L2: other blocks wrote it) */
					sum = sum ? LLVMBuildFAdd(c->b, sum, l, "") : l;
				}
				c->C = C;
				for (int e = 0; e < nvec; e++)
					v[e] = nvec > 1 ? lane(c, sum, e) : sum;
			} else {
				for (int e = 0; e < nvec; e++)
					v[e] = LLVMBuildLoad2(c->b, c->f32, a->acc[r + e / jstep][j + e / rstep], "");
			}
			if (how == TILE_PART) {
				c->C = part;
				wsum_access(c, LLVMBuildStore(c->b, pack(c, v, nvec), ptx_c_ptr(c, m, ncol[j])), 4 * (unsigned)nvec);
				c->C = C;
			} else if (!vec) {
				ptx_c_put(c, ptx_c_ptr(c, m, ncol[j]), v[0]);
			} else if (plan->atomic) {
				ptx_c_add(c, ptx_c_ptr(c, m, ncol[j]), v, nvec);
			} else {
				ptx_align(c, LLVMBuildStore(c->b, pack(c, v, nvec), ptx_c_ptr(c, m, ncol[j])), 4 * (unsigned)nvec);
			}
			LLVMBuildBr(c->b, next);
			LLVMPositionBuilderAtEnd(c->b, next);
		}
	}
}

/* fence.acq_rel.gpu: this thread's writes before it are seen by a thread
 * that reads its later atomic and then fences (release, acquire); on the
 * host, where threads run one at a time, nothing. */
static void gpu_fence(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	if (plan->emulate)
		return;
	static const char text[] = "fence.acq_rel.gpu;", cons[] = "~{memory}";
	LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), NULL, 0, 0);
	LLVMValueRef f = LLVMGetInlineAsm(ty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(c->b, ty, f, NULL, 0, "");
}

/* A module-level array of the kernel (global memory, zero at load): n
 * elements of ty. */
static LLVMValueRef module_array(LowerCtx *c, LLVMTypeRef ty, int64_t n, const char *suffix)
{
	const PtxPlan *plan = c->backend;
	LLVMTypeRef aty = LLVMArrayType2(ty, (uint64_t)n);
	char gname[PIR_NAME_MAX + 64];
	snprintf(gname, sizeof gname, "%s.%s", LLVMGetValueName(c->fn), suffix);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, aty, gname, plan->emulate ? 0 : 1);
	LLVMSetInitializer(g, LLVMConstNull(aty));
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetAlignment(g, 16);
	return plan->emulate ? g : LLVMBuildAddrSpaceCast(c->b, g, c->ptr, "");
}

/* plan->wsum: the thread's tile to its part's slice of the workspace;
 * then, each thread of each part adding one to its own counter (its
 * place in the grid but for blockIdx.z: the same elements in every
 * part), the part that finds the others done (after a fence each side,
 * so that their slices are seen) adds the slices in part order, stores C
 * and resets the counter for the next launch. */
static void wsum_tile(LowerCtx *c, GpuArg *a, LLVMValueRef m0, LLVMValueRef *valid, LLVMValueRef *ncol)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	unsigned grid[3], block[3];
	ptx_grid(plan, k->shape.N, grid, block);
	LLVMValueRef ws = module_array(c, c->f32, plan->nsplit * k->shape.M * k->shape.N, "wsum");
	LLVMValueRef cnt = module_array(c, c->i32, (int64_t)grid[0] * grid[1] * block[0] * block[1], "wcount");
	write_tile(c, a, m0, valid, ncol, TILE_PART, ws);
	gpu_fence(c);
	LLVMValueRef blk = LLVMBuildNSWAdd(c->b, ll_mul(c, ptx_sreg(c, "ctaid.y"), grid[0]),
	                                   ptx_sreg(c, "ctaid.x"), "");
	LLVMValueRef thr = LLVMBuildNSWAdd(c->b, ll_mul(c, ptx_sreg(c, "tid.y"), block[0]),
	                                   ptx_sreg(c, "tid.x"), "");
	LLVMValueRef slot = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, blk, ll_i64(c, (int64_t)block[0] * block[1]), ""),
	                                    thr, "slot");
	LLVMValueRef at = LLVMBuildGEP2(c->b, c->i32, cnt, &slot, 1, "");
	LLVMValueRef before = LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpAdd, at, LLVMConstInt(c->i32, 1, 0),
	                                         LLVMAtomicOrderingMonotonic, 0);
	LLVMBasicBlockRef last = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "last");
	LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "summed");
	LLVMValueRef others = LLVMConstInt(c->i32, (unsigned long long)(plan->nsplit - 1), 0);
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, before, others, "last"), last, out);
	LLVMPositionBuilderAtEnd(c->b, last);
	gpu_fence(c);
	LLVMSetAlignment(LLVMBuildStore(c->b, LLVMConstInt(c->i32, 0, 0), at), 4);
	write_tile(c, a, m0, valid, ncol, TILE_SUM, ws);
	LLVMBuildBr(c->b, out);
	LLVMPositionBuilderAtEnd(c->b, out);
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
	a.cols4 = plan->xvec || plan->stage;
	a.wk = plan->wk;
	a.wr = plan->wr;
	a.inner = n - 1;

	LLVMValueRef tx = ptx_sreg(c, "tid.x"), ty = ptx_sreg(c, "tid.y");
	LLVMValueRef cx = ptx_sreg(c, "ctaid.x"), cy = ptx_sreg(c, "ctaid.y");
	LLVMValueRef set = LLVMBuildNSWAdd(c->b, ll_mul(c, cx, plan->s.by), ty, "set");
	LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, set, ll_i64(c, plan->nsets), ""), work, done);
	LLVMPositionBuilderAtEnd(c->b, work);

	/* the set's digits, innermost first: the group's chunk, then the
	 * spread loops from the last */
	LLVMValueRef rest = set;
	if (plan->group >= 0) {
		const PirLoop *g = &ir->loops[plan->group];
		int64_t chunks = g->nnz / a.r;
		LLVMValueRef chunk = ll_urem(c, rest, chunks);
		rest = ll_udiv(c, rest, chunks);
		c->lo[plan->group] = LLVMBuildNSWMul(c->b, chunk, ll_i64(c, a.r), "glo");
		c->hi[plan->group] = LLVMBuildNSWAdd(c->b, c->lo[plan->group], ll_i64(c, 1), "ghi");
		a.row_step = c->nest->stride[plan->group];
		a.m_step = g->comp[0].stride;
	}
	for (int i = plan->nspread - 1; i >= 0; i--) {
		if (i == plan->group)
			continue;
		int64_t nnz = ir->loops[i].nnz;
		c->lo[i] = i ? ll_urem(c, rest, nnz) : rest;
		c->hi[i] = ll_add(c, c->lo[i], ll_i64(c, 1));
		if (i)
			rest = ll_udiv(c, rest, nnz);
	}

	if (plan->split >= 0) { /* this block's part of the split loop */
		LLVMValueRef lo = LLVMBuildNSWMul(c->b, ptx_sreg(c, "ctaid.z"), ll_i64(c, plan->split_chunk), "zlo");
		LLVMValueRef hi = ll_add(c, lo, ll_i64(c, plan->split_chunk));
		LLVMValueRef nnz = ll_i64(c, ir->loops[plan->split].nnz);
		hi = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, hi, nnz, ""), hi, nnz, "zhi");
		a.zlo = lo, a.zhi = hi;
		if (plan->split != a.inner || !a.wk)
			c->lo[plan->split] = lo, c->hi[plan->split] = hi;
	}

	/* the thread's columns (clamped into range for the loads): v apart
	 * by bx, or groups of 4 adjacent ones, 4 bx apart */
	LLVMValueRef base =
	        ll_add(c, c->n0, LLVMBuildNSWMul(c->b, cy, ll_i64(c, (int64_t)plan->s.bx * a.v), ""));
	LLVMValueRef first = ll_add(c, base, a.cols4 ? ll_mul(c, tx, 4) : tx);
	LLVMValueRef valid[PTX_MAX_V], ncol[PTX_MAX_V];
	for (int j = 0; j < a.v; j++) {
		int64_t off = a.cols4 ? (int64_t)(j / 4) * 4 * plan->s.bx + j % 4 : (int64_t)j * plan->s.bx;
		ncol[j] = LLVMBuildNSWAdd(c->b, first, ll_i64(c, off), "n");
		valid[j] = LLVMBuildICmp(c->b, LLVMIntSLT, ncol[j], c->n1, "");
		/* xvec: a group is whole or out (N and n0 multiples of 4); an
		 * out group reads the last 4 columns */
		LLVMValueRef last = LLVMBuildNSWSub(c->b, c->n1, ll_i64(c, a.xvec ? 4 - j % 4 : 1), "");
		a.col[j] = LLVMBuildSelect(c->b, valid[j], ncol[j], last, "");
	}
	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	for (int r = 0; r < a.r; r++)
		for (int j = 0; j < a.v; j++) {
			a.acc[r][j] = lower_entry_alloca(c, c->f32, "acc");
			LLVMBuildStore(c->b, zero, a.acc[r][j]);
		}
	a.mrow = lower_entry_alloca(c, c->i64, "mrow");
	LLVMBuildStore(c->b, ll_i64(c, k->shape.M), a.mrow);

	LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
	if (plan->stage) {
		int64_t words = 2 * plan->stage_u * plan->stage_p * stage_width(k, plan);
		LLVMTypeRef aty = LLVMArrayType2(c->f32, (uint64_t)words);
		char gname[PIR_NAME_MAX + 64];
		snprintf(gname, sizeof gname, "%s.xs", LLVMGetValueName(c->fn));
		a.xs = LLVMAddGlobalInAddressSpace(c->mod, aty, gname, plan->emulate ? 0 : 3);
		LLVMSetInitializer(a.xs, plan->emulate ? LLVMConstNull(aty) : LLVMGetUndef(aty));
		LLVMSetLinkage(a.xs, LLVMInternalLinkage);
		LLVMSetAlignment(a.xs, 16);
		a.j = lower_entry_alloca(c, c->i64, "j");
		a.tid = LLVMBuildNSWAdd(c->b, ll_mul(c, ty, plan->s.bx), tx, "tid");
		a.base = base;
		if (plan->wstage) {
			a.wrow = plan->stage_u * plan->stage_p + WSTAGE_PAD;
			aty = LLVMArrayType2(c->f32, (uint64_t)(2 * plan->s.by * a.r * a.wrow));
			snprintf(gname, sizeof gname, "%s.ws", LLVMGetValueName(c->fn));
			a.ws = LLVMAddGlobalInAddressSpace(c->mod, aty, gname, plan->emulate ? 0 : 3);
			LLVMSetInitializer(a.ws, plan->emulate ? LLVMConstNull(aty) : LLVMGetUndef(aty));
			LLVMSetLinkage(a.ws, LLVMInternalLinkage);
			LLVMSetAlignment(a.ws, 16);
			a.ty = ty;
			a.glo = c->lo[plan->group];
		}
		for (int g = 0; g < a.v; g += 4)
			a.scol[g] = LLVMBuildNSWAdd(c->b, ll_i64(c, (int64_t)(g / 4) * 4 * plan->s.bx),
			                            ll_mul(c, tx, 4), "");
		lower_nest(c, 0, plan->outer, &start, gpu_stages, &a);
	} else if (a.wk)
		lower_nest(c, 0, n - 1, &start, gpu_chunk, &a);
	else
		lower_nest(c, 0, n, &start, gpu_point, &a);

	LLVMValueRef m0 = LLVMBuildLoad2(c->b, c->i64, a.mrow, "m0");
	if (plan->wsum)
		wsum_tile(c, &a, m0, valid, ncol);
	else
		write_tile(c, &a, m0, valid, ncol, TILE_C, NULL);
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, done);
}

static void no_prologue(LowerCtx *c) { (void)c; }

LowerHooks ptx_hooks(PtxPlan *plan)
{
	return (LowerHooks){.prologue = no_prologue,
	                    .body = plan->tc ? ptx_tc_body : gpu_body,
	                    .index_space = plan->emulate ? 0 : 1,
	                    .backend = plan};
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
	/* wgmma exists on sm_90a only: a module with a wgmma kernel is for it */
	bool wg = false, vred = false;
	for (int i = 0; i < nk; i++) {
		if (strcmp(sm, "sm_90"))
			ks[i].s.wg = 0;
		ptx_plan_target(&ks[i].k, &ks[i].s, sm, &ks[i].plan);
		wg |= ks[i].plan.tc_wg;
		vred |= ks[i].plan.vred;
	}
	pthread_once(&init_once, init_nvptx);
	const char *triple = "nvptx64-nvidia-cuda";
	LLVMTargetRef target = ll_target(triple, err, PTX_ERR_MAX, "no NVPTX target in this LLVM");
	if (!target)
		return false;
	const char *isa = vred ? "+ptx81" : "+ptx80"; /* PTX_ISA_VERSION_VRED, PTX_ISA_VERSION */
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, wg ? "sm_90a" : sm, isa,
	                                                  LLVMCodeGenLevelAggressive, LLVMRelocDefault,
	                                                  LLVMCodeModelDefault);
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = ll_module(ctx, "patc", tm);
	unsigned readonly = LLVMGetEnumAttributeKindForName("readonly", 8);
	for (int i = 0; i < nk; i++) {
		LowerHooks hooks = ptx_hooks(&ks[i].plan);
		LLVMValueRef fn = lower_kernel(ctx, mod, &ks[i].k, &hooks);
		LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
		const unsigned ro[] = {1, 3, 4}; /* X, values, index */
		for (size_t j = 0; j < sizeof ro / sizeof *ro; j++)
			LLVMAddAttributeAtIndex(fn, ro[j], LLVMCreateEnumAttribute(ctx, readonly, 0));
	}
	bool ok = ll_verify(mod, err, PTX_ERR_MAX, "internal error: invalid kernel module");
	if (ok) {
		LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
		ok = ll_ok(LLVMRunPasses(mod, "default<O3>", tm, po), err, PTX_ERR_MAX, "optimising the kernels");
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
	if (ok)
		ok = ll_emit(tm, mod, LLVMAssemblyFile, &buf, err, PTX_ERR_MAX, "emitting PTX");
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
