/* SPDX-License-Identifier: MIT */
/* tc.c - the tensor-core mapping of the NVPTX backend; see ptx.h.
 *
 * One warp computes a 16 x PTX_TC_COLS tile of C with mma.sync.m16n8k16
 * (f16 or bf16 inputs, f32 accumulators).  Lane l holds, per the PTX ISA's
 * fragment layouts, with g = l / 4 and t = l % 4:
 *   A (16 x 16 weights): rows g and g + 8, k pairs 2t, 2t + 1 and 2t + 8,
 *     2t + 9, four 32-bit words of two 16-bit values each;
 *   B (16 x 8 of X): k pairs 2t, 2t + 1 and 2t + 8, 2t + 9 of column g;
 *   C (16 x 8): rows g and g + 8, columns 2t and 2t + 1.
 * The weights of a kept tile are stored row by row, k innermost.  In the
 * plain form each A word is one aligned 32-bit load and each B value a
 * 16-bit load of X (K x N in layout kn, N x K in layout nk; columns past N
 * and padded k read 0).  Staged, both come from shared memory through
 * ldmatrix.x4, whose four 8 x 8 matrices land in exactly these layouts:
 * for A, rows 0-7 and 8-15 of k 0-7, then of k 8-15; for B, k 0-7 and
 * 8-15 of two column tiles, transposed where X's rows run along the
 * columns (layout kn).  C is M x N or N x M likewise. */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

#include "../weights/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A plain dense loop along axis (nest.h), a multiple of 16 long. */
static bool dense_on(const PirLoop *l, PirAxis axis) { return nest_loop_plain(l, axis) && l->len % 16 == 0; }

/* The shared memory a block's buffers may take: the schedule's smem past
 * the static shared memory (dynamic, PtxPlan.smem_dyn), else that. */
static int64_t smem_cap(const PtxSchedule *s) { return s && s->smem > PTX_STATIC_SMEM ? s->smem : PTX_STATIC_SMEM; }

/* The k of one step of a staged walk: 16 tc_ku (mma), 32 (mma.sp), 16
 * tc_wgu (wgmma). */
static int64_t step_k(const PtxPlan *plan)
{
	return plan->tc_sp ? 32 : 16 * (plan->tc_wg ? plan->tc_wgu : plan->tc_ku > 1 ? plan->tc_ku : 1);
}

int ptx_tc_step_k(const PtxPlan *plan) { return (int)step_k(plan); }

/* The 8 halves that pad a stage's rows (none where the emulator is told
 * to plant bank conflicts: PATC_EMU_INJECT=nopad). */
static int64_t pad(const PtxPlan *plan) { return plan->emulate && ptx_emu_inject("nopad") ? 0 : 8; }

/* Halves per row of a stage's weights under mma (a row's k of the step,
 * padded by 8 so that the 8 rows an ldmatrix reads fall in distinct
 * banks), and of X in layout nk (likewise). */
static int64_t tc_row(const PtxPlan *plan) { return step_k(plan) + pad(plan); }
static int64_t nk_row(const PtxPlan *plan) { return tc_row(plan); }

/* Halves per row of a stage's X in layout kn (the block's columns, padded
 * likewise). */
static int64_t kn_row(const PtxPlan *plan) { return (int64_t)plan->tc_cols * PTX_TC_COLS + pad(plan); }

/* Halves of one stage: the weights' tc_rows x 16 rows (none on the sparse
 * tensor cores, which read the weights and the metadata from global
 * memory), then X. */
static int64_t stage_a(const PtxPlan *plan)
{
	return plan->tc_sp ? 0 : (int64_t)plan->tc_rows * 16 * (plan->tc_wg ? step_k(plan) : tc_row(plan));
}
static int64_t stage_halves(const LowerKernel *k, const PtxPlan *plan)
{
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
	if (plan->tc_wg) /* core matrices, unpadded (see a_piece) */
		return stage_a(plan) + step_k(plan) * cols;
	return stage_a(plan) + (k->shape.layout == PAT_LAYOUT_KN ? step_k(plan) * kn_row(plan) : cols * nk_row(plan));
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
 * counted once a block) and step_k rows of X of its columns, where they
 * are below N and K (past them zero-filled, not read: so where a kept
 * tile's k runs past K the count is over by those rows; on the sparse
 * tensor cores also past the 2:4 loop's 4 len k of each kept tile, which
 * its last step's 32 k can overrun).  The split parts' steps add up to the
 * walk, tc_steps, which reads no row twice. */
bool ptx_tc_traffic(const LowerKernel *k, const PtxPlan *plan, PtxTraffic *t)
{
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
	const double g0 = (double)(plan->nsets / plan->tc_rows), g1 = (double)((k->shape.N + cols - 1) / cols);
	double steps = (double)plan->tc_steps * (double)step_k(plan); /* k a block walks */
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
	while (plan->tc_stages > 2 && plan->tc_stages * stage_halves(k, plan) * 2 > cap)
		plan->tc_stages--;
	const int64_t bytes = plan->tc_stages * stage_halves(k, plan) * 2;
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
	bool aligned = k->shape.layout == PAT_LAYOUT_KN ? k->shape.N % 8 == 0
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
	for (plan->tc_cols = cols; plan->tc_cols > 1 && PTX_TC_STAGES * stage_halves(k, plan) * 2 > cap;)
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
		if (lk->len % 32 || want * stage_halves(k, plan) * 2 > cap)
			plan->tc_wgu = 1;
		_Static_assert(PTX_TC_STAGES * (4 * 16 * 16 + 16 * 4 * PTX_TC_COLS) * 2 <= PTX_STATIC_SMEM,
		               "wgmma's stages of 16 k fit a block's static shared memory");
		plan->stage_why = "X and the weights staged in shared memory by cp.async as 8 x 8 core matrices, read by the "
		                  "tensor cores through wgmma's descriptors";
	}
	plan->tc_steps = plan->tc_sp ? (ir->loops[n - 2].len + 7) / 8 : lk->len / step_k(plan);
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
		if (want * stage_halves(k, plan) * 2 > cap)
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

typedef struct TcArg {
	const PtxPlan *plan;
	LLVMTypeRef i16;
	LLVMValueRef g, t;   /* the lane's group and thread in it (i64) */
	LLVMValueRef nb;     /* the warp's first column */
	LLVMValueRef acc[PTX_TC_WM * PTX_TC_TILES][4]; /* chunk i of the warp's, tile j: i PTX_TC_TILES + j */
	LLVMValueRef mrow;   /* alloca: the m of the warp's first row */
	LLVMValueRef mma;    /* the inline asm, or (emulation) the global patc_emu_mma */
	LLVMTypeRef mma_ty;
	LLVMValueRef ea, eb, ec; /* emulation: the fragments passed to the host */
	LLVMValueRef sp;         /* sparse: mma.sp's inline asm, or (emulation) the global patc_emu_mmasp */
	LLVMTypeRef sp_ty;
	/* sparse, staged: allocas, the A fragments and metadata of the warp's
	 * chunks for the step about to be computed (loaded a step ahead) */
	LLVMValueRef spa[PTX_TC_WM][4], spm[PTX_TC_WM];
	LLVMValueRef wg;         /* tc_wg: the wgmma step's inline asm, or (emulation) the global patc_emu_wgmma */
	LLVMTypeRef wg_ty;
	LLVMValueRef wgw[2];     /* tc_wga: wgmma.wait_group 0 and 1, inline asm (tc_wg_wait) */
	LLVMTypeRef wgw_ty;
	LLVMValueRef ewacc;      /* emulation, tc_wg: the accumulators, which the host updates */
} TcArg;

/* A load of `ty` at element `at` of base (elements of `ety`), or 0 where
 * !ok (nothing read): X, the weights and the index, none of which a kernel
 * writes (an invariant load). */
static LLVMValueRef load_or_zero(LowerCtx *c, LLVMTypeRef ety, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef at,
                                 LLVMValueRef ok, unsigned align)
{
	at = LLVMBuildSelect(c->b, ok, at, ll_i64(c, 0), "");
	LLVMValueRef v = lower_invariant(c, LLVMBuildLoad2(c->b, ty, LLVMBuildGEP2(c->b, ety, base, &at, 1, ""), ""));
	ptx_align(c, v, align);
	return LLVMBuildSelect(c->b, ok, v, LLVMConstNull(ty), "");
}

/* X[kk, n] as the low 16 bits of an i32; 0 past K or past the columns. */
static LLVMValueRef x_half(LowerCtx *c, const TcArg *a, LLVMValueRef kk, LLVMValueRef n)
{
	const LowerKernel *k = c->k;
	LLVMValueRef ok = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kk, ll_i64(c, k->shape.K), ""),
	                               LLVMBuildICmp(c->b, LLVMIntSLT, n, c->n1, ""), "");
	LLVMValueRef at = k->shape.layout == PAT_LAYOUT_KN
	                          ? ll_add(c, ll_mul(c, kk, k->shape.N), n)
	                          : ll_add(c, ll_mul(c, n, k->shape.K), kk);
	return LLVMBuildZExt(c->b, load_or_zero(c, a->i16, a->i16, c->X, at, ok, 2), c->i32, "");
}

/* Two 16-bit values in one word: lo in the low half. */
static LLVMValueRef pack(LowerCtx *c, LLVMValueRef lo, LLVMValueRef hi)
{
	return LLVMBuildOr(c->b, lo, LLVMBuildShl(c->b, hi, LLVMConstInt(c->i32, 16, 0), ""), "pair");
}

/* acc[j] = A B + acc[j]: mma.m16n8k16 (meta NULL, B 2 words) or, sparse,
 * mma.sp.m16n8k32 with its metadata (B 4 words). */
static void tc_mma(LowerCtx *c, TcArg *a, LLVMValueRef *aw, LLVMValueRef *bw, LLVMValueRef meta, int j)
{
	const int nb = meta ? 4 : 2;
	LLVMValueRef cv[4];
	for (int e = 0; e < 4; e++)
		cv[e] = LLVMBuildLoad2(c->b, c->f32, a->acc[j][e], "");
	if (a->plan->emulate) {
		for (int e = 0; e < 4; e++) {
			LLVMValueRef ie = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, aw[e], LLVMBuildGEP2(c->b, c->i32, a->ea, &ie, 1, ""));
			LLVMBuildStore(c->b, cv[e], LLVMBuildGEP2(c->b, c->f32, a->ec, &ie, 1, ""));
			if (e < nb)
				LLVMBuildStore(c->b, bw[e], LLVMBuildGEP2(c->b, c->i32, a->eb, &ie, 1, ""));
		}
		LLVMValueRef f16 = LLVMConstInt(c->i32, c->k->shape.dtype == PAT_F16, 0);
		LLVMValueRef fn = LLVMBuildLoad2(c->b, c->ptr, meta ? a->sp : a->mma, "mma");
		LLVMValueRef args[5] = {a->ea, a->eb, a->ec, meta ? meta : f16, f16};
		LLVMBuildCall2(c->b, meta ? a->sp_ty : a->mma_ty, fn, args, meta ? 5 : 4, "");
		for (int e = 0; e < 4; e++) {
			LLVMValueRef ie = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, a->ec, &ie, 1, ""), ""),
			               a->acc[j][e]);
		}
		return;
	}
	LLVMValueRef args[13];
	unsigned na = 0;
	for (int e = 0; e < 4; e++)
		args[na++] = aw[e];
	for (int e = 0; e < nb; e++)
		args[na++] = bw[e];
	for (int e = 0; e < 4; e++)
		args[na++] = cv[e];
	if (meta)
		args[na++] = meta;
	LLVMValueRef d = LLVMBuildCall2(c->b, meta ? a->sp_ty : a->mma_ty, meta ? a->sp : a->mma, args, na, "d");
	/* warp-synchronous: not to be moved across control flow */
	unsigned conv = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(d, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, conv, 0));
	for (int e = 0; e < 4; e++)
		LLVMBuildStore(c->b, LLVMBuildExtractValue(c->b, d, (unsigned)e, ""), a->acc[j][e]);
}

/* A kept tile at p (its first row, its first k): 16 k at a time, the
 * weights' A fragment once for all the warp's column tiles. */
static void tc_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	TcArg *a = arg;
	const Pir *ir = c->k->ir;
	const PirLoop *lk = &ir->loops[ir->nloops - 1];
	const int64_t len = lk->len, ks = lk->comp[0].stride;
	LLVMBuildStore(c->b, p->m, a->mrow);
	LowerLoop ll;
	LLVMValueRef step = lower_loop_begin(c, &ll, ll_i64(c, 0), ll_i64(c, len / 16), "kstep");
	LLVMValueRef d0 = LLVMBuildNSWAdd(c->b, ll_mul(c, step, 16),
	                                  ll_mul(c, a->t, 2), "d0");
	/* A: rows g, g + 8; digits d0, d0 + 8 (pairs d, d + 1) */
	LLVMValueRef rowg = ll_mul(c, ll_add(c, p->row, a->g), len);
	LLVMValueRef aw[4];
	for (int e = 0; e < 4; e++) {
		LLVMValueRef at = ll_add(c, rowg, d0);
		at = ll_add(c, at, ll_i64(c, (e & 1 ? 8 * len : 0) + (e & 2 ? 8 : 0)));
		LLVMValueRef l = LLVMBuildLoad2(c->b, c->i32, LLVMBuildGEP2(c->b, a->i16, c->values, &at, 1, ""), "a");
		ptx_align(c, l, 4);
		aw[e] = l;
	}
	/* B: k of digits d0, d0 + 1 and d0 + 8, d0 + 9; column g of each tile */
	LLVMValueRef kk[4];
	for (int e = 0; e < 4; e++)
		kk[e] = LLVMBuildNSWAdd(
			c->b, p->k, ll_mul(c, ll_add(c, d0, ll_i64(c, (e & 1) + (e & 2 ? 8 : 0))), ks),
			"k");
	for (int j = 0; j < PTX_TC_TILES; j++) {
		LLVMValueRef col = LLVMBuildNSWAdd(c->b, a->nb, ll_add(c, a->g, ll_i64(c, 8 * j)), "n");
		LLVMValueRef bw[2] = {pack(c, x_half(c, a, kk[0], col), x_half(c, a, kk[1], col)),
		                      pack(c, x_half(c, a, kk[2], col), x_half(c, a, kk[3], col))};
		tc_mma(c, a, aw, bw, NULL, j);
	}
	lower_loop_end(c, &ll);
}

/* ll_urem or ll_udiv of a v known to be below 2^32 (a step of the walk, a
 * digit of it): in 32 bits, where a division by a constant that is not a
 * power of two is a multiply-high rather than a 64-bit sequence. */
static LLVMValueRef narrow_op(LowerCtx *c, LLVMValueRef v, int64_t d, bool rem)
{
	if ((d & (d - 1)) == 0)
		return rem ? ll_urem(c, v, d) : ll_udiv(c, v, d);
	LLVMValueRef n = LLVMBuildTrunc(c->b, v, c->i32, ""), dd = LLVMConstInt(c->i32, (unsigned long long)d, 0);
	return LLVMBuildZExt(c->b, rem ? LLVMBuildURem(c->b, n, dd, "") : LLVMBuildUDiv(c->b, n, dd, ""), c->i64, "");
}
static LLVMValueRef urem32(LowerCtx *c, LLVMValueRef v, int64_t d) { return narrow_op(c, v, d, true); }
static LLVMValueRef udiv32(LowerCtx *c, LLVMValueRef v, int64_t d) { return narrow_op(c, v, d, false); }

/* ---- the sparse tensor cores (plan->tc_sp) ----
 *
 * mma.sp.m16n8k32: A is 16 x 32 with 2 of every 4 k kept, passed
 * compressed (16 x 16, the dense A fragment's layout: lane (g, t) holds
 * rows g and g + 8, compressed columns 2t, 2t + 1 and 2t + 8, 2t + 9,
 * that is chunks t and t + 4 of 4 k) with metadata: the lanes t = 0 and 1
 * (sparsity selector 0) pass the 2-bit positions of the kept k, chunk c
 * in bits 4c .. 4c + 3 (first kept k in the low two), lane t of chunks 4t
 * .. 4t + 3, row g in the low 16 bits and row g + 8 in the high 16.  B is
 * 32 x 8: word r holds k 8r + 2t, 8r + 2t + 1 of column g.  In storage a
 * row's chunk c holds its 2 kept values at (row K0 + c) 2 and their
 * positions in the last loop's index at the same place; the device gets
 * both laid out for the warps (sp_layout, ptx_weights). */

/* The A fragment and the metadata of the warp's 16 rows for step kstep
 * (chunks 8 kstep .. 8 kstep + 7): row is the first row's place in
 * storage, through the m loop (a multiple of 16 there).  Both come in the
 * order the warp reads them (ptx_weights): the 16-row chunk R of the m
 * loop's instances (row / len 16-row chunks a full instance, row % len / 16
 * within it), step kstep, lane l's four words at ((R S + kstep) 32 + l) 4
 * of the values, S the steps of a row, and its metadata word at
 * (R S + kstep) 16 + 2 g + t % 2 of the last loop's index; padded past the
 * m loop's end and K0, so nothing is checked here. */
static void sp_fragments(LowerCtx *c, TcArg *a, LLVMValueRef row, LLVMValueRef kstep, LLVMValueRef aw[4],
                         LLVMValueRef *meta_out)
{
	const Pir *ir = c->k->ir;
	const int n = ir->nloops;
	const int64_t len = ir->loops[n - 3].len, steps = (ir->loops[n - 2].len + 7) / 8;
	LLVMValueRef chunk = len % 16 ? ll_add(c, ll_mul(c, ll_udiv(c, row, len), (len + 15) / 16), ll_udiv(c, ll_urem(c, row, len), 16))
	                              : ll_udiv(c, row, 16);
	LLVMValueRef at = ll_add(c, ll_mul(c, chunk, steps), kstep);
	LLVMValueRef lane = ll_add(c, ll_mul(c, a->g, 4), a->t);
	LLVMValueRef word = ll_mul(c, ll_add(c, ll_mul(c, at, 32), lane), 4);
	LLVMValueRef words = LLVMBuildGEP2(c->b, c->i32, c->values, &word, 1, "");
	LLVMValueRef v = lower_invariant(c, LLVMBuildLoad2(c->b, LLVMVectorType(c->i32, 4), words, "a"));
	ptx_align(c, v, 16);
	for (int e = 0; e < 4; e++)
		aw[e] = LLVMBuildExtractElement(c->b, v, LLVMConstInt(c->i32, (unsigned)e, 0), "");
	LLVMValueRef mi = ll_add(c, ll_mul(c, at, 16), ll_add(c, ll_mul(c, a->g, 2), LLVMBuildAnd(c->b, a->t, ll_i64(c, 1), "")));
	*meta_out = lower_invariant(
		c, LLVMBuildLoad2(c->b, c->i32, LLVMBuildGEP2(c->b, c->i32, c->idx[n - 1], &mi, 1, ""), "meta"));
}

/* The warp's 16 rows at p (the first of them): 32 k (8 chunks) a step. */
static void tc_sp_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	TcArg *a = arg;
	const Pir *ir = c->k->ir;
	const int n = ir->nloops;
	const int64_t K0 = ir->loops[n - 2].len;
	LLVMBuildStore(c->b, p->m, a->mrow);
	LowerLoop ll;
	LLVMValueRef step = lower_loop_begin(c, &ll, ll_i64(c, 0), ll_i64(c, (K0 + 7) / 8), "kstep");
	LLVMValueRef aw[4], meta;
	sp_fragments(c, a, p->row, step, aw, &meta);
	/* B: k 8r + 2t, + 1 of the step's 32, for each column tile */
	LLVMValueRef k0 = ll_add(c, p->k, ll_mul(c, step, 32));
	for (int j = 0; j < PTX_TC_TILES; j++) {
		LLVMValueRef col = ll_add(c, a->nb, ll_add(c, a->g, ll_i64(c, 8 * j)));
		LLVMValueRef bw[4];
		for (int r = 0; r < 4; r++) {
			LLVMValueRef kk = ll_add(c, k0, ll_add(c, ll_mul(c, a->t, 2), ll_i64(c, 8 * r)));
			bw[r] = pack(c, x_half(c, a, kk, col), x_half(c, a, ll_add(c, kk, ll_i64(c, 1)), col));
		}
		tc_mma(c, a, aw, bw, meta, j);
	}
	lower_loop_end(c, &ll);
}

/* ---- staging (plan->stage) ---- */


/* Where step `step` of the block's walk is: the loops along k before the
 * dense m loop take the digits of step / (steps of a tile), outermost most
 * significant, the loops along m their fixed digits (digit[i]), the dense
 * m loop the block's first row.  *k: the step's first k; *m: that row's m;
 * *row: where the step's weights of the block's first row start, in units
 * of 16 values (row r of the block at 16 row + r len), or on the sparse
 * tensor cores the first row's place in storage, the step's first chunk
 * being 8 *kstep. */
static void tc_locate(LowerCtx *c, LLVMValueRef const *digit, LLVMValueRef step, LLVMValueRef *row, LLVMValueRef *m,
                      LLVMValueRef *k, LLVMValueRef *kstep_out)
{
	const PtxPlan *plan = c->backend;
	const Pir *ir = c->k->ir;
	const int n = ir->nloops;
	const PirLoop *lk = &ir->loops[n - 1];
	const int lmi = n - (plan->tc_sp ? 3 : 2);
	const int64_t per = plan->tc_sp ? (ir->loops[n - 2].len + 7) / 8 : lk->len / step_k(plan);
	LLVMValueRef kstep = urem32(c, step, per), rest = udiv32(c, step, per);
	LLVMValueRef d[PIR_MAX_LOOPS];
	for (int i = lmi - 1; i >= 0; i--) {
		if (pir_loop_has_axis(&ir->loops[i], PIR_AXIS_M)) {
			d[i] = digit[i];
			continue;
		}
		d[i] = urem32(c, rest, ir->loops[i].nnz);
		rest = udiv32(c, rest, ir->loops[i].nnz);
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
	*k = ll_add(c, kk, ll_mul(c, kstep, step_k(plan) * lk->comp[0].stride));
	/* the step's weights start step_k further along the row per step */
	*row = ll_add(c, ll_mul(c, r, lk->len / 16), ll_mul(c, kstep, step_k(plan) / 16));
}

typedef struct Stage {
	LLVMValueRef xs;                 /* the buffers: tc_stages x stage_halves (i16) */
	LLVMValueRef tid;                /* the thread among those copying */
	int64_t nthreads;                /* threads copying: the block's */
	LLVMValueRef ncol;               /* the block's first column */
	LLVMValueRef digit[PIR_MAX_LOOPS];
	LLVMValueRef begin, end;         /* the steps of the block's walk (its part of a split walk) */
	LLVMValueRef ldm;                /* emulation: the global patc_emu_ldm */
	LLVMTypeRef ldm_ty;
	LLVMValueRef eo;                 /* emulation: ldmatrix's result */
} Stage;

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
static LLVMValueRef smem(LowerCtx *c, const Stage *st, LLVMValueRef at, int64_t more)
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
typedef void (*PieceFn)(LowerCtx *c, const PtxPlan *plan, const Stage *st, LLVMValueRef q, int64_t i, void *arg);
static void tc_pieces(LowerCtx *c, const PtxPlan *plan, const Stage *st, int64_t total, int64_t threads,
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

/* A thread's accumulators under wgmma: tc_wgn / 2 of each wgmma's D, one D
 * (or transposed, one a 64 columns of the block). */
static int wg_nacc(const PtxPlan *plan) { return plan->tc_wgn / 2 * (plan->tc_wgt ? plan->tc_cols : 1); }

/* Piece q of rows `per` pieces long, padded to an odd number of 16 bytes
 * (tc_row, nk_row): its row *r and its place *h in it.  The 8 lanes that
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
static void a_piece(LowerCtx *c, const PtxPlan *plan, const Stage *st, LLVMValueRef q, int64_t i, void *arg)
{
	const IssueArg *ia = arg;
	const int64_t len = c->k->ir->loops[c->k->ir->nloops - 1].len, per = step_k(plan) / 8;
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
static void x_piece(LowerCtx *c, const PtxPlan *plan, const Stage *st, LLVMValueRef q, int64_t i, void *arg)
{
	const IssueArg *ia = arg;
	const LowerKernel *k = c->k;
	const bool kn = k->shape.layout == PAT_LAYOUT_KN;
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS, per = step_k(plan) / 8;
	const int64_t ks = plan->tc_sp ? 1 : k->ir->loops[k->ir->nloops - 1].comp[0].stride;
	/* a row of X past K: where k is padded, or on the sparse tensor cores
	 * where 32 k a step overrun the 2:4 loop */
	const bool kpast = k->ir->ext[PIR_AXIS_K] > k->shape.K || (plan->tc_sp && k->ir->loops[k->ir->nloops - 2].len % 8);
	/* the thread's later pieces, where the threads cover whole rows of
	 * pieces: layout kn, nthreads / (cols / 8) k rows further on; nk,
	 * where the columns are not clamped, nthreads / per columns (ahead:
	 * that many; a constant more, an immediate offset) */
	int64_t ahead = 0;
	if (!plan->tc_wg && !kpast && kn && st->nthreads % (cols / 8) == 0)
		ahead = i * (st->nthreads / (cols / 8));
	else if (!plan->tc_wg && !kpast && !kn && st->nthreads % (8 * per) == 0 && k->shape.N % cols == 0)
		ahead = i * (st->nthreads / per);
	if (ahead)
		q = st->tid;
	LLVMValueRef x0 = ll_add(c, ia->buf0, ll_i64(c, stage_a(plan)));
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
		dst = ll_add(c, x0, ll_add(c, ll_mul(c, ii, kn_row(plan)), ll_mul(c, p, 8)));
		src_more = ahead * ks * k->shape.N, dst_more = ahead * kn_row(plan);
	} else {
		LLVMValueRef j, h;
		group_piece(c, q, per, &j, &h);
		dk = ll_mul(c, h, 8);
		col = ll_add(c, st->ncol, j);
		dst = ll_add(c, x0, ll_add(c, ll_mul(c, j, nk_row(plan)), ll_mul(c, h, 8)));
		src_more = ahead * k->shape.K, dst_more = ahead * nk_row(plan);
	}
	/* a column past N: only where the blocks' columns do not divide N (the
	 * kernel runs with n1 = N); it then reads a real one (N's last 8 in
	 * layout kn, whose rows are 16-byte aligned) and fills zeros */
	LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, 0);
	if (k->shape.N % cols) {
		ok = LLVMBuildICmp(c->b, LLVMIntSLT, col, c->n1, "");
		col = ptx_min(c, col, ll_i64(c, k->shape.N - (kn ? 8 : 1)));
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
		        kn ? ll_add(c, ll_mul(c, kk, k->shape.N), col) : ll_add(c, ll_mul(c, col, k->shape.K), kk), 0, ok, 0);
	} else {
		tc_copy(c, plan, smem(c, st, dst, dst_more), c->X, kn ? ll_mul(c, ia->k, k->shape.N) : ia->k,
		        kn ? ll_add(c, ll_mul(c, dk, k->shape.N), col) : ll_add(c, ll_mul(c, col, k->shape.K), dk), src_more, ok, 0);
	}
}

/* Copies step `step` (when below the walk's length) into buffer buf, then
 * commits the copies as one group (an empty one past the end). */
static void tc_issue(LowerCtx *c, const PtxPlan *plan, Stage *st, LLVMValueRef step, LLVMValueRef buf)
{
	const LowerKernel *k = c->k;
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "issue");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "issued");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, step, st->end, ""), body, next);
	LLVMPositionBuilderAtEnd(c->b, body);
	IssueArg ia = {.buf0 = ll_mul(c, buf, stage_halves(k, plan))};
	LLVMValueRef m;
	tc_locate(c, st->digit, step, &ia.row, &m, &ia.k, &ia.kstep);
	const int64_t cols = (int64_t)plan->tc_cols * PTX_TC_COLS;
	if (!plan->tc_sp)
		tc_pieces(c, plan, st, (int64_t)plan->tc_rows * 2 * step_k(plan), st->nthreads, a_piece, &ia);
	tc_pieces(c, plan, st, step_k(plan) / 8 * cols, st->nthreads, x_piece, &ia);
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, next);
	ptx_cp_commit(c);
}

/* ldmatrix.x4 from the lane's row at `at` (halves into the buffers). */
static void tc_ldm(LowerCtx *c, const PtxPlan *plan, const Stage *st, LLVMValueRef at, bool trans, LLVMValueRef *w)
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
static void sp_load(LowerCtx *c, TcArg *a, const Stage *st, LLVMValueRef step, LLVMValueRef wr)
{
	const PtxPlan *plan = a->plan;
	LLVMValueRef row, m, kk, kstep, aw[4], meta;
	tc_locate(c, st->digit, step, &row, &m, &kk, &kstep);
	for (int ci = 0; ci < plan->tc_wm; ci++) {
		sp_fragments(c, a, ll_add(c, row, chunk_row(c, plan, wr, ci)), kstep, aw, &meta);
		for (int e = 0; e < 4; e++)
			LLVMBuildStore(c->b, aw[e], a->spa[ci][e]);
		LLVMBuildStore(c->b, meta, a->spm[ci]);
	}
}

/* The sparse tensor cores' mma.sp of step `step` in buffer buf: the A
 * fragments and metadata sp_load left, B with one ldmatrix.x4 per column
 * tile (lane l addresses k row l of the step, or in layout nk column l % 8
 * of the tile at k 8 (l / 8)). */
static void tc_sp_compute(LowerCtx *c, TcArg *a, const Stage *st, LLVMValueRef buf, LLVMValueRef lane,
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
	LLVMValueRef x0 = ll_mul(c, buf, stage_halves(k, plan));
	LLVMValueRef wn = ll_mul(c, wc, PTX_TC_COLS);
	for (int j = 0; j < PTX_TC_TILES; j++) {
		LLVMValueRef n0 = ll_add(c, wn, ll_i64(c, 8 * j)), bat;
		if (k->shape.layout == PAT_LAYOUT_KN)
			bat = ll_add(c, x0, ll_add(c, ll_mul(c, lane, kn_row(plan)), n0));
		else
			bat = ll_add(c, x0, ll_add(c, ll_mul(c, ll_add(c, n0, ll_urem(c, lane, 8)), nk_row(plan)), ll_mul(c, ll_udiv(c, lane, 8), 8)));
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

/* One wgmma of a step (tc_wg): its accumulators (first, count), its A and
 * B (halves from the stage's start) and whether each is transposed (MN-
 * major). */
typedef struct WgOp {
	int acc, nacc;
	int64_t a, b;
	int trans_a, trans_b;
} WgOp;

/* The wgmma of a step, in order: for each 16 k of it (tc_wgu), the block's
 * 64 rows x tc_wgn columns (A the weights, K-major; B X, N-major in layout
 * kn), or, transposed (tc_wgt), for each 64 columns p of the block's
 * tc_cols, those columns x the tc_wgn rows (A X's columns, M-major in
 * layout kn; B the weights, K-major), accumulators p tc_wgn / 2 on. */
static int wg_ops(const LowerKernel *k, const PtxPlan *plan, WgOp *ops)
{
	const int u = plan->tc_wgu, q = plan->tc_wgt ? plan->tc_cols : 1, kn = k->shape.layout == PAT_LAYOUT_KN;
	const int64_t wsub = stage_a(plan) / u, xsub = 16 * (int64_t)plan->tc_cols * PTX_TC_COLS;
	int n = 0;
	for (int i = 0; i < u; i++)
		for (int p = 0; p < q; p++) {
			const int64_t w = wsub * i, x = stage_a(plan) + xsub * i + 16 * PTX_TC_COLS * p;
			ops[n++] = plan->tc_wgt ? (WgOp){p * plan->tc_wgn / 2, plan->tc_wgn / 2, x, w, kn, 0}
			                        : (WgOp){0, plan->tc_wgn / 2, w, x, 0, kn};
		}
	return n;
}

enum { WG_MAXOPS = 2 * 4 };

/* wgmma.wait_group n (tc_wg): the warp waits until at most n of its
 * committed groups of wgmma are in flight.  The accumulators pass through
 * it (tc_wga), so that nothing reads or moves them before.  Emulated, the
 * host's patc_emu_wgwait, which carries out the wgmma that complete
 * (PATC_EMU_INJECT=wgwait: one group more left in flight than asked). */
static void tc_wg_wait(LowerCtx *c, TcArg *a, int n)
{
	const PtxPlan *plan = a->plan;
	if (plan->emulate) {
		LLVMValueRef arg = LLVMConstInt(c->i32, (unsigned)(n + ptx_emu_inject("wgwait")), 0);
		ptx_emu_call(c, "patc_emu_wgwait", &c->i32, &arg, 1);
		return;
	}
	const int nacc = wg_nacc(plan);
	LLVMValueRef args[64];
	for (int i = 0; i < nacc; i++)
		args[i] = LLVMBuildLoad2(c->b, c->f32, a->acc[i / 4][i % 4], "");
	LLVMValueRef d = LLVMBuildCall2(c->b, a->wgw_ty, a->wgw[n], args, (unsigned)nacc, "d");
	unsigned conv = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(d, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, conv, 0));
	for (int i = 0; i < nacc; i++)
		LLVMBuildStore(c->b, LLVMBuildExtractValue(c->b, d, (unsigned)i, ""), a->acc[i / 4][i % 4]);
}

/* The warpgroup's wgmma of the step in buffer buf (tc_wg, wg_ops), A and
 * B read by the tensor cores from the stage; the warp's accumulators are
 * those of its 16 rows (chunk wr), or transposed of its 16 of each 64
 * columns. */
static void tc_wg_compute(LowerCtx *c, TcArg *a, const Stage *st, LLVMValueRef buf, LLVMValueRef wr)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	WgOp ops[WG_MAXOPS];
	const int nops = wg_ops(k, plan, ops), nacc = wg_nacc(plan);
	LLVMValueRef b0 = ll_mul(c, buf, stage_halves(k, plan));
	/* byte addresses in shared memory (emulated: offsets into the buffers) */
	LLVMValueRef addr = plan->emulate ? ll_mul(c, b0, 2) : LLVMBuildPtrToInt(c->b, smem(c, st, b0, 0), c->i64, "");
	LLVMValueRef desc[2 * WG_MAXOPS];
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
			const WgOp *o = &ops[i];
			const unsigned info = (unsigned)(o->nacc * 2) | (unsigned)o->trans_b << 9 |
			                      (unsigned)(k->shape.dtype == PAT_F16) << 12 | (unsigned)o->trans_a << 13;
			LLVMValueRef fn = LLVMBuildLoad2(c->b, c->ptr, a->wg, "wgmma");
			LLVMValueRef at = LLVMConstInt(c->i32, (unsigned)o->acc, 0);
			LLVMValueRef args[6] = {smem(c, st, ll_i64(c, 0), 0), ll_i64(c, plan->tc_stages * stage_halves(k, plan) * 2),
			                        desc[2 * i], desc[2 * i + 1], LLVMBuildGEP2(c->b, c->f32, a->ewacc, &at, 1, ""),
			                        LLVMBuildOr(c->b, v, LLVMConstInt(c->i32, info, 0), "info")};
			LLVMBuildCall2(c->b, a->wg_ty, fn, args, 6, "");
		}
		ptx_emu_call(c, "patc_emu_wgcommit", NULL, NULL, 0);
		if (!plan->tc_wga)
			tc_wg_wait(c, a, 0);
		return;
	}
	LLVMValueRef args[64 + 2 * WG_MAXOPS + 1];
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
static void tc_compute(LowerCtx *c, TcArg *a, const Stage *st, LLVMValueRef buf, LLVMValueRef lane, LLVMValueRef wr,
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
	LLVMValueRef b0 = ll_mul(c, buf, stage_halves(k, plan));
	LLVMValueRef x0 = ll_add(c, b0, ll_i64(c, stage_a(plan)));
	LLVMValueRef q = ll_udiv(c, lane, 8), i = ll_urem(c, lane, 8);
	LLVMValueRef qk = ll_mul(c, LLVMBuildAnd(c->b, q, ll_i64(c, 1), ""), 8);
	LLVMValueRef qn = ll_add(c, ll_mul(c, wc, PTX_TC_COLS), ll_mul(c, LLVMBuildLShr(c->b, q, ll_i64(c, 1), ""), 8));
	for (int64_t u = 0; u < step_k(plan) / 16; u++) { /* each 16 k of the step */
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
			                           ? ll_add(c, x0, ll_add(c, ll_mul(c, ll_add(c, i, kk), kn_row(plan)), n))
			                           : ll_add(c, x0, ll_add(c, ll_mul(c, ll_add(c, n, i), nk_row(plan)), kk));
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
static void tc_staged_walk(LowerCtx *c, TcArg *a, Stage *st, LLVMValueRef lane, LLVMValueRef wr, LLVMValueRef wc)
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
		for (int e = 0; e < wg_nacc(plan); e++) {
			LLVMValueRef ee = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, a->ewacc, &ee, 1, ""), ""),
			               a->acc[e / 4][e % 4]);
		}
}

/* Stage's buffers and, in emulation, ldmatrix's host function. */
static void tc_stage_init(LowerCtx *c, const PtxPlan *plan, Stage *st)
{
	LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
	LLVMTypeRef aty = LLVMArrayType2(i16, (uint64_t)(plan->tc_stages * stage_halves(c->k, plan)));
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

/* C[m, col] (in layout nk, C[col, m]) = the accumulator acc, or += with
 * atomics into the zeroed C (a part of a split walk), where ok and col is
 * one of the kernel's columns; with acc1 (not NULL), also C[m, col + 1] =
 * acc1 in the same 8-byte store, or the same vector red (layout kn, N
 * even, no atomics or vred: col is even, and with n1 = N, as the kernel
 * is launched, col + 1 is one of the columns where col is). */
static void tc_store2(LowerCtx *c, LLVMValueRef m, LLVMValueRef col, LLVMValueRef acc, LLVMValueRef acc1,
                      LLVMValueRef ok)
{
	LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "store");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
	LLVMBuildCondBr(c->b, LLVMBuildAnd(c->b, ok, LLVMBuildICmp(c->b, LLVMIntSLT, col, c->n1, ""), ""), st, next);
	LLVMPositionBuilderAtEnd(c->b, st);
	if (acc1 && !((const PtxPlan *)c->backend)->atomic) {
		LLVMTypeRef v2 = LLVMVectorType(c->f32, 2);
		LLVMValueRef v = LLVMGetUndef(v2);
		v = LLVMBuildInsertElement(c->b, v, LLVMBuildLoad2(c->b, c->f32, acc, ""), LLVMConstInt(c->i32, 0, 0), "");
		v = LLVMBuildInsertElement(c->b, v, LLVMBuildLoad2(c->b, c->f32, acc1, ""), LLVMConstInt(c->i32, 1, 0), "");
		ptx_align(c, LLVMBuildStore(c->b, v, ptx_c_ptr(c, m, col)), 8);
	} else if (acc1) {
		LLVMValueRef v[2] = {LLVMBuildLoad2(c->b, c->f32, acc, ""), LLVMBuildLoad2(c->b, c->f32, acc1, "")};
		ptx_c_add(c, ptx_c_ptr(c, m, col), v, 2);
	} else {
		ptx_c_put(c, ptx_c_ptr(c, m, col), LLVMBuildLoad2(c->b, c->f32, acc, ""));
	}
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, next);
}

static void tc_store(LowerCtx *c, LLVMValueRef m, LLVMValueRef col, LLVMValueRef acc, LLVMValueRef ok)
{
	tc_store2(c, m, col, acc, NULL, ok);
}

/* C under transposed wgmma (tc_wgt): the block's rows from m0 (m stride
 * sm), warp wr's columns of each 64 p of the block's, in the accumulators
 * of D^T = X^T W^T: lane (g, t) has, from p tc_wgn / 2 on, for each 8 rows
 * i, columns 16 wr + g and + 8, rows 8i + 2t and + 1. */
static void tc_wgt_store(LowerCtx *c, const TcArg *a, LLVMValueRef m0, LLVMValueRef wr, int64_t sm)
{
	const PtxPlan *plan = a->plan;
	const int half = plan->tc_wgn / 2;
	for (int p = 0; p < plan->tc_cols; p++)
		for (int e = 0; e < half; e++) {
			const int r = 8 * (e / 4) + (e & 1);
			LLVMValueRef col = ll_add(c, a->nb, ll_add(c, ll_mul(c, wr, 16), ll_add(c, a->g, ll_i64(c, 64 * p + (e & 2 ? 8 : 0)))));
			LLVMValueRef m = ll_add(c, m0, ll_mul(c, ll_add(c, ll_mul(c, a->t, 2), ll_i64(c, r)), sm));
			const int i = p * half + e;
			tc_store(c, m, col, a->acc[i / 4][i % 4], LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, c->k->shape.M), ""));
		}
}

/* The wgmma step (tc_wg): one inline asm that orders the accumulators'
 * registers before it (wgmma.fence), issues the step's wgmma (wg_ops;
 * D += A B, scale-d 1) as one group and, but under tc_wga, waits for them,
 * so that no other instruction touches the registers while they run; its
 * operands the accumulators, then the descriptors of A and B of each
 * wgmma, then scale-d.  Under tc_wga the waits are their own inline asm
 * (tc_wg_wait), the accumulators passing through each asm in the same
 * registers, so that ptxas can keep the groups in flight between them.
 * Emulated, the globals patc_emu_wgmma (PtxEmuWgmma), once per wgmma, and
 * patc_emu_wgcommit, the accumulators in ewacc from the first step to
 * the last wait. */
static void tc_wg_init(LowerCtx *c, TcArg *a)
{
	const PtxPlan *plan = a->plan;
	const int nacc = wg_nacc(plan);
	if (plan->emulate) {
		a->wg = ptx_emu_hook(c, "patc_emu_wgmma");
		LLVMTypeRef params[6] = {c->ptr, c->i64, c->i64, c->i64, c->ptr, c->i32};
		a->wg_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, 6, 0);
		a->ewacc = lower_entry_alloca(c, LLVMArrayType2(c->f32, (uint64_t)nacc), "ewacc");
		for (int i = 0; i < nacc; i++) {
			LLVMValueRef ii = LLVMConstInt(c->i32, (unsigned)i, 0);
			LLVMBuildStore(c->b, LLVMConstReal(c->f32, 0.0), LLVMBuildGEP2(c->b, c->f32, a->ewacc, &ii, 1, ""));
		}
		return;
	}
	WgOp ops[WG_MAXOPS];
	const int nops = wg_ops(c->k, plan, ops);
	LLVMTypeRef f[64], params[64 + 2 * WG_MAXOPS + 1];
	for (int i = 0; i < nacc; i++)
		f[i] = params[i] = c->f32;
	for (int i = 0; i < 2 * nops; i++)
		params[nacc + i] = c->i64;
	params[nacc + 2 * nops] = c->i32;
	a->wg_ty = LLVMFunctionType(LLVMStructTypeInContext(c->ctx, f, (unsigned)nacc, 0), params,
	                            (unsigned)(nacc + 2 * nops + 1), 0);
	const char *ty = c->k->shape.dtype == PAT_F16 ? "f16" : "bf16";
	char text[4096], cons[1024];
	int at = snprintf(text, sizeof text, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\nwgmma.fence.sync.aligned;\n",
	                  2 * nacc + 2 * nops);
	for (int i = 0; i < nops; i++) {
		const WgOp *o = &ops[i];
		at += snprintf(text + at, sizeof text - (size_t)at, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
		               2 * o->nacc, ty, ty);
		for (int j = 0; j < o->nacc; j++)
			at += snprintf(text + at, sizeof text - (size_t)at, "%s$%d", j ? "," : "", o->acc + j);
		at += snprintf(text + at, sizeof text - (size_t)at, "}, $%d, $%d, p, 1, 1, %d, %d;\n", 2 * nacc + 2 * i,
		               2 * nacc + 2 * i + 1, o->trans_a, o->trans_b);
	}
	snprintf(text + at, sizeof text - (size_t)at, "wgmma.commit_group.sync.aligned;\n%s}",
	         plan->tc_wga ? "" : "wgmma.wait_group.sync.aligned 0;\n");
	int cat = 0;
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "=f,");
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "%d,", i);
	for (int i = 0; i < 2 * nops; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "l,");
	snprintf(cons + cat, sizeof cons - (size_t)cat, "r");
	a->wg = LLVMGetInlineAsm(a->wg_ty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	if (!plan->tc_wga)
		return;
	/* the waits: the accumulators in and out, each tied to its register */
	a->wgw_ty = LLVMFunctionType(LLVMStructTypeInContext(c->ctx, f, (unsigned)nacc, 0), f, (unsigned)nacc, 0);
	cat = 0;
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "=f,");
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "%s%d", i ? "," : "", i);
	for (int n = 0; n < 2; n++) {
		snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", n);
		a->wgw[n] = LLVMGetInlineAsm(a->wgw_ty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT,
		                             0);
	}
}

void ptx_tc_body(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	const LowerKernel *k = c->k;
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	TcArg a = {.plan = plan, .i16 = LLVMInt16TypeInContext(c->ctx)};
	LLVMValueRef lane = ptx_sreg(c, "tid.x"), warp = ptx_sreg(c, "tid.y");
	LLVMValueRef set = ptx_sreg(c, "ctaid.x"), cy = ptx_sreg(c, "ctaid.y");
	a.g = LLVMBuildUDiv(c->b, lane, ll_i64(c, 4), "g");
	a.t = LLVMBuildURem(c->b, lane, ll_i64(c, 4), "t");
	/* the block's warps: tc_rows / tc_wm of tc_wm chunks of rows each x tc_cols
	 * column slices; a warpgroup (tc_wg): a chunk each, all the columns */
	LLVMValueRef wr = plan->tc_wg ? warp : ll_udiv(c, warp, plan->tc_cols);
	LLVMValueRef wc = plan->tc_wg ? ll_i64(c, 0) : ll_urem(c, warp, plan->tc_cols);
	/* 8-column tiles a chunk of the warp's (transposed: the accumulators in 4s) */
	const int tiles = plan->tc_wgt ? wg_nacc(plan) / 4 : plan->tc_wg ? plan->tc_wgn / 8 : PTX_TC_TILES;
	LLVMValueRef ncol = ll_add(c, c->n0, ll_mul(c, cy, (int64_t)plan->tc_cols * PTX_TC_COLS));
	a.nb = LLVMBuildNSWAdd(c->b, ncol, ll_mul(c, wc, PTX_TC_COLS), "nb");
	LLVMBasicBlockRef done = NULL;
	if (!plan->stage) {
		/* a warp past the columns has nothing to do (uniform in the warp);
		 * staged, it still copies its share for the others */
		LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
		done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a.nb, c->n1, ""), work, done);
		LLVMPositionBuilderAtEnd(c->b, work);
	}

	/* the set's digits, innermost first: the block's chunks of the dense m
	 * loop (the last two loops follow it when sparse, the last one else),
	 * then the loops along m before it */
	const int lmi = n - (plan->tc_sp ? 3 : 2);
	const PirLoop *lm = &ir->loops[lmi];
	const int64_t groups = (lm->len + 15) / 16 / plan->tc_rows;
	LLVMValueRef rest = set;
	LLVMValueRef chunk = ll_mul(c, ll_urem(c, rest, groups), plan->tc_rows);
	rest = ll_udiv(c, rest, groups);
	c->lo[lmi] = LLVMBuildNSWMul(c->b, chunk, ll_i64(c, 16), "mlo");
	c->hi[lmi] = LLVMBuildNSWAdd(c->b, c->lo[lmi], ll_i64(c, 1), "mhi");
	for (int i = lmi - 1; i >= 0; i--) {
		const PirLoop *l = &ir->loops[i];
		if (!pir_loop_has_axis(l, PIR_AXIS_M))
			continue;
		c->lo[i] = ll_urem(c, rest, l->nnz);
		c->hi[i] = ll_add(c, c->lo[i], ll_i64(c, 1));
		rest = ll_udiv(c, rest, l->nnz);
	}

	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	for (int j = 0; j < plan->tc_wm * tiles; j++)
		for (int e = 0; e < 4; e++) {
			a.acc[j][e] = lower_entry_alloca(c, c->f32, "acc");
			LLVMBuildStore(c->b, zero, a.acc[j][e]);
		}
	a.mrow = lower_entry_alloca(c, c->i64, "mrow");
	LLVMBuildStore(c->b, ll_i64(c, k->shape.M), a.mrow);
	for (int ci = 0; ci < plan->tc_wm && plan->tc_sp && plan->stage; ci++) {
		for (int e = 0; e < 4; e++)
			a.spa[ci][e] = lower_entry_alloca(c, c->i32, "spa");
		a.spm[ci] = lower_entry_alloca(c, c->i32, "spm");
	}
	if (plan->tc_wg) {
		tc_wg_init(c, &a);
	} else if (plan->emulate) {
		a.mma = ptx_emu_hook(c, "patc_emu_mma");
		LLVMTypeRef params[4] = {c->ptr, c->ptr, c->ptr, c->i32};
		a.mma_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, 4, 0);
		a.ea = lower_entry_alloca(c, LLVMArrayType2(c->i32, 4), "ea");
		a.eb = lower_entry_alloca(c, LLVMArrayType2(c->i32, 4), "eb");
		a.ec = lower_entry_alloca(c, LLVMArrayType2(c->f32, 4), "ec");
		if (plan->tc_sp) {
			a.sp = ptx_emu_hook(c, "patc_emu_mmasp");
			LLVMTypeRef sparams[5] = {c->ptr, c->ptr, c->ptr, c->i32, c->i32};
			a.sp_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), sparams, 5, 0);
		}
	} else {
		LLVMTypeRef f4[4] = {c->f32, c->f32, c->f32, c->f32};
		LLVMTypeRef ret = LLVMStructTypeInContext(c->ctx, f4, 4, 0);
		LLVMTypeRef params[10] = {c->i32, c->i32, c->i32, c->i32, c->i32, c->i32, c->f32, c->f32, c->f32, c->f32};
		a.mma_ty = LLVMFunctionType(ret, params, 10, 0);
		char text[160];
		const char *ty = k->shape.dtype == PAT_F16 ? "f16" : "bf16";
		snprintf(text, sizeof text,
		         "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
		         "{$10,$11,$12,$13};",
		         ty, ty);
		static const char cons[] = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f";
		a.mma = LLVMGetInlineAsm(a.mma_ty, text, strlen(text), cons, sizeof cons - 1, 0, 0, LLVMInlineAsmDialectATT,
		                         0);
		if (plan->tc_sp) { /* sparsity selector 0: lanes t = 0, 1 pass the metadata */
			LLVMTypeRef sparams[13] = {c->i32, c->i32, c->i32, c->i32, c->i32, c->i32, c->i32,
			                           c->i32, c->f32, c->f32, c->f32, c->f32, c->i32};
			a.sp_ty = LLVMFunctionType(ret, sparams, 13, 0);
			snprintf(text, sizeof text,
			         "mma.sp.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, "
			         "{$8,$9,$10,$11}, {$12,$13,$14,$15}, $16, 0x0;",
			         ty, ty);
			static const char scons[] = "=f,=f,=f,=f,r,r,r,r,r,r,r,r,f,f,f,f,r";
			a.sp = LLVMGetInlineAsm(a.sp_ty, text, strlen(text), scons, sizeof scons - 1, 0, 0,
			                        LLVMInlineAsmDialectATT, 0);
		}
	}

	if (plan->stage) {
		Stage st = {.ncol = ncol};
		tc_stage_init(c, plan, &st);
		st.tid = ll_add(c, ll_mul(c, warp, 32), lane);
		st.nthreads = 32 * (int64_t)plan->s.by;
		for (int i = 0; i < n - 1; i++)
			st.digit[i] = c->lo[i];
		st.begin = ll_i64(c, 0), st.end = ll_i64(c, plan->tc_steps);
		if (plan->nsplit > 1) { /* the block's part of the walk (tc_plan_split) */
			LLVMValueRef z = ptx_sreg(c, "ctaid.z");
			st.begin = ll_udiv(c, ll_mul(c, z, plan->tc_steps), plan->nsplit);
			st.end = ll_udiv(c, ll_mul(c, ll_add(c, z, ll_i64(c, 1)), plan->tc_steps), plan->nsplit);
		}
		LLVMValueRef row, m, kk;
		tc_locate(c, st.digit, ll_i64(c, 0), &row, &m, &kk, NULL);
		/* the warp's first row: chunk wr tc_wm of the block's */
		LLVMBuildStore(c->b, plan->tc_wgt ? m : ll_add(c, m, ll_mul(c, wr, 16 * plan->tc_wm * lm->comp[0].stride)), a.mrow);
		tc_staged_walk(c, &a, &st, lane, wr, wc);
	} else if (plan->tc_sp) {
		LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
		lower_nest(c, 0, n - 2, &start, tc_sp_point, &a);
	} else {
		LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
		lower_nest(c, 0, n - 1, &start, tc_point, &a);
	}

	/* C: rows g and g + 8 of each of the warp's chunks, columns 2t and
	 * 2t + 1 of each tile */
	const int64_t sm = lm->comp[0].stride;
	LLVMValueRef m0 = LLVMBuildLoad2(c->b, c->i64, a.mrow, "m0");
	if (plan->tc_wgt)
		tc_wgt_store(c, &a, m0, wr, sm);
	/* rows 8 half + g: chunk half / 2, h = half % 2 */
	for (int half = 0; half < 2 * plan->tc_wm && !plan->tc_wgt; half++) {
		const int ci = half / 2, h = half % 2;
		const int64_t r = 8 * half;
		LLVMValueRef m = ll_add(c, m0, ll_mul(c, ll_add(c, a.g, ll_i64(c, r)), sm));
		LLVMValueRef mok = LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, k->shape.M), "");
		if (lm->len % 16) /* the last chunk's rows past the m loop's end: not the warp's */
			mok = LLVMBuildAnd(c->b, mok,
			                   LLVMBuildICmp(c->b, LLVMIntSLT,
			                                 ll_add(c, ll_add(c, c->lo[lmi], ll_mul(c, wr, 16 * plan->tc_wm)),
			                                     ll_add(c, a.g, ll_i64(c, r))),
			                                 ll_i64(c, lm->len), ""),
			                   "");
		/* a lane's two adjacent columns in one store where C's rows allow */
		const bool pair = k->shape.layout == PAT_LAYOUT_KN && k->shape.N % 2 == 0 && (!plan->atomic || plan->vred);
		for (int j = 0; j < tiles; j++)
			for (int e = 0; e < 2; e += pair ? 2 : 1) {
				LLVMValueRef col = LLVMBuildNSWAdd(
					c->b, a.nb,
					ll_add(c, ll_mul(c, a.t, 2), ll_i64(c, 8 * j + e)),
					"n");
				LLVMValueRef *acc = a.acc[ci * tiles + j];
				tc_store2(c, m, col, acc[2 * h + e], pair ? acc[2 * h + 1] : NULL, mok);
			}
	}
	if (done) {
		LLVMBuildBr(c->b, done);
		LLVMPositionBuilderAtEnd(c->b, done);
	}
}

/* ---- the weights on the device (ptx_weights) ---- */

/* The sparse tensor cores' operands in the order sp_fragments reads them,
 * from the packed 16-bit values v and the last loop's index pos (rows of
 * K0 chunks, 2 kept values or positions a chunk): nchunks 16-row chunks
 * (those of each instance of the m loop, the last padded) x steps of 8
 * chunks; for each, 32 lanes' 4 words of A (a, 16-bit halves) and the 16
 * metadata words of lanes (g, t = 0, 1) (meta).  Rows past the m loop's end
 * and chunks past K0 read zero values at positions 0 and 1. */
static void sp_layout(const Pir *ir, const uint16_t *v, const int32_t *pos, int64_t nchunks, uint16_t *a,
                      uint32_t *meta)
{
	const int n = ir->nloops;
	const int64_t len = ir->loops[n - 3].len, K0 = ir->loops[n - 2].len, per = (len + 15) / 16, steps = (K0 + 7) / 8;
	for (int64_t r = 0; r < nchunks; r++)
		for (int64_t s = 0; s < steps; s++) {
			const int64_t at = r * steps + s, m0 = r % per * 16, row0 = r / per * len;
			for (int l = 0; l < 32; l++)
				for (int e = 0; e < 4; e++) {
					const int64_t m = m0 + l / 4 + (e & 1 ? 8 : 0), ch = 8 * s + l % 4 + (e & 2 ? 4 : 0);
					const int64_t src = ((row0 + m) * K0 + ch) * 2;
					for (int h = 0; h < 2; h++)
						a[((at * 32 + l) * 4 + e) * 2 + h] = m < len && ch < K0 ? v[src + h] : 0;
				}
			for (int g = 0; g < 8; g++)
				for (int t = 0; t < 2; t++) {
					uint32_t word = 0;
					for (int h = 0; h < 2; h++)
						for (int q = 0; q < 4; q++) {
							const int64_t m = m0 + g + 8 * h, ch = 8 * s + 4 * t + q;
							const int64_t src = ((row0 + m) * K0 + ch) * 2;
							const uint32_t nib = m < len && ch < K0
							                             ? (uint32_t)(pos[src] & 3) | (uint32_t)(pos[src + 1] & 3) << 2
							                             : 4u;
							word |= nib << (4 * q + 16 * h);
						}
					meta[at * 16 + 2 * g + t] = word;
				}
		}
}

bool ptx_weights(const LowerKernel *k, const PtxPlan *plan, const float *values, int64_t nvalues,
                 const PruneMask *mask, PtxWeights *w)
{
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	memset(w, 0, sizeof *w);
	for (int l = 0; l < n; l++)
		if (mask->index[l])
			w->index[l] = mask->index[l],
			w->index_bytes[l] = (size_t)(mask->rows[l] * ir->loops[l].nnz) * sizeof(int32_t);
	if (!plan->tc) {
		w->values = values, w->values_bytes = (size_t)nvalues * sizeof(float);
		return true;
	}
	uint16_t *v16 = malloc((size_t)(nvalues ? nvalues : 1) * sizeof *v16);
	if (!v16)
		return false;
	for (int64_t i = 0; i < nvalues; i++)
		v16[i] = k->shape.dtype == PAT_F16 ? f32_to_fp16(values[i]) : f32_to_bf16(values[i]);
	if (!plan->tc_sp) {
		w->values = w->own[0] = v16, w->values_bytes = (size_t)nvalues * sizeof *v16;
		return true;
	}
	const int64_t len = ir->loops[n - 3].len, K0 = ir->loops[n - 2].len;
	const int64_t nchunks = nvalues / (2 * K0) / len * ((len + 15) / 16), at = nchunks * ((K0 + 7) / 8);
	uint16_t *a = malloc((size_t)(at ? at : 1) * 256 * sizeof *a);
	uint32_t *meta = malloc((size_t)(at ? at : 1) * 16 * sizeof *meta);
	if (!a || !meta) {
		free(v16), free(a), free(meta);
		return false;
	}
	sp_layout(ir, v16, mask->index[n - 1], nchunks, a, meta);
	free(v16);
	w->values = w->own[0] = a, w->values_bytes = (size_t)at * 256 * sizeof *a;
	w->index[n - 1] = (const int32_t *)(w->own[1] = meta), w->index_bytes[n - 1] = (size_t)at * 16 * sizeof *meta;
	return true;
}

void ptx_weights_free(PtxWeights *w)
{
	free(w->own[0]), free(w->own[1]);
	memset(w, 0, sizeof *w);
}
