/* SPDX-License-Identifier: MIT */
/* tc_plan.c - the tensor-core mapping's plan (ptx_tc_plan: mma.sync,
 * mma.sp or wgmma, staging, the block's warps and buffers, split-K), the
 * stage's sizes the other tc files share (tc_impl.h) and ptx_tc_traffic;
 * see ptx.h. */
#define _POSIX_C_SOURCE 200809L
#include "tc_impl.h"

#include <string.h>

/* A plain dense loop along axis (nest.h), a multiple of 16 long. */
static bool dense_on(const PirLoop *l, PirAxis axis) { return nest_loop_plain(l, axis) && l->len % 16 == 0; }

/* The shared memory a block's buffers may take: the schedule's smem past
 * the static shared memory (dynamic, PtxPlan.smem_dyn), else that. */
static int64_t smem_cap(const PtxSchedule *s) { return s && s->smem > PTX_STATIC_SMEM ? s->smem : PTX_STATIC_SMEM; }

/* The k of one step of a staged walk: 16 tc_ku (mma), 32 (mma.sp), 16
 * tc_wgu (wgmma). */
int64_t tc_step_k(const PtxPlan *plan)
{
	return plan->tc_sp ? 32 : 16 * (plan->tc_wg ? plan->tc_wgu : plan->tc_ku > 1 ? plan->tc_ku : 1);
}

int ptx_tc_step_k(const PtxPlan *plan) { return (int)tc_step_k(plan); }

/* The 8 halves that pad a stage's rows (none where the emulator is told
 * to plant bank conflicts: PATC_EMU_INJECT=nopad). */
static int64_t pad(const PtxPlan *plan) { return plan->emulate && ptx_emu_inject("nopad") ? 0 : 8; }

/* Halves per row of a stage's weights under mma (a row's k of the step,
 * padded by 8 so that the 8 rows an ldmatrix reads fall in distinct
 * banks), and of X in layout nk (likewise). */
int64_t tc_row(const PtxPlan *plan) { return tc_step_k(plan) + pad(plan); }
int64_t tc_nk_row(const PtxPlan *plan) { return tc_row(plan); }

/* Halves per row of a stage's X in layout kn (the block's columns, padded
 * likewise). */
int64_t tc_kn_row(const PtxPlan *plan) { return (int64_t)plan->tc_cols * PTX_TC_COLS + pad(plan); }

/* Halves of one stage: the weights' tc_rows x 16 rows (none on the sparse
 * tensor cores, which read the weights and the metadata from global
 * memory), then X. */
int64_t tc_stage_a(const PtxPlan *plan)
{
	return plan->tc_sp ? 0 : (int64_t)plan->tc_rows * 16 * (plan->tc_wg ? tc_step_k(plan) : tc_row(plan));
}
int64_t tc_stage_halves(const LowerKernel *k, const PtxPlan *plan)
{
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
	if (plan->tc_wg) /* core matrices, unpadded (see a_piece) */
		return tc_stage_a(plan) + tc_step_k(plan) * cols;
	return tc_stage_a(plan) + (k->shape.layout == PAT_LAYOUT_KN ? tc_step_k(plan) * tc_kn_row(plan) : cols * tc_nk_row(plan));
}

/* Blocks the GPU should have to be busy: two of 4 warps a multiprocessor
 * (132 on an H100 or H200); and the fewest steps a part of a split walk
 * takes, so that its pipeline fills. */
enum { TC_FILL_BLOCKS = 2 * 132, TC_SPLIT_STEPS = 4, TC_MAX_SPLIT = 8 };

/* The block's warps (tc_wg: the warpgroup's 4). */
static int tc_warps(const PtxPlan *plan) { return plan->tc_wg ? 4 : plan->tc_rows / plan->tc_wm * plan->tc_cols; }

/* Split-K for a staged plan whose grid would leave the GPU idle: the
 * block's walk of tc_steps steps in nsplit parts (over blockIdx.z), part z
 * steps z tc_steps / nsplit .. (z + 1) tc_steps / nsplit - 1 (so at least
 * TC_SPLIT_STEPS each), adding its sums into a zeroed C with atomics. */
static void tc_plan_split(const LowerKernel *k, PtxPlan *plan)
{
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
	const int64_t blocks = plan->nsets / plan->tc_rows * ((k->shape.N + cols - 1) / cols);
	/* (blocks of more than PTX_TC_WARPS warps: as many warps in all) */
	const int warps = tc_warps(plan) > PTX_TC_WARPS ? tc_warps(plan) : PTX_TC_WARPS;
	const int64_t fill = TC_FILL_BLOCKS * PTX_TC_WARPS / warps;
	int64_t parts = (fill + blocks - 1) / blocks;
	if (parts > plan->tc_steps / TC_SPLIT_STEPS)
		parts = plan->tc_steps / TC_SPLIT_STEPS;
	if (parts > TC_MAX_SPLIT)
		parts = TC_MAX_SPLIT;
	if (parts < 2)
		return;
	plan->nsplit = parts;
	plan->split_chunk = (plan->tc_steps + parts - 1) / parts; /* the longest part */
	plan->atomic = plan->zero = true;
}

/* ptx_traffic of a staged plan: per step a block copies the weights'
 * tc_rows 16-row chunks (none on the sparse tensor cores, whose warps load
 * A and the metadata laid out by ptx_weights, an eighth of A's bytes:
 * counted once a block) and tc_step_k rows of X of its columns, where they
 * are below N and K (past them zero-filled, not read: so where a kept
 * tile's k runs past K the count is over by those rows; on the sparse
 * tensor cores also past the 2:4 loop's 4 len k of each kept tile, which
 * its last step's 32 k can overrun).  The split parts' steps add up to the
 * walk, tc_steps, which reads no row twice. */
bool ptx_tc_traffic(const LowerKernel *k, const PtxPlan *plan, PtxTraffic *t)
{
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
	const double g0 = (double)(plan->nsets / plan->tc_rows), g1 = (double)((k->shape.N + cols - 1) / cols);
	double steps = (double)plan->tc_steps * (double)tc_step_k(plan); /* k a block walks */
	if (plan->tc_sp) { /* the 2:4 loop's k of each kept tile, its last step's past them not read */
		const int64_t len = k->ir->loops[k->ir->nloops - 2].len, per = (len + 7) / 8;
		steps = (double)(plan->tc_steps / per) * (double)(4 * len);
	}
	const double xrows = steps < (double)k->shape.K ? steps : (double)k->shape.K;      /* X's rows it reads */
	t->rows = 16 * (int64_t)plan->tc_rows;
	t->cols = cols;
	t->x = g0 * xrows * (double)k->shape.N * 2;
	if (plan->tc_sp)
		t->w_direct = g1 * t->macs / (double)k->shape.N * 2 * 9 / 8;
	else /* (padding included: stored) */
		t->w_staged = g0 * g1 * steps * (double)t->rows * 2;
	t->c = ptx_c_traffic(k, plan, plan->nsplit);
	return true;
}

/* The buffers of a staged plan: want, or fewer (down to 2) where want of
 * its steps do not fit the shared memory cap allows; past the static
 * shared memory they are dynamic. */
static void tc_plan_stages(const LowerKernel *k, PtxPlan *plan, int want, int64_t cap)
{
	plan->tc_stages = want;
	while (plan->tc_stages > 2 && plan->tc_stages * tc_stage_halves(k, plan) * 2 > cap)
		plan->tc_stages--;
	const int64_t bytes = plan->tc_stages * tc_stage_halves(k, plan) * 2;
	plan->smem_dyn = bytes > PTX_STATIC_SMEM ? (int)bytes : 0;
}

/* Fills the staging fields of a tensor-core plan: whether X can be staged
 * (16-byte aligned rows), the block's shape and its walk's length. */
static void tc_plan_stage(const LowerKernel *k, const PtxSchedule *s, PtxPlan *plan)
{
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	const PirLoop *lk = &ir->loops[n - 1];
	const int lmi = n - (plan->tc_sp ? 3 : 2); /* the dense m loop */
	plan->tc_rows = 1, plan->tc_cols = PTX_TC_WARPS, plan->tc_wm = 1, plan->tc_ku = 1;
	plan->tc_stages = PTX_TC_STAGES;
	plan->stage = false;
	if (s && (s->bx ? s->stage <= 0 : s->stage < 0)) { /* as on CUDA cores */
		plan->stage_why = "X read from global memory (staging turned off)";
		return;
	}
	/* (2:4 along k: a step's 32 k are contiguous) */
	bool aligned = k->shape.layout == PAT_LAYOUT_KN ? ptx_n_multiple(k, 8)
	                                          : k->shape.K % 8 == 0 && (plan->tc_sp || lk->comp[0].stride == 1);
	for (int i = 0; aligned && i < lmi; i++)
		if (pir_loop_has_axis(&ir->loops[i], PIR_AXIS_K) && k->shape.layout == PAT_LAYOUT_NK)
			aligned = ir->loops[i].comp[0].stride % 8 == 0;
	if (!aligned) {
		plan->stage_why = k->shape.layout == PAT_LAYOUT_KN
		                          ? "X read from global memory: its rows are not 16-byte aligned (N is not a "
		                            "multiple of 8)"
		                          : "X read from global memory: its rows are not 16-byte aligned (K is not a "
		                            "multiple of 8, or a kept tile's k are not contiguous)";
		return;
	}
	const int64_t chunks = (ir->loops[lmi].len + 15) / 16, cap = smem_cap(s);
	/* the schedule's warps (but on wgmma, a warpgroup): as many chunks, then
	 * column slices; past PTX_TC_WARPS only to take more chunks (wider
	 * blocks would not keep steps of 32 k in the static shared memory) */
	const int warps = !s || s->tcw <= 0 || (s->wg > 0 && !plan->tc_sp) ? PTX_TC_WARPS
	                  : s->tcw > PTX_TC_MAX_WARPS                      ? PTX_TC_MAX_WARPS
	                                                                   : s->tcw;
	int rows = warps < 4 ? 4 : warps; /* (fewer warps: 2 chunks a warp) */
	if (rows > 2 * warps)
		rows = 2 * warps;
	while (chunks % rows)
		rows--;
	/* a warp takes 2 of the chunks where it can: its B fragments then feed
	 * two mma each (per 16 k, 6 ldmatrix.x4 for 16 mma instead of 5 for 8;
	 * sparse, 8 for 16 mma.sp instead of 8 for 8) */
	const int wm = rows % PTX_TC_WM == 0 ? PTX_TC_WM : 1;
	int cols = (rows > PTX_TC_WARPS || warps < PTX_TC_WARPS ? warps : PTX_TC_WARPS) / (rows / wm);
	if (cols < 1)
		cols = 1;
	const int64_t need = (k->shape.N + PTX_TC_COLS - 1) / PTX_TC_COLS;
	if (cols > need)
		cols = (int)need;
	plan->tc_wm = wm;
	plan->tc_rows = rows;
	for (plan->tc_cols = cols; plan->tc_cols > 1 && PTX_TC_STAGES * tc_stage_halves(k, plan) * 2 > cap;)
		plan->tc_cols /= 2; /* the buffers within the block's shared memory */
	plan->stage = true;
	/* the schedule's buffers, which then decide 32-k steps (below) */
	const int want = !s || s->tcs <= 0           ? PTX_TC_STAGES
	                 : s->tcs > PTX_TC_MAX_STAGES ? PTX_TC_MAX_STAGES
	                                              : s->tcs < 2 ? 2 : s->tcs;
	if (s && s->wg > 0 && !plan->tc_sp) {
		/* a warpgroup: 64 rows (4 chunks that keep the same k) x 64 tc_cols
		 * columns, a chunk a warp; or, transposed, the kept tiles' 16 tc_rows
		 * rows x 64 tc_cols columns, 64 columns a wgmma (its M) and at most
		 * 64 accumulators a thread; 32 k a step where the kept tiles have
		 * them and the stages fit (two wgmma a barrier for each 64 columns) */
		plan->tc_wg = true;
		plan->tc_wgt = rows < 4;
		plan->tc_wm = 1;
		if (plan->tc_wgt) {
			plan->tc_wgn = 16 * rows;
			int q = (int)((k->shape.N + PTX_TC_COLS - 1) / PTX_TC_COLS);
			if (q > 128 / plan->tc_wgn)
				q = 128 / plan->tc_wgn;
			plan->tc_cols = q < 4 ? q : 4;
		} else {
			plan->tc_wgn = plan->tc_cols * PTX_TC_COLS;
		}
		plan->tc_wgu = 2;
		if (lk->len % 32 || want * tc_stage_halves(k, plan) * 2 > cap)
			plan->tc_wgu = 1;
		_Static_assert(PTX_TC_STAGES * (4 * 16 * 16 + 16 * 4 * PTX_TC_COLS) * 2 <= PTX_STATIC_SMEM,
		               "wgmma's stages of 16 k fit a block's static shared memory");
		plan->stage_why = "X and the weights staged in shared memory by cp.async as 8 x 8 core matrices, read by the "
		                  "tensor cores through wgmma's descriptors";
	}
	plan->tc_steps = plan->tc_sp ? (ir->loops[n - 2].len + 7) / 8 : lk->len / tc_step_k(plan);
	for (int i = 0; i < lmi; i++)
		if (!pir_loop_has_axis(&ir->loops[i], PIR_AXIS_M))
			plan->tc_steps *= ir->loops[i].nnz;
	tc_plan_split(k, plan);
	if (plan->tc_wg) {
		/* patc's own: a buffer more where it fits, so that with a step's
		 * wgmma in flight (tc_wga) the copies still run 2 steps ahead */
		tc_plan_stages(k, plan, s->tcs > 0 ? want : PTX_TC_STAGES + 1, cap);
		plan->tc_wga = plan->tc_stages >= 3;
		return;
	}
	/* mma: 32 k a step (two mma per fragment set, half the barriers and
	 * index loads a multiply-add) where the kept tiles' k loop is a
	 * multiple of 32 long, the walk is not split (whose parts need their
	 * steps) and the stages fit beside the same columns */
	if (!plan->tc_sp && plan->nsplit == 1 && lk->len % 32 == 0) {
		plan->tc_ku = 2;
		if (want * tc_stage_halves(k, plan) * 2 > cap)
			plan->tc_ku = 1;
		else
			plan->tc_steps /= 2;
	}
	tc_plan_stages(k, plan, want, cap);
	if (plan->tc_sp)
		plan->stage_why = k->shape.layout == PAT_LAYOUT_KN ? "X staged in shared memory by cp.async, B fragments read with "
		                                               "ldmatrix.trans; the weights and the metadata from global memory"
		                                             : "X staged in shared memory by cp.async, B fragments read with "
		                                               "ldmatrix; the weights and the metadata from global memory";
	else
		plan->stage_why = k->shape.layout == PAT_LAYOUT_KN
		                          ? "X and the weights staged in shared memory by cp.async, fragments read with "
		                            "ldmatrix.trans"
		                          : "X and the weights staged in shared memory by cp.async, fragments read with "
		                            "ldmatrix";
}

/* A nest for the sparse tensor cores: it ends in a dense m loop, a dense
 * k loop of stride 4 and a k loop of 4 (stride 1) keeping 2: 2:4 along k
 * (nm(2, 4), the hybrid), with no loop along both axes before. */
static bool sparse_nest(const Pir *ir)
{
	const int n = ir->nloops;
	if (n < 3)
		return false;
	const PirLoop *l3 = &ir->loops[n - 3], *l2 = &ir->loops[n - 2], *l1 = &ir->loops[n - 1];
	bool ok = nest_loop_plain(l3, PIR_AXIS_M) && nest_loop_plain(l2, PIR_AXIS_K) && l2->comp[0].stride == 4 &&
	          l1->ncomp == 1 && l1->comp[0].axis == PIR_AXIS_K && l1->comp[0].stride == 1 && l1->len == 4 &&
	          l1->nnz == 2;
	for (int i = 0; ok && i < n - 3; i++)
		ok = ir->loops[i].ncomp == 1;
	return ok;
}

bool ptx_tc_plan(const LowerKernel *k, const PtxSchedule *s, PtxPlan *plan)
{
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	plan->tc = false;
	if (k->shape.dtype == PAT_F32) {
		plan->tc_why = "CUDA cores in f32 (dtype f16 or bf16 takes the tensor cores where the pattern keeps "
		               "dense 16 x 16 tiles or 2:4 along k)";
		return false;
	}
	bool ok = n >= 2 && dense_on(&ir->loops[n - 2], PIR_AXIS_M) && dense_on(&ir->loops[n - 1], PIR_AXIS_K);
	for (int i = 0; ok && i < n - 2; i++)
		ok = ir->loops[i].ncomp == 1;
	const bool sp = !ok && sparse_nest(ir);
	if (!ok && !sp) {
		plan->tc_why = "CUDA cores in f32: the tensor cores need kept tiles that are dense 16 x 16 tiles of W "
		               "(the nest ending in a dense m loop and a dense k loop, each a multiple of 16 long, "
		               "and no loop along both axes) or 2:4 along k after a dense m loop (mma.sp)";
		return false;
	}
	/* A warp's rows are fixed by the m digits before its tile, and it walks
	 * every k before the tile with them: a perforated m loop inside a k loop
	 * keeps other rows in each k region, which only the CUDA cores' atomics
	 * follow (the GPU rules refuse such nests; a direct caller may not). */
	bool k_outside = false;
	for (int i = 0; i < n - (sp ? 3 : 2); i++) {
		const PirLoop *l = &ir->loops[i];
		if (k_outside && pir_loop_has_axis(l, PIR_AXIS_M) && pir_loop_is_perforated(l)) {
			plan->tc_why = "CUDA cores in f32: a perforated m loop inside a k loop keeps other rows in each k "
			               "region, and a tensor-core warp keeps its rows over the whole k walk";
			return false;
		}
		k_outside |= pir_loop_has_axis(l, PIR_AXIS_K);
	}
	plan->tc = true;
	plan->tc_sp = sp;
	plan->tc_why = sp ? "sparse tensor cores: 2 of every 4 consecutive k kept in rows of a dense m loop, one "
	                    "mma.sp.m16n8k32 per 32 k and 8 columns (A and its metadata laid out for the warps), "
	                    "f32 accumulators"
	                  : "tensor cores: every kept tile of W is dense 16 x 16 tiles, one mma.sync.m16n8k16 per 16 k "
	                    "and 8 columns, f32 accumulators";
	plan->why = plan->tc_why;
	plan->s = (PtxSchedule){32, PTX_TC_WARPS, PTX_TC_COLS, 16, 1, 0, 0, 0, 0, 0, 0};
	plan->group = -1;
	plan->split = -1;
	plan->nsplit = 1;
	plan->nspread = n - 1;
	plan->outer = -1;
	const int lm = n - (sp ? 3 : 2); /* the dense m loop the warps take 16 rows of */
	plan->nsets = (ir->loops[lm].len + 15) / 16;
	for (int i = 0; i < lm; i++) {
		const PirLoop *l = &ir->loops[i];
		if (pir_loop_has_axis(l, PIR_AXIS_M)) {
			plan->nsets *= l->nnz;
			plan->zero |= pir_loop_is_perforated(l); /* rows no warp writes */
		}
	}
	tc_plan_stage(k, s, plan);
	plan->s.by = tc_warps(plan);
	plan->s.stage = plan->stage;
	plan->s.wg = plan->tc_wg;
	if (plan->tc_wg)
		plan->why = plan->tc_why = plan->tc_wgt ? "tensor cores, Hopper's warpgroup mma, transposed: every kept "
		                                          "tile of W is dense N x 16 tiles (N = 16, 32 or 48 rows), one "
		                                          "wgmma.m64nNk16 per 16 k and 64 columns (C^T = X^T W^T), "
		                                          "f32 accumulators"
		                                        : "tensor cores, Hopper's warpgroup mma: every kept tile of W is "
		                                          "dense 64 x 16 tiles, one wgmma.m64nNk16 per 16 k for a "
		                                          "warpgroup's 64 rows and N columns, f32 accumulators";
	return true;
}
