/* SPDX-License-Identifier: MIT */
/* test_ptx.c - the NVPTX backend without a GPU.
 *
 * The GPU mapping (which loops go to thread blocks, the row groups, the
 * columns per thread, atomics) is run on the host by ptx_emulate
 * (emulate.c: thread and block ids read from globals, one thread at a
 * time over the whole grid, a warp's lanes taking turns on tensor cores),
 * against a float64 reference on the masked weight; C starts as NaN so
 * that an element no thread writes fails; and every staged kernel's stage
 * copies are counted against ptx_traffic.  Besides the fixed cases, 120
 * random configurations (seeded).  The same kernels are also compiled to
 * PTX for sm_80 and sm_90 (tests/ptx.sh assembles them with ptxas). */
#define _POSIX_C_SOURCE 200809L
#include "kernelcase.h"
#include "backend_ptx/cuda.h"
#include "backend_ptx/ptx.h"
#include "backend_x86/x86.h"
#include "prune/prune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the emulated stage copies read (copied: X, the weights) against
 * ptx_traffic's count for the plan: the same, but that on the tensor cores
 * X's rows past K (k padded, or a sparse step of 32 k past a 2:4 loop's
 * end) are zero-filled, not read, so the count is over by at most those of
 * one kept tile a row set (which depends on the mask). */
static void check_traffic(const LowerKernel *lk, const PtxPlan *plan, const PtxEmuStats *st)
{
	const double *copied = st->copied;
	PtxTraffic t;
	const bool counted = ptx_traffic(lk, plan, &t);
	ck_assert_msg(counted == plan->stage, "ptx_traffic counts %s kernel", plan->stage ? "no staged" : "an unstaged");
	if (!counted)
		return;
	const int64_t pad = lk->ir->ext[PIR_AXIS_K] - lk->shape.K;
	const double slack =
		plan->tc ? (double)(plan->nsets / plan->tc_rows) * (double)(pad + (plan->tc_sp ? 31 : 0)) * (double)lk->shape.N * 2 : 0;
	ck_assert_msg(copied[0] <= t.x * (1 + 1e-12) && copied[0] >= t.x * (1 - 1e-12) - slack &&
	                  fabs(copied[1] - t.w_staged) <= 1e-12 * t.w_staged,
	              "%lldx%lldx%lld: the stages copied %.0f bytes of X and %.0f of weights, ptx_traffic says %.0f and %.0f",
	              (long long)lk->shape.M, (long long)lk->shape.K, (long long)lk->shape.N, copied[0], copied[1], t.x, t.w_staged);
}

/* Runs the kernel as compiled for sm on the host emulator over its grid;
 * returns ||C - ref|| / ||ref||, or +inf when an element of C is left
 * unwritten.  st_out (NULL: not wanted): its accesses, counted. */
static double emulate_counted(const OpResult *op, PatLayout layout, int64_t N, const PtxSchedule *s, const char *sm,
                              PtxPlan *plan_out, PtxEmuStats *st_out)
{
	KernelCase kc;
	kernel_case_init(&kc, op, layout, N);
	LowerKernel lk = {op->ir, {op->shape.M, op->shape.K, N, PAT_F32, layout, PAT_ACT_NONE, false}, "emu", 1, {0}, false, 0};
	char err[PTX_ERR_MAX];
	PtxPlan plan;
	PtxEmuStats st = {.count_access = st_out != NULL};
	ck_assert_msg(ptx_emulate(&lk, s, sm, kc.x, kc.values, (const int32_t *const *)kc.mask.index, kc.c, &plan, &st, err),
	              "%s", err);
	check_traffic(&lk, &plan, &st);
	if (st_out)
		*st_out = st;
	if (plan_out)
		*plan_out = plan;
	double e = kernel_case_error(&kc);
	kernel_case_free(&kc);
	return e;
}

static double emulate(const OpResult *op, PatLayout layout, int64_t N, const PtxSchedule *s, PtxPlan *plan_out)
{
	return emulate_counted(op, layout, N, s, "sm_90", plan_out, NULL);
}

static const char *const patterns[] = {
	"apply block(8, 8, 25%);", "apply block(32, 32, 50%);", "apply nm(2, 4);",
	"apply nm(1, 8);", "apply tile_v(16, 25%);", "apply tile_h(16, 50%);",
	"apply channel(50%);", "apply channel_in(25%);", "apply row_balanced(25%);",
	"apply unstructured(10%);", "apply hybrid(16, 32, 50%);",
};
enum { NPATTERNS = sizeof patterns / sizeof *patterns };
static const int64_t shapes[4][3] = {{64, 64, 160}, {100, 70, 33}, {33, 129, 17}, {7, 250, 300}};

static Program compile_pattern(Arena *arena, const char *pattern, const int64_t *shape)
{
	char *text = arena_printf(arena, "include \"all.pat\";\nop w: spmm(M = %lld, K = %lld, N = %lld) { %s }\n",
	                          (long long)shape[0], (long long)shape[1], (long long)shape[2], pattern);
	Program prog;
	ck_assert_msg(compile_quiet("t.pat", text, arena, &prog) == 0, "%s", text);
	return prog;
}

/* Every stdlib pattern, shapes the tiles do not divide, both layouts, and
 * seven schedules (the default, one that takes single rows and columns,
 * one with wide blocks, ...), each pattern and shape for sm_80 or sm_90 in
 * turn (split-K adds to C with scalar atomics or vector red, or sums its
 * parts through the workspace: the last two, C left NaN before the run). */
START_TEST(mapping_matches_reference)
{
	static const PtxSchedule scheds[] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},  {32, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
	                                     {64, 2, 3, 5, 3, 0, 0, 0, 0, 0, 0}, {16, 2, 8, 16, 1, 1, 0, 0, 0, 0, 0},
	                                     {32, 4, 4, 4, 2, 1, 0, 0, 0, 0, 0}, {64, 2, 3, 5, 3, 0, 0, 1, 0, 0, 0},
	                                     {32, 4, 4, 4, 2, 1, 0, 1, 0, 0, 0}};
	enum { NSCHED = sizeof scheds / sizeof *scheds };
	int checked = 0, atomics = 0, groups = 0, xvec = 0, wk = 0, wr = 0, splits = 0, staged = 0, staged_nk = 0;
	int wstaged = 0, vred = 0, mvec_nk = 0, vred_nk = 0, wsum = 0, wsum_vec = 0;
	for (int p = 0; p < NPATTERNS; p++)
		for (int s = 0; s < 4; s++) {
			Arena arena;
			arena_init(&arena);
			Program prog = compile_pattern(&arena, patterns[p], shapes[s]);
			const OpResult *op = &prog.ops[0];
			for (int layout = 0; layout < 2; layout++)
				for (size_t k = 0; k < sizeof scheds / sizeof *scheds; k++) {
					PtxPlan plan;
					const char *sm = (p + s) % 2 ? "sm_80" : "sm_90";
					double e = emulate_counted(op, (PatLayout)layout, op->shape.N, &scheds[k], sm, &plan, NULL);
					ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, layout %s, schedule %d/%d/%d/%d/%d/%d/%d/%d, %s: %g",
					              patterns[p], (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N,
					              pat_layout_names[layout], scheds[k].bx, scheds[k].by, scheds[k].v,
					              scheds[k].r, scheds[k].ksplit, scheds[k].stage, scheds[k].wg, scheds[k].wsum, sm, e);
					/* the workspace wherever the walk alone is split; then no atomics */
					ck_assert(!plan.wsum || (scheds[k].wsum && plan.nsplit > 1 && !plan.atomic && !plan.vred));
					wsum += plan.wsum;
					wsum_vec += plan.wsum && (plan.xvec || plan.mvec);
					checked++;
					atomics += plan.atomic;
					groups += plan.s.r > 1;
					xvec += plan.xvec, wk += plan.wk, wr += plan.wr, splits += plan.nsplit > 1;
					staged += plan.stage;
					staged_nk += plan.stage && layout == PAT_LAYOUT_NK;
					wstaged += plan.wstage;
					vred += plan.vred;
					mvec_nk += plan.mvec > 0 && !plan.atomic;
					vred_nk += plan.vred && plan.mvec > 0;
				}
			arena_free(&arena);
		}
	ck_assert_int_eq(checked, NPATTERNS * 4 * 2 * NSCHED);
	ck_assert_int_gt(wsum, 0);     /* the parts summed through the workspace */
	ck_assert_int_gt(wsum_vec, 0); /* a vector at a time */
	ck_assert_int_gt(atomics, 0); /* tile_h and unstructured add with atomics */
	ck_assert_int_gt(groups, 0);  /* blocks, tile_v, channel_in take row groups */
	ck_assert_int_gt(xvec, 0);    /* and every vector load is reached */
	ck_assert_int_gt(wk, 0);
	ck_assert_int_gt(wr, 0);
	ck_assert_int_gt(splits, 0); /* the small shapes split the walk along k */
	ck_assert_int_gt(staged, 0); /* and X is staged in shared memory */
	ck_assert_int_gt(staged_nk, 0); /* in layout nk too, element by element */
	ck_assert_int_gt(wstaged, 0);   /* and the weights beside it */
	ck_assert_int_gt(vred, 0);      /* a split walk adds vectors on sm_90 */
	ck_assert_int_lt(vred, atomics); /* and single floats elsewhere */
	ck_assert_int_gt(mvec_nk, 0);    /* in layout nk, a thread's adjacent rows stored as one vector */
	ck_assert_int_gt(vred_nk, 0);    /* or added by one red */
}
END_TEST

/* The plan of the common patterns, as documented in ptx.h. */
START_TEST(plans)
{
	static const struct {
		const char *pattern;
		bool atomic, zero;
		int r;
	} want[] = {
		{"apply block(32, 32, 25%);", false, false, 8}, {"apply nm(2, 4);", false, false, 1},
		{"apply tile_v(32, 25%);", false, false, 8},    {"apply tile_h(32, 25%);", true, true, 1},
		{"apply channel(50%);", false, true, 1},        {"apply row_balanced(25%);", false, false, 1},
	};
	static const int64_t shape[3] = {4096, 256, 64};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_pattern(&arena, want[i].pattern, shape);
		PtxPlan plan;
		const OpResult *op = &prog.ops[0];
		LowerKernel lk = {op->ir, {op->shape.M, op->shape.K, 4096, PAT_F32, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "k", 1, {0}, false, 0};
		ptx_plan(&lk, NULL, &plan);
		ck_assert_msg(plan.atomic == want[i].atomic && plan.zero == want[i].zero && plan.s.r == want[i].r,
		              "%s: atomic %d zero %d r %d", want[i].pattern, plan.atomic, plan.zero, plan.s.r);
		if (want[i].r == 8) { /* the wide tile: 8 x 8, half-warps along 128 columns, X staged */
			ck_assert_msg(plan.s.v == 8 && plan.s.bx == 16 && plan.s.by == 4 && plan.stage && plan.nsplit == 1,
			              "%s: %d x %d threads, %d columns", want[i].pattern, plan.s.bx, plan.s.by, plan.s.v);
			ck_assert_msg(plan.tile_why && strstr(plan.tile_why, "8 x 8 a thread"), "%s", want[i].pattern);
			lk.shape.N = 64; /* too few columns to fill the GPU with it: the 4 x 4 tile, and --explain says why */
			ptx_plan(&lk, NULL, &plan);
			ck_assert_msg(plan.s.v == 4 && plan.s.r <= 4 && plan.s.bx == 32, "%s, N = 64: %d x %d", want[i].pattern,
			              plan.s.r, plan.s.v);
			ck_assert_msg(plan.tile_why && strstr(plan.tile_why, "would not fill the GPU"), "%s: %s", want[i].pattern,
			              plan.tile_why ? plan.tile_why : "(none)");
		}
		arena_free(&arena);
	}
}
END_TEST

/* patc's wide register tiles (8 rows x 8 columns a thread, or 8 x 4) where
 * they fill the GPU: a shape just large enough, none of whose sizes the
 * tiles divide, against float64. */
START_TEST(wide_tiles_match_reference)
{
	/* the weights staged beside X: blocks along k, tile_v along the rows;
	 * the last two walk k in 3 and 5 steps of 4 weights: stages of
	 * weights whose rows are no power of 2 */
	static const char *const wide[] = {"apply block(32, 32, 50%);", "apply tile_v(32, 25%);", "apply block(8, 8, 25%);",
	                                   "apply block(16, 12, 25%);", "apply block(32, 20, 50%);"};
	static const int rv[][2] = {{8, 8}, {8, 8}, {8, 4}, {8, 8}, {8, 8}};
	static const int64_t shape[3] = {1000, 100, 2100};
	for (int p = 0; p < 5; p++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_pattern(&arena, wide[p], shape);
		PtxPlan plan;
		double e = emulate(&prog.ops[0], PAT_LAYOUT_KN, shape[2], NULL, &plan);
		ck_assert_msg(plan.s.r == rv[p][0] && plan.s.v == rv[p][1] && plan.stage, "%s: %d x %d", wide[p], plan.s.r,
		              plan.s.v);
		ck_assert(p < 3 || plan.wk);
		ck_assert_msg(plan.wstage && plan.wr == (p == 1), "%s: weights staged %d, along rows %d", wide[p],
		              plan.wstage, plan.wr);
		ck_assert_msg(e < 1e-5, "%s: %g", wide[p], e);
		arena_free(&arena);
	}
}
END_TEST

/* PTX for both targets, every pattern, two shapes: it must name its target,
 * its kernel and the ISA version (8.1 where sm_90's vector red adds to C). */
START_TEST(ptx_for_both_targets)
{
	static const char *const sms[] = {"sm_80", "sm_90"};
	int vred = 0;
	for (int p = 0; p < 2 * NPATTERNS; p++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_pattern(&arena, patterns[p / 2], shapes[p % 2]);
		const OpResult *op = &prog.ops[0];
		for (int t = 0; t < 2; t++) {
			PtxKernelSpec spec = {.k = {op->ir, {op->shape.M, op->shape.K, op->shape.N, PAT_F32, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "kern", 1, {0}, false, 0},
			                      .s = ptx_default_schedule};
			char *ptx = NULL, err[PTX_ERR_MAX];
			ck_assert_msg(ptx_compile(&spec, 1, sms[t], &ptx, NULL, err), "%s", err);
			char target[32];
			snprintf(target, sizeof target, ".target %s", sms[t]);
			ck_assert_ptr_nonnull(strstr(ptx, target));
			ck_assert_ptr_nonnull(strstr(ptx, ".entry kern("));
			ck_assert_ptr_nonnull(
				strstr(ptx, spec.plan.vred ? ".version " PTX_ISA_VERSION_VRED "\n" : ".version " PTX_ISA_VERSION "\n"));
			ck_assert(spec.plan.vred == (strstr(ptx, "red.global.add.v4.f32") != NULL));
			vred += spec.plan.vred;
			free(ptx);
		}
		arena_free(&arena);
	}
	ck_assert_int_gt(vred, 0);
	char *ptx = NULL, err[PTX_ERR_MAX];
	PtxKernelSpec none = {.s = ptx_default_schedule};
	ck_assert(!ptx_compile(&none, 0, "sm_70", &ptx, NULL, err));
	ck_assert_ptr_nonnull(strstr(err, "sm_70"));
}
END_TEST

/* ---- tensor cores: the emulator runs a block's threads taking turns, each
 * mma completing once a warp's 32 lanes have passed their fragments ---- */

/* x rounded to f16 or bf16 and back. */
static float round_half(float x, PatDtype dt)
{
	return dt == PAT_F16 ? fp16_to_f32(f32_to_fp16(x)) : bf16_to_f32(f32_to_bf16(x));
}

/* Runs the tensor-core kernel of op (dtype dt) on the emulator; returns its
 * relative error against the float64 product of the weight and X rounded
 * to dt (+inf where an element of C is left unwritten).  swap: the first
 * pair of the last loop's index reversed.  fail: the emulation expected to
 * fail with a message containing it (returns 0).  sm and st_out as
 * emulate_counted's. */
static double emulate_tc_fail(const OpResult *op, PatDtype dt, PatLayout layout, const PtxSchedule *sched, const char *sm,
                              PtxPlan *plan_out, bool swap, const char *fail, PtxEmuStats *st_out)
{
	const int64_t N = op->shape.N;
	KernelCase kc;
	kernel_case_init(&kc, op, layout, N);
	LowerKernel lk = {op->ir, {op->shape.M, op->shape.K, N, dt, layout, PAT_ACT_NONE, false}, "emu", 1, {0}, false, 0};
	/* 16-bit X and weights (as the device gets them: ptx_weights); the
	 * reference on the same rounded values */
	uint16_t *x16 = malloc((size_t)(op->shape.K * N) * sizeof *x16);
	ck_assert(x16);
	for (int64_t i = 0; i < op->shape.K * N; i++) {
		x16[i] = dt == PAT_F16 ? f32_to_fp16(kc.x[i]) : f32_to_bf16(kc.x[i]);
		kc.x[i] = round_half(kc.x[i], dt);
	}
	for (int64_t i = 0; i < op->shape.M * op->shape.K; i++)
		kc.dense[i] = round_half(kc.dense[i], dt);
	PtxPlan plan;
	char err[PTX_ERR_MAX];
	int32_t *pair = kc.mask.index[op->ir->nloops - 1];
	if (swap) {
		const int32_t i0 = pair[0];
		pair[0] = pair[1], pair[1] = i0;
	}
	ptx_plan_target(&lk, sched, sm, &plan);
	PtxWeights w;
	ck_assert(ptx_weights(&lk, &plan, kc.values, kc.nvalues, &kc.mask, &w));
	PtxEmuStats st = {.count_access = st_out != NULL};
	const bool ran = ptx_emulate(&lk, sched, sm, x16, w.values, w.index, kc.c, &plan, &st, err);
	ptx_weights_free(&w);
	if (ran)
		check_traffic(&lk, &plan, &st);
	if (st_out)
		*st_out = st;
	ck_assert_msg(ran == !fail, "%s", ran ? "the emulation ran" : err);
	ck_assert_msg(!fail || strstr(err, fail), "%s: %s", fail, err);
	ck_assert_msg(plan.tc, "%s", plan.tc_why);
	double e = fail ? 0 : kernel_case_error(&kc);
	free(x16);
	kernel_case_free(&kc);
	if (plan_out)
		*plan_out = plan;
	return e;
}

static double emulate_tc(const OpResult *op, PatDtype dt, PatLayout layout, const PtxSchedule *sched,
                         PtxPlan *plan_out)
{
	return emulate_tc_fail(op, dt, layout, sched, "sm_90", plan_out, false, NULL, NULL);
}

/* Dense 16 x 16 tiles (mma.sync), then 2:4 along k (mma.sp). */
static const char *const tc_patterns[] = {"apply block(16, 16, 50%);",  "apply block(32, 32, 25%);",
                                          "apply block(16, 32, 50%);",  "apply block(32, 16, 75%);",
                                          "apply nm(2, 4);", "apply hybrid(32, 32, 50%, 2, 4);"};
enum { NTC = sizeof tc_patterns / sizeof *tc_patterns, NTC_DENSE = 4 };

static Program compile_typed(Arena *arena, const char *pattern, const int64_t *shape, const char *dtype)
{
	char *text = arena_printf(arena,
	                          "include \"all.pat\";\nop w: spmm(M = %lld, K = %lld, N = %lld, dtype = %s) { %s }\n",
	                          (long long)shape[0], (long long)shape[1], (long long)shape[2], dtype, pattern);
	Program prog;
	ck_assert_msg(compile_quiet("t.pat", text, arena, &prog) == 0, "%s", text);
	return prog;
}

/* Shapes for the tensor cores: no tile divides M or K but in the first;
 * the last two have 16-byte aligned rows of X in both layouts (N and K
 * multiples of 8), so their kernels are staged, the others not in one
 * layout or both; of the staged, the last has whole slices of 64 columns
 * (no column checks in the copies), the others not. */
static const int64_t tc_shapes[][3] = {{64, 64, 160}, {100, 70, 33}, {33, 129, 17},
                                       {7, 250, 300}, {100, 72, 200}, {50, 136, 64}};
enum { NTC_SHAPES = sizeof tc_shapes / sizeof *tc_shapes };

/* The tensor-core kernels of the patterns that keep dense 16 x 16 tiles or
 * 2:4 along k (mma.sp), on shapes no tile divides (M, K and N), bf16 and
 * f16, both layouts,
 * staged where the rows of X are aligned and with staging turned off, on
 * the warp emulator against a float64 reference on the rounded inputs. */
START_TEST(tc_mapping_matches_reference)
{
	static const PatDtype dts[] = {PAT_BF16, PAT_F16};
	static const PtxSchedule plain = {.stage = -1};
	int checked = 0, staged = 0, paired = 0, whole = 0, wholecols = 0;
	for (int p = 0; p < NTC; p++)
		for (int s = 0; s < NTC_SHAPES; s++)
			for (int d = 0; d < 2; d++) {
				Arena arena;
				arena_init(&arena);
				Program prog = compile_typed(&arena, tc_patterns[p], tc_shapes[s], pat_dtype_names[dts[d]]);
				for (int l = 0; l < 2; l++)
					for (int st = 0; st < 2; st++) {
						const PatLayout layout = l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN;
						const bool aligned = l ? tc_shapes[s][1] % 8 == 0 : tc_shapes[s][2] % 8 == 0;
						if (st && !aligned)
							continue; /* the same plain kernel */
						PtxPlan plan;
						double e = emulate_tc(&prog.ops[0], dts[d], layout, st ? &plain : NULL, &plan);
						ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, %s, layout %s%s: %g", tc_patterns[p],
						              (long long)tc_shapes[s][0], (long long)tc_shapes[s][1],
						              (long long)tc_shapes[s][2], pat_dtype_names[dts[d]], l ? "nk" : "kn",
						              plan.stage ? ", staged" : "", e);
						ck_assert_msg(plan.tc_sp == (p >= NTC_DENSE), "%s: %s", tc_patterns[p], plan.tc_why);
						ck_assert_msg(plan.stage == (aligned && !st), "%s, layout %s: %s",
						              tc_patterns[p], l ? "nk" : "kn", plan.stage_why);
						staged += plan.stage;
						paired += plan.stage && plan.tc_wm == 2;
						whole += plan.stage && plan.tc_steps % PTX_TC_STAGES == 0;
						wholecols += plan.stage && tc_shapes[s][2] % (plan.tc_cols * PTX_TC_COLS) == 0;
						checked++;
					}
				arena_free(&arena);
			}
	/* 64/64/160 and the last two shapes staged in both layouts, and plain */
	ck_assert_int_eq(staged, NTC * 2 * 6);
	ck_assert(paired > 0 && paired < staged); /* warps of two 16-row chunks, and of one */
	ck_assert(whole > 0 && whole < staged);   /* walks of whole iterations (3 steps each), and not */
	ck_assert(wholecols > 0 && wholecols < staged); /* copies with and without column checks */
	ck_assert_int_eq(checked, NTC * 2 * (NTC_SHAPES * 2 + 6));
	/* a kept tile padded past K (64 k, K = 56): its X rows past K are not
	 * read, its padded weights are (ptx_traffic, checked in emulate_tc) */
	static const int64_t padded[3] = {140, 56, 296};
	Arena arena;
	arena_init(&arena);
	Program prog = compile_typed(&arena, "apply block(64, 64, 50%);", padded, "bf16");
	PtxPlan plan;
	ck_assert(emulate_tc(&prog.ops[0], PAT_BF16, PAT_LAYOUT_KN, NULL, &plan) < 1e-5 && plan.stage);
	arena_free(&arena);
	/* whole slices of columns in layout nk, several copies a thread of X
	 * (their later ones a constant further on), 32 k a step; and 16 where
	 * the kept tiles are 16 k */
	static const struct {
		const char *pattern;
		int64_t shape[3];
		int ku;
	} wide[] = {{"apply block(64, 64, 50%);", {128, 128, 256}, 2}, {"apply block(32, 16, 50%);", {96, 160, 128}, 1}};
	for (int i = 0; i < 2; i++)
		for (int l = 0; l < 2; l++) {
			arena_init(&arena);
			prog = compile_typed(&arena, wide[i].pattern, wide[i].shape, "bf16");
			const PatLayout layout = l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN;
			double e = emulate_tc(&prog.ops[0], PAT_BF16, layout, NULL, &plan);
			ck_assert_msg(e < 1e-5 && plan.stage && plan.tc_ku == wide[i].ku && plan.nsplit == 1,
			              "%s, layout %s: error %g, %d k a step, %lld parts", wide[i].pattern, l ? "nk" : "kn", e,
			              16 * plan.tc_ku, (long long)plan.nsplit);
			arena_free(&arena);
		}
}
END_TEST


/* The op's epilogue on the emulator: C = act(W X + bias (+ old C)) for
 * every activation, each kernel run with the bias and without it (NULL),
 * against float64: CUDA cores where each element's one store applies it
 * (blocks), where threads add with atomics (split-K) and where rows have
 * no owner (channel), both left to the epilogue kernel; the tensor cores
 * (bf16), without and with split-K.  One kernel a case and activation,
 * the layout and accumulate drawn so that every activation meets both
 * layouts and both the fused and the second kernel with and without
 * accumulate.  48 x 80 (which no tile divides), N = 37 at run time. */
START_TEST(epilogue_matches_reference)
{
	static const int64_t shape[3] = {48, 80, 96};
	static const struct {
		const char *pattern, *dtype;
		PtxSchedule s;
	} cases[] = {
		{"apply block(8, 8, 25%);", "f32", {0}},
		{"apply block(8, 8, 25%);", "f32", {32, 2, 4, 4, 2, 0, 0, 0, 0, 0, 0}},
		{"apply channel(50%);", "f32", {0}},
		{"apply block(16, 16, 50%);", "bf16", {0}},
		{"apply block(16, 16, 50%);", "bf16", {32, 1, 1, 1, 2, 1, 0, 0, 0, 0, 0}},
	};
	const int64_t N = 37;
	int fused = 0, after = 0, atomic = 0, checked = 0;
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_typed(&arena, cases[ci].pattern, shape, cases[ci].dtype);
		const OpResult *op = &prog.ops[0];
		const PatDtype dt = op->shape.dtype;
		for (int a = 0; a < PAT_NACTS; a++) {
			const int layout = (int)(a + ci) % 2;
			LowerKernel lk = {op->ir, op->shape, "emu_epi", 1, {0}, true, 0};
			lk.shape.layout = (PatLayout)layout;
			lk.shape.act = (PatAct)a;
			lk.shape.accumulate = (a + ci / 2) % 2;
			const PtxSchedule *s = cases[ci].s.bx ? &cases[ci].s : NULL;
			PtxPlan plan;
			char err[PTX_ERR_MAX];
			PtxEmuKernel *e = ptx_emu_open(&lk, s, "sm_90", false, true, &plan, err);
			ck_assert_msg(e, "%s", err);
			ck_assert_msg(plan.tc == (dt != PAT_F32), "%s", plan.tc_why);
			fused += !plan.epi_after, after += plan.epi_after, atomic += plan.atomic;
			for (int with_bias = 0; with_bias < 2; with_bias++) {
				KernelCase kc;
				kernel_case_init(&kc, op, lk.shape.layout, N);
				const int64_t M = kc.M, K = kc.K;
				uint16_t *x16 = NULL;
				if (dt != PAT_F32) {
					x16 = malloc((size_t)(K * N) * sizeof *x16);
					ck_assert(x16);
					for (int64_t i = 0; i < K * N; i++) {
						x16[i] = f32_to_bf16(kc.x[i]);
						kc.x[i] = round_half(kc.x[i], dt);
					}
					for (int64_t i = 0; i < M * K; i++)
						kc.dense[i] = round_half(kc.dense[i], dt);
				}
				float *bias = malloc((size_t)M * sizeof *bias), *old = malloc((size_t)(M * N) * sizeof *old);
				ck_assert(bias && old);
				for (int64_t m = 0; m < M; m++)
					bias[m] = (float)((m * 7) % 13) / 6.5f - 1.0f;
				for (int64_t i = 0; i < M * N; i++) /* the old C, where the op accumulates */
					kc.c[i] = old[i] = (float)((i * 5) % 11) / 5.5f - 1.0f;
				PtxWeights w;
				ck_assert(ptx_weights(&lk, &plan, kc.values, kc.nvalues, &kc.mask, &w));
				ck_assert_msg(ptx_emu_run(e, N, x16 ? (const void *)x16 : kc.x, w.values, w.index,
				                          with_bias ? bias : NULL, kc.c, NULL, err),
				              "%s", err);
				ptx_weights_free(&w);
				double num = 0, den = 0;
				const bool kn = layout == PAT_LAYOUT_KN;
				for (int64_t m = 0; m < M; m++)
					for (int64_t n = 0; n < N; n++) {
						double ref = with_bias ? bias[m] : 0;
						for (int64_t k = 0; k < K; k++)
							ref += (double)kc.dense[m * K + k] * (kn ? kc.x[k * N + n] : kc.x[n * K + k]);
						const int64_t at = kn ? m * N + n : n * M + m;
						ref = kernel_act((PatAct)a, ref + (lk.shape.accumulate ? old[at] : 0));
						const double got = kc.c[at];
						num += isnan(got) ? INFINITY : (got - ref) * (got - ref);
						den += ref * ref;
					}
				const double rel = sqrt(num / (den > 0 ? den : 1));
				ck_assert_msg(rel < 1e-5, "%s (%s), layout %s, %s%s%s: %g", cases[ci].pattern,
				              s ? "split-K" : "patc's plan", pat_layout_names[layout], pat_act_names[a],
				              with_bias ? ", bias" : "", lk.shape.accumulate ? ", accumulate" : "", rel);
				checked++;
				free(bias), free(old), free(x16);
				kernel_case_free(&kc);
			}
			ptx_emu_close(e);
		}
		arena_free(&arena);
	}
	ck_assert_int_eq(checked, 5 * PAT_NACTS * 2);
	ck_assert_int_gt(fused, 0);
	ck_assert_int_gt(after, 0);
	ck_assert_int_gt(atomic, 0);
}
END_TEST

/* One runtime-N kernel's run at N (dt: f32 on CUDA cores, else the tensor
 * cores' 16-bit X and weights, the reference on the rounded values):
 * its error against float64, +inf where C is left unwritten or written
 * outside. */
static double runtime_n_run(PtxEmuKernel *e, const LowerKernel *lk, const PtxPlan *plan, const OpResult *op, int64_t N)
{
	const PatDtype dt = lk->shape.dtype;
	KernelCase kc;
	kernel_case_init(&kc, op, lk->shape.layout, N);
	uint16_t *x16 = NULL;
	const void *x = kc.x;
	if (dt != PAT_F32) {
		x16 = malloc((size_t)(op->shape.K * N) * sizeof *x16 + 16);
		ck_assert(x16);
		for (int64_t i = 0; i < op->shape.K * N; i++) {
			x16[i] = dt == PAT_F16 ? f32_to_fp16(kc.x[i]) : f32_to_bf16(kc.x[i]);
			kc.x[i] = round_half(kc.x[i], dt);
		}
		for (int64_t i = 0; i < op->shape.M * op->shape.K; i++)
			kc.dense[i] = round_half(kc.dense[i], dt);
		x = x16;
	}
	PtxWeights w;
	ck_assert(ptx_weights(lk, plan, kc.values, kc.nvalues, &kc.mask, &w));
	char err[PTX_ERR_MAX];
	ck_assert_msg(ptx_emu_run(e, N, x, w.values, w.index, NULL, kc.c, NULL, err), "N = %lld: %s", (long long)N, err);
	ptx_weights_free(&w);
	const double err_rel = kernel_case_error(&kc);
	free(x16);
	kernel_case_free(&kc);
	return err_rel;
}

/* One kernel compiled for N at run time (tuned for the nominal 96) serves
 * every N: each stdlib pattern (f32, CUDA cores; and the tensor-core
 * patterns in bf16) on 48 x 80, which no tile divides, both layouts,
 * sm_80 and sm_90 in turn, at N = 1, 2, 7, 64, 333 and the nominal N, C
 * NaN first and guarded, each against float64.  And where a kernel for N
 * a multiple of 8 (n_align, the -o launcher's first) plans otherwise (the
 * vector loads of X, the tensor cores' staging in layout kn), that one at
 * N = 8, 104 (a partial block of columns) and 96. */
START_TEST(runtime_n_every_stdlib_pattern)
{
	static const int64_t shape[3] = {48, 80, 96};
	static const int64_t ns[] = {1, 2, 7, 64, 333, 96};
	enum { NN = sizeof ns / sizeof *ns };
	static const int64_t ns8[] = {8, 104, 96};
	int checked = 0, kernels = 0, aligned = 0;
	for (int p = 0; p < NPATTERNS + NTC; p++) {
		Arena arena;
		arena_init(&arena);
		const bool tc = p >= NPATTERNS;
		Program prog = tc ? compile_typed(&arena, tc_patterns[p - NPATTERNS], shape, "bf16")
		                  : compile_pattern(&arena, patterns[p], shape);
		const OpResult *op = &prog.ops[0];
		for (int layout = 0; layout < 2; layout++) {
			LowerKernel lk = {op->ir, op->shape, "emu_rt", 1, {0}, true, 0};
			lk.shape.layout = (PatLayout)layout;
			const char *sm = (p + layout) % 2 ? "sm_80" : "sm_90";
			PtxPlan plan;
			char err[PTX_ERR_MAX];
			PtxEmuKernel *e = ptx_emu_open(&lk, NULL, sm, false, false, &plan, err);
			ck_assert_msg(e, "%s", err);
			ck_assert_msg(plan.tc == tc, "%s: %s", tc ? tc_patterns[p - NPATTERNS] : patterns[p], plan.tc_why);
			kernels++;
			for (int j = 0; j < NN; j++) {
				const double rel = runtime_n_run(e, &lk, &plan, op, ns[j]);
				ck_assert_msg(rel < 1e-5, "%s on 48x80 (tuned for N = 96), layout %s, %s, N = %lld: %g",
				              tc ? tc_patterns[p - NPATTERNS] : patterns[p], pat_layout_names[layout], sm,
				              (long long)ns[j], rel);
				checked++;
			}
			ptx_emu_close(e);
			/* (as -o decides whether an op needs both) */
			PtxPlan p0, p8;
			memset(&p0, 0, sizeof p0), memset(&p8, 0, sizeof p8);
			ptx_plan_target(&lk, NULL, sm, &p0);
			lk.n_align = 8;
			ptx_plan_target(&lk, NULL, sm, &p8);
			if (!memcmp(&p0, &p8, sizeof p0))
				continue;
			PtxPlan plan8;
			e = ptx_emu_open(&lk, NULL, sm, false, false, &plan8, err);
			ck_assert_msg(e, "%s", err);
			for (size_t j = 0; j < sizeof ns8 / sizeof *ns8; j++) {
				const double rel = runtime_n_run(e, &lk, &plan8, op, ns8[j]);
				ck_assert_msg(rel < 1e-5, "%s on 48x80 (tuned for N = 96), layout %s, %s, N = %lld, a multiple of 8: %g",
				              tc ? tc_patterns[p - NPATTERNS] : patterns[p], pat_layout_names[layout], sm,
				              (long long)ns8[j], rel);
				aligned += j == 0;
			}
			ptx_emu_close(e);
		}
		arena_free(&arena);
	}
	ck_assert_int_gt(aligned, 10); /* (the vector loads of X in layout kn, the tensor cores' staging) */
	ck_assert_int_eq(kernels, (NPATTERNS + NTC) * 2);
	ck_assert_int_eq(checked, (NPATTERNS + NTC) * 2 * NN);
}
END_TEST

/* The emulator holds mma.sp's metadata to the pairs the hardware takes (two
 * distinct k, ascending): a 2:4 index with one pair reversed fails there,
 * staged and plain, never a silent result. */
START_TEST(tc_sp_metadata_checked)
{
	static const PtxSchedule plain = {.stage = -1};
	Arena arena;
	arena_init(&arena);
	Program prog = compile_typed(&arena, "apply nm(2, 4);", tc_shapes[0], "bf16");
	for (int st = 0; st < 2; st++) {
		PtxPlan plan;
		emulate_tc_fail(&prog.ops[0], PAT_BF16, PAT_LAYOUT_KN, st ? &plain : NULL, "sm_90", &plan, true, "invalid index pair",
		                NULL);
		ck_assert(plan.tc_sp && plan.stage == !st);
	}
	arena_free(&arena);
}
END_TEST

/* Hopper's warpgroup mma (schedule wg): patterns whose kept tiles give 64
 * rows the same k (a block of 64 and of 128 columns, the wgmma's N), and
 * transposed those whose tiles are 16, 32 or 48 rows (the rows the wgmma's
 * N, 64 columns its M), on shapes no tile divides, bf16 and f16, both
 * layouts, steps of 16 k and of 32 (two wgmma a barrier), on the emulator, which
 * reads both operands through the kernel's descriptors as the PTX ISA
 * lays them out; the PTX (sm_90a) names the wgmma, and on sm_80 the
 * schedule's wg is dropped.  The sparse tensor cores keep mma.sp. */
START_TEST(tc_wgmma_matches_reference)
{
	static const char *const pats[] = {"apply block(64, 64, 50%);", "apply block(64, 32, 25%);",
	                                   "apply block(128, 16, 50%);", "apply block(32, 32, 25%);",
	                                   "apply block(16, 16, 50%);", "apply block(48, 32, 50%);"};
	enum { NWG = 3 }; /* the first NWG give 64 rows the same k; the others are transposed */
	static const int64_t wshapes[][3] = {{200, 136, 72}, {130, 64, 200}, {64, 72, 40}};
	static const PatDtype dts[] = {PAT_BF16, PAT_F16};
	static const PtxSchedule wg = {.wg = 1};
	int checked = 0, narrow = 0, onestep = 0, twostep_t = 0, narrow_t = 0;
	for (size_t p = 0; p < sizeof pats / sizeof *pats; p++)
		for (size_t s = 0; s < sizeof wshapes / sizeof *wshapes; s++)
			for (int d = 0; d < 2; d++) {
				Arena arena;
				arena_init(&arena);
				Program prog = compile_typed(&arena, pats[p], wshapes[s], pat_dtype_names[dts[d]]);
				for (int l = 0; l < 2; l++) {
					PtxPlan plan;
					double e = emulate_tc(&prog.ops[0], dts[d], l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN, &wg, &plan);
					ck_assert_msg(plan.tc_wg && plan.stage && plan.tc_wgt == (p >= NWG), "%s: %s", pats[p],
					              plan.stage_why);
					ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, %s, layout %s, wgmma n%d: %g", pats[p],
					              (long long)wshapes[s][0], (long long)wshapes[s][1], (long long)wshapes[s][2],
					              pat_dtype_names[dts[d]], l ? "nk" : "kn", plan.tc_wgn, e);
					narrow += !plan.tc_wgt && plan.tc_wgn == 64;
					onestep += !plan.tc_wgt && plan.tc_wgu == 1;
					twostep_t += plan.tc_wgt && plan.tc_wgu == 2;
					narrow_t += plan.tc_wgt && plan.tc_cols < 4;
					checked++;
				}
				arena_free(&arena);
			}
	ck_assert_int_eq(checked, 6 * 3 * 2 * 2);
	ck_assert(narrow > 0 && narrow < checked / 2);
	ck_assert(onestep > 0 && onestep < checked / 2); /* steps of one wgmma and of two (32 k) */
	ck_assert(twostep_t > 0 && twostep_t < checked / 2);
	ck_assert(narrow_t > 0 && narrow_t < checked / 2); /* transposed: blocks of 256 columns and fewer */

	Arena arena;
	arena_init(&arena);
	Program prog = compile_typed(&arena, pats[0], wshapes[0], "bf16");
	static const char *const sms[] = {"sm_90", "sm_80"};
	for (int t = 0; t < 2; t++) {
		PtxKernelSpec spec = {.k = {prog.ops[0].ir, {200, 136, 72, PAT_BF16, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "wg", 1, {0}, false, 0}, .s = wg};
		char *ptx, err[PTX_ERR_MAX];
		ck_assert_msg(ptx_compile(&spec, 1, sms[t], &ptx, NULL, err), "%s", err);
		ck_assert_msg((strstr(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") != NULL) == !t, "%s",
		              sms[t]);
		ck_assert((strstr(ptx, ".target sm_90a") != NULL) == !t);
		ck_assert(spec.plan.tc_wg == !t);
		free(ptx);
	}
	Program sp = compile_typed(&arena, "apply nm(2, 4);", wshapes[0], "bf16");
	LowerKernel lk = {sp.ops[0].ir, {200, 136, 72, PAT_BF16, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "k", 1, {0}, false, 0};
	PtxPlan plan;
	ptx_plan(&lk, &wg, &plan);
	ck_assert(plan.tc_sp && !plan.tc_wg);
	arena_free(&arena);
}
END_TEST

/* Split-K on the tensor cores: a staged op whose grid would leave the GPU
 * idle splits its walk over blockIdx.z, each part adding into the zeroed C
 * with atomics; on mma.sync, mma.sp and wgmma (and transposed), both
 * layouts, shapes no tile divides, against the float64 reference. */
START_TEST(tc_split_matches_reference)
{
	static const char *const pats[] = {"apply block(32, 32, 25%);", "apply block(16, 16, 50%);", "apply nm(2, 4);",
	                                   "apply block(64, 64, 50%);"};
	static const int64_t sshapes[][3] = {{64, 600, 72}, {40, 1000, 48}};
	static const PtxSchedule wg = {.wg = 1};
	int checked = 0;
	for (size_t p = 0; p < sizeof pats / sizeof *pats; p++)
		for (size_t s = 0; s < sizeof sshapes / sizeof *sshapes; s++) {
			Arena arena;
			arena_init(&arena);
			Program prog = compile_typed(&arena, pats[p], sshapes[s], "bf16");
			for (int l = 0; l < 2; l++) {
				PtxPlan plan;
				const bool w = p == 3 || (p == 0 && s == 1); /* block(32, 32) on 40/1000/48: transposed wgmma */
				double e = emulate_tc(&prog.ops[0], PAT_BF16, l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN, w ? &wg : NULL, &plan);
				ck_assert_msg(plan.stage && plan.nsplit > 1 && plan.atomic && plan.zero && plan.tc_wg == w &&
				                      plan.tc_wgt == (w && p == 0),
				              "%s on %lldx%lldx%lld: %lld parts", pats[p], (long long)sshapes[s][0],
				              (long long)sshapes[s][1], (long long)sshapes[s][2], (long long)plan.nsplit);
				ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, layout %s, %lld parts: %g", pats[p],
				              (long long)sshapes[s][0], (long long)sshapes[s][1], (long long)sshapes[s][2],
				              l ? "nk" : "kn", (long long)plan.nsplit, e);
				checked++;
			}
			arena_free(&arena);
		}
	ck_assert_int_eq(checked, 4 * 2 * 2);
}
END_TEST

/* The staged tensor-core walk through 2, 4 and 6 buffers (schedule tcs)
 * instead of 3: mma.sync (32-k steps where that many of them fit, else
 * 16), mma.sp, wgmma and transposed, split-K, both layouts, shapes no tile
 * divides, against the float64 reference; the plan keeps within a
 * block's static shared memory in layout nk (fewer buffers where even
 * 16-k steps do not fit) and takes dynamic shared memory past it in kn. */
START_TEST(tc_stages_match_reference)
{
	static const char *const pats[] = {"apply block(32, 32, 25%);", "apply block(64, 64, 50%);", "apply nm(2, 4);"};
	static const int64_t sshapes[][3] = {{200, 136, 72}, {64, 600, 72}}; /* the second splits k */
	static const int tcs[] = {2, 4, 6};
	int checked = 0, deep = 0, shallow = 0, split = 0, wgmma = 0, ku16 = 0, dyn = 0;
	for (size_t p = 0; p < sizeof pats / sizeof *pats; p++)
		for (size_t s = 0; s < sizeof sshapes / sizeof *sshapes; s++) {
			Arena arena;
			arena_init(&arena);
			Program prog = compile_typed(&arena, pats[p], sshapes[s], "bf16");
			for (int t = 0; t < 3; t++)
				for (int w = 0; w < (p == 2 ? 1 : 2); w++)
					for (int l = 0; l < 2; l++) {
						const PtxSchedule sched = {.wg = w, .tcs = tcs[t], .smem = l ? PTX_STATIC_SMEM : 0};
						PtxPlan plan;
						double e = emulate_tc(&prog.ops[0], PAT_BF16, l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN, &sched, &plan);
						ck_assert_msg(plan.stage && plan.tc_stages >= 2 && plan.tc_stages <= tcs[t], "%s: %d of %d",
						              pats[p], plan.tc_stages, tcs[t]);
						ck_assert(!l || !plan.smem_dyn);
						ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, layout %s, %d buffers of %d k%s: %g", pats[p],
						              (long long)sshapes[s][0], (long long)sshapes[s][1], (long long)sshapes[s][2],
						              l ? "nk" : "kn", plan.tc_stages, ptx_tc_step_k(&plan), plan.tc_wg ? ", wgmma" : "",
						              e);
						deep += plan.tc_stages > PTX_TC_STAGES;
						shallow += plan.tc_stages < PTX_TC_STAGES;
						split += plan.nsplit > 1;
						wgmma += plan.tc_wg;
						ku16 += !plan.tc_sp && !plan.tc_wg && plan.nsplit == 1 && plan.tc_ku <= 1 && tcs[t] == 6;
						dyn += plan.smem_dyn > PTX_STATIC_SMEM;
						checked++;
					}
			arena_free(&arena);
		}
	ck_assert_int_eq(checked, (2 * 2 + 1) * 2 * 3 * 2);
	ck_assert(deep > checked / 3 && shallow > 0 && split > 0 && wgmma > 0 && ku16 > 0 && dyn > 0);
}
END_TEST

/* ptxas -v on a kernel's PTX where the CUDA toolkit has one (else a
 * note, and true): whether it assembles with no spills, and its static
 * shared memory in *smem. */
static bool ptxas_ok(const char *ptx, const char *arch, long *smem)
{
	*smem = 0;
	const char *ptxas = access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? "/usr/local/cuda/bin/ptxas" : NULL;
	if (!ptxas && system("command -v ptxas >/dev/null 2>&1") == 0)
		ptxas = "ptxas";
	if (!ptxas) {
		fprintf(stderr, "note: ptxas not found: the dynamic shared memory's PTX not assembled\n");
		return true;
	}
	char path[] = "/tmp/patc-ptxas-XXXXXX", cmd[512], line[512];
	const int fd = mkstemp(path);
	ck_assert(fd >= 0);
	FILE *f = fdopen(fd, "w");
	ck_assert(f && fputs(ptx, f) >= 0 && fclose(f) == 0);
	snprintf(cmd, sizeof cmd, "%s -arch=%s -v %s -o /dev/null 2>&1; echo rc=$?", ptxas, arch, path);
	FILE *p = popen(cmd, "r");
	ck_assert(p);
	bool ok = false, spills = false;
	while (fgets(line, sizeof line, p)) {
		const char *q = strstr(line, " bytes smem"); /* "Used R registers, used 1 barriers, S bytes smem" */
		if (q) {
			while (q > line && q[-1] >= '0' && q[-1] <= '9')
				q--;
			*smem = atol(q);
		}
		spills |= strstr(line, "bytes spill stores") && !strstr(line, " 0 bytes spill stores");
		ok |= !strcmp(line, "rc=0\n");
	}
	pclose(p);
	unlink(path);
	return ok && !spills;
}

/* Past a block's 48 KiB of static shared memory (tcs and tcw ask, smem
 * caps): the buffers are the launch's dynamic shared memory, within the
 * target's limit (sm_86 99 KiB: fewer buffers than sm_90's 227 KiB
 * take); the PTX declares them .extern .shared and ptxas takes it; patc's
 * own plans stay static. */
START_TEST(tc_dynamic_smem)
{
	ck_assert_int_eq(ptx_smem_limit("sm_90"), 227 << 10);
	ck_assert_int_eq(ptx_smem_limit("sm_80"), 163 << 10);
	ck_assert_int_eq(ptx_smem_limit("sm_86"), 99 << 10);
	ck_assert_int_eq(ptx_smem_limit("sm_89"), 99 << 10);
	static const int64_t shape[3] = {4096, 1024, 1024};
	Arena arena;
	arena_init(&arena);
	Program b64 = compile_typed(&arena, "apply block(64, 64, 50%);", shape, "bf16");
	Program b32 = compile_typed(&arena, "apply block(32, 32, 50%);", shape, "bf16");
	LowerKernel k64 = {b64.ops[0].ir, {4096, 1024, 1024, PAT_BF16, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "k", 1, {0}, false, 0};
	LowerKernel k32 = {b32.ops[0].ir, {4096, 1024, 1024, PAT_BF16, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "k", 1, {0}, false, 0};
	PtxPlan plan;
	for (int l = 0; l < 2; l++) { /* patc's plans: static */
		k64.shape.layout = k32.shape.layout = l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN;
		ptx_plan_target(&k64, NULL, "sm_90", &plan);
		ck_assert(plan.stage && !plan.smem_dyn);
		ptx_plan_target(&k32, NULL, "sm_90", &plan);
		ck_assert(plan.stage && !plan.smem_dyn);
	}
	k64.shape.layout = k32.shape.layout = PAT_LAYOUT_KN;
	/* 6 buffers of 32 k: 64 rows x 40 halves of weights, 32 x 136 of X */
	const PtxSchedule six = {.tcs = 6};
	ptx_plan_target(&k64, &six, "sm_90", &plan);
	ck_assert_int_eq(plan.tc_stages, 6);
	ck_assert_int_eq(ptx_tc_step_k(&plan), 32);
	ck_assert_int_eq(plan.smem_dyn, 6 * (64 * 40 + 32 * 136) * 2);
	/* capped at the static 48 KiB: 16-k steps */
	const PtxSchedule six_static = {.tcs = 6, .smem = PTX_STATIC_SMEM};
	ptx_plan_target(&k64, &six_static, "sm_90", &plan);
	ck_assert(plan.tc_stages == 6 && ptx_tc_step_k(&plan) == 16 && !plan.smem_dyn);
	/* 32 x 32 blocks of 256 columns: 6 of 32 k take 114 KiB, over sm_86's
	 * 99, which takes 6 of 16 k (32 x 24 halves of weights, 16 x 264 of X) */
	ptx_plan_target(&k32, &six, "sm_90", &plan);
	ck_assert(plan.tc_stages == 6 && ptx_tc_step_k(&plan) == 32 && plan.smem_dyn == 6 * (32 * 40 + 32 * 264) * 2);
	ptx_plan_target(&k32, &six, "sm_86", &plan);
	ck_assert(plan.tc_stages == 6 && ptx_tc_step_k(&plan) == 16 && plan.smem_dyn == 6 * (32 * 24 + 16 * 264) * 2);
	const PtxSchedule huge = {.tcs = 6, .smem = 1 << 20}; /* past the limit: the limit */
	ptx_plan_target(&k32, &huge, "sm_86", &plan);
	ck_assert(ptx_tc_step_k(&plan) == 16 && plan.smem_dyn <= 99 << 10);

	static const char *const sms[] = {"sm_90", "sm_80"};
	for (int t = 0; t < 2; t++) {
		PtxKernelSpec spec = {.k = k64, .s = six};
		char *ptx, err[PTX_ERR_MAX];
		ck_assert_msg(ptx_compile(&spec, 1, sms[t], &ptx, NULL, err), "%s", err);
		ck_assert(spec.plan.smem_dyn > PTX_STATIC_SMEM);
		ck_assert_ptr_nonnull(strstr(ptx, ".extern .shared .align 16 .b8 k_smem[];"));
		ck_assert_ptr_null(strstr(ptx, "k_$_tcs"));
		long smem;
		ck_assert_msg(ptxas_ok(ptx, sms[t], &smem), "%s", sms[t]);
		ck_assert_int_eq(smem, 0); /* (none static) */
		free(ptx);
	}
	arena_free(&arena);
}
END_TEST

/* Staged tensor-core blocks of 2 and 8 warps (schedule tcw) instead of 4:
 * 8 chunks of 16 rows where the m loop keeps them the same k (2:4, 128 x
 * 128 blocks; smaller kept tiles as with 4 warps), on mma.sync and mma.sp,
 * split-K, both layouts, shapes no tile divides, against the float64
 * reference. */
START_TEST(tc_warps_match_reference)
{
	static const char *const pats[] = {"apply block(32, 32, 25%);", "apply block(64, 64, 50%);", "apply nm(2, 4);",
	                                   "apply block(128, 128, 50%);"};
	static const int64_t sshapes[][3] = {{128, 136, 200}, {64, 600, 72}}; /* the second splits k */
	static const int tcw[] = {2, 8};
	int checked = 0, eight = 0, rows8 = 0, two = 0, split = 0;
	for (size_t p = 0; p < sizeof pats / sizeof *pats; p++)
		for (size_t s = 0; s < sizeof sshapes / sizeof *sshapes; s++) {
			Arena arena;
			arena_init(&arena);
			Program prog = compile_typed(&arena, pats[p], sshapes[s], "bf16");
			for (int t = 0; t < 2; t++)
				for (int l = 0; l < 2; l++) {
					const PtxSchedule sched = {.tcw = tcw[t]};
					PtxPlan plan;
					double e = emulate_tc(&prog.ops[0], PAT_BF16, l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN, &sched, &plan);
					ck_assert_msg(plan.stage && plan.s.by <= tcw[t] && plan.tc_rows <= 2 * tcw[t], "%s: %d warps of %d",
					              pats[p], plan.s.by, tcw[t]);
					ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, layout %s, %d warps (%d x %d): %g", pats[p],
					              (long long)sshapes[s][0], (long long)sshapes[s][1], (long long)sshapes[s][2],
					              l ? "nk" : "kn", plan.s.by, plan.tc_rows, plan.tc_cols, e);
					/* (64 x 64 blocks: 4 chunks, with 8 warps as with 4) */
					ck_assert_msg(p != 1 || plan.s.by == (t ? 4 : 2), "%s, %d: %d warps", pats[p], tcw[t],
					              plan.s.by);
					eight += plan.s.by == 8;
					rows8 += plan.tc_rows == 8;
					two += plan.s.by == 2;
					split += plan.nsplit > 1;
					checked++;
				}
			arena_free(&arena);
		}
	ck_assert_int_eq(checked, 4 * 2 * 2 * 2);
	ck_assert_msg(eight > 0 && rows8 > 0 && two > 0 && split > 0, "%d %d %d %d", eight, rows8, two, split);
}
END_TEST

/* Which kernels take the tensor cores: 16-bit ops whose kept tiles are dense
 * 16 x 16 tiles; the others say why not. */
START_TEST(tc_choice)
{
	static const struct {
		const char *pattern, *dtype;
		bool tc;
	} want[] = {
		{"apply block(32, 32, 25%);", "bf16", true}, {"apply block(16, 16, 50%);", "f16", true},
		{"apply block(32, 32, 25%);", "f32", false}, {"apply block(8, 8, 25%);", "bf16", false},
		{"apply nm(2, 4);", "bf16", true},          {"apply row_balanced(25%);", "f16", false},
		{"apply block(24, 32, 25%);", "bf16", false}, {"apply nm(1, 4);", "bf16", false},
		/* dense 16 x 16 tiles, but other rows kept in each k region (the GPU rules refuse it;
		 * a direct caller gets the CUDA cores, whose atomics follow it) */
		{"split m -> mo, mt : _, 16; split k -> ko, kt : _, 16; reorder ko, mo, mt, kt; perforate mo keep 1;",
		 "bf16", false},
	};
	static const int64_t shape[3] = {256, 256, 64};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_typed(&arena, want[i].pattern, shape, want[i].dtype);
		const OpResult *op = &prog.ops[0];
		for (int l = 0; l < 2; l++) { /* either layout */
			LowerKernel lk = {op->ir, {op->shape.M, op->shape.K, op->shape.N, op->shape.dtype, l ? PAT_LAYOUT_NK : PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "k", 1, {0}, false, 0};
			PtxPlan plan;
			ptx_plan(&lk, NULL, &plan);
			ck_assert_msg(plan.tc == want[i].tc, "%s %s: tc %d", want[i].pattern, want[i].dtype, plan.tc);
			ck_assert_ptr_nonnull(plan.tc_why);
			ck_assert_ptr_nonnull(strstr(plan.tc_why, want[i].tc ? "tensor cores:" : "CUDA cores"));
		}
		arena_free(&arena);
	}
}
END_TEST

/* Random configurations (seeded): a pattern, a shape that its tiles may
 * not divide, a dtype, a layout and a schedule (patc's, patc's capped at 4
 * rows a thread or unstaged, on wgmma, or drawn: threads, columns and rows
 * a thread, split-K, staging; a third with split-K's workspace, a fifth
 * with 2, 4 or 6 buffers on the tensor cores, a seventh with blocks of 2
 * or 8 warps there; for sm_80, sm_86, sm_89 or sm_90), run on the emulator against float64 and their stage
 * copies against ptx_traffic; what the pattern cannot fit, or
 * the GPU rules refuse, is drawn again.  PATC_RANDOM_RUNS and
 * PATC_RANDOM_SEED make it a longer soak with other draws. */
START_TEST(random_configurations_match_reference)
{
	static const char *const pats[] = {
		"apply block(8, 8, 25%);",   "apply block(32, 32, 50%);", "apply block(16, 32, 25%);",
		"apply block(48, 16, 50%);", "apply block(64, 64, 50%);", "apply tile_v(16, 25%);",
		"apply tile_h(16, 50%);",    "apply channel(50%);",       "apply channel_in(25%);",
		"apply row_balanced(25%);",  "apply nm(2, 4);",           "apply nm(1, 8);",
		"apply unstructured(10%);",  "apply hybrid(16, 32, 50%);", "apply hybrid(32, 32, 50%, 2, 4);"};
	static const char *const dts[] = {"f32", "bf16", "f16"};
	static const int bxs[] = {16, 32, 64}, vs[] = {1, 2, 4, 8};
	const char *env_runs = getenv("PATC_RANDOM_RUNS"), *env_seed = getenv("PATC_RANDOM_SEED");
	const int runs = env_runs ? atoi(env_runs) : 120;
	uint64_t rnd = env_seed ? strtoull(env_seed, NULL, 10) : 20261203;
	ck_assert_int_ge(runs, 12);
	int ran = 0, tc = 0, staged = 0;
	while (ran < runs) {
		const char *pat = pats[test_rnd(&rnd, sizeof pats / sizeof *pats)];
		int64_t shape[3] = {8 + test_rnd(&rnd, 160), 16 + test_rnd(&rnd, 240), 1 + test_rnd(&rnd, 240)};
		if (test_rnd(&rnd, 2))
			shape[2] = (shape[2] + 7) / 8 * 8; /* X's rows 16-byte aligned in layout kn */
		if (test_rnd(&rnd, 2))
			shape[1] = (shape[1] + 7) / 8 * 8; /* and in layout nk */
		const char *dt = dts[test_rnd(&rnd, 3)];
		const PatLayout layout = test_rnd(&rnd, 2) ? PAT_LAYOUT_NK : PAT_LAYOUT_KN;
		PtxSchedule s = {0};
		switch (test_rnd(&rnd, 5)) {
		case 1:
			s = (PtxSchedule){bxs[test_rnd(&rnd, 3)], 1 + (int)test_rnd(&rnd, 8), vs[test_rnd(&rnd, 4)],
			                  vs[test_rnd(&rnd, 4)], 1 + (int)test_rnd(&rnd, 4), (int)test_rnd(&rnd, 2), 0, 0, 0, 0, 0};
			break;
		case 2: s.r = 4; break;
		case 3: s.stage = -1; break;
		case 4: s.wg = 1; break;
		default: break;
		}
		Arena arena;
		arena_init(&arena);
		char *text = arena_printf(&arena, "include \"all.pat\";\nop w: spmm(M = %lld, K = %lld, N = %lld, dtype = %s) { %s }\n",
		                          (long long)shape[0], (long long)shape[1], (long long)shape[2], dt, pat);
		Program prog;
		if (compile_quiet("t.pat", text, &arena, &prog) != 0 || !prog.ops[0].ok || pir_check_gpu(prog.ops[0].ir, NULL, 0)) {
			arena_free(&arena);
			continue;
		}
		const OpResult *op = &prog.ops[0];
		LowerKernel lk = {op->ir, {op->shape.M, op->shape.K, op->shape.N, op->shape.dtype, layout, PAT_ACT_NONE, false}, "emu", 1, {0}, false, 0};
		PtxPlan plan;
		/* (not drawn: the draws stay the seed's) sm_86 and sm_89 as sm_80 but for
		 * their 99 KiB of shared memory */
		const char *sm = ran % 8 == 1 ? "sm_86" : ran % 8 == 5 ? "sm_89" : ran % 4 ? "sm_90" : "sm_80";
		s.wsum = ran % 3 == 0; /* (nor this) */
		s.tcs = ran % 5 == 2 ? 2 + ran % 3 * 2 : 0; /* the tensor cores' buffers: 2, 4 or 6 (nor this) */
		s.tcw = ran % 7 == 3 ? 2 + ran % 2 * 6 : 0; /* the tensor cores' warps a block: 2 or 8 (nor this) */
		ptx_plan_target(&lk, &s, sm, &plan);
		const double e = plan.tc ? emulate_tc_fail(op, op->shape.dtype, layout, &s, sm, &plan, false, NULL, NULL)
		                         : emulate_counted(op, layout, op->shape.N, &s, sm, &plan, NULL);
		ck_assert_msg(e < 1e-5, "%s, layout %s, schedule %d,%d,%d,%d,%d,%d,%d,%d,%d,%d, %s: %g", text,
		              layout ? "nk" : "kn", s.bx, s.by, s.v, s.r, s.ksplit, s.stage, s.wg, s.wsum, s.tcs, s.tcw, sm, e);
		tc += plan.tc;
		staged += plan.stage;
		ran++;
		arena_free(&arena);
	}
	ck_assert_msg(tc > runs / 6 && tc < runs * 5 / 6 && staged > runs / 6 && staged < runs * 5 / 6,
	              "%d of %d on tensor cores, %d staged", tc, runs, staged);
}
END_TEST

/* What a harness of 3,800 random configurations found: a thread's later
 * copies of X taken a constant further on under one k loop joined out of
 * order (not linear in its digit: wrong rows, error 5e36; the second with
 * patc's own schedule); and the sparse tensor cores' 32-k steps reading
 * X's rows past a kept tile's 16 k of 2:4 (the next tile's, times A's
 * padding: ptx_traffic's count, checked in emulate_tc, was short). */
START_TEST(random_configuration_regressions)
{
	static const struct {
		const char *body;
		int64_t shape[3];
		PtxSchedule s;
	} f32[] = {{"split m -> m0, m1 : _, 2; split k -> k0, k1, k2 : _, 3, 2; reorder m0, k0, m1, k2, k1; "
	            "join k2, k1 -> j; perforate k0 keep 50%;",
	            {2, 12, 4},
	            {16, 2, 4, 1, 1, 1, 0, 0, 0, 0, 0}},
	           {"split m -> m0, m1 : _, 16 pad; split k -> k0, k1, k2 : _, 6, 3; reorder m0, k0, m1, k2, k1; "
	            "join k2, k1 -> j; perforate k0 keep 50%;",
	            {159, 288, 160},
	            {0}}};
	for (int i = 0; i < 2; i++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_typed(&arena, f32[i].body, f32[i].shape, "f32");
		PtxPlan plan;
		double e = emulate(&prog.ops[0], PAT_LAYOUT_KN, f32[i].shape[2], &f32[i].s, &plan);
		ck_assert_msg(e < 1e-5 && plan.stage, "%s: %g%s", f32[i].body, e, plan.stage ? "" : " (not staged)");
		arena_free(&arena);
	}
	static const int64_t sp_shape[3] = {16, 32, 8};
	Arena arena;
	arena_init(&arena);
	Program prog = compile_typed(&arena, "apply hybrid(16, 16, 100%, 2, 4);", sp_shape, "bf16");
	PtxPlan plan;
	ck_assert(emulate_tc(&prog.ops[0], PAT_BF16, PAT_LAYOUT_KN, NULL, &plan) < 1e-5 && plan.tc_sp && plan.stage);
	arena_free(&arena);
}
END_TEST

/* Without a driver, opening CUDA fails with a message, never a crash. */
START_TEST(no_driver)
{
	char err[CUDA_ERR_MAX] = "";
	Cuda *cu = cuda_open(err);
	if (cu) { /* a machine with a GPU: nothing to check here */
		cuda_close(cu);
		return;
	}
	ck_assert_msg(strstr(err, "CUDA") != NULL, "%s", err);
}
END_TEST

/* The emulator takes operands aligned as cuMemAlloc's are, as the kernels'
 * 16-byte accesses need: X 4 bytes off is refused.  And what a GPU would
 * fault or hang on, or compute by chance, fails the run, each with its
 * message (PATC_EMU_INJECT, on staged kernels: fp32 on CUDA cores, bf16
 * on mma.sync and on wgmma): accesses moved off their alignment or past
 * their buffer; one warp meeting more barriers than the others; no
 * barriers (the warps race); a wait for one group of copies fewer (a
 * stage read while its copies are in flight); no copies (shared memory
 * read unwritten); on wgmma, no fence.proxy.async (the tensor cores read
 * the copies' writes unfenced) and a wait for one group of wgmma fewer (a
 * buffer copied into while a wgmma in flight reads it). */
static const char *const injects[][2] = {{"barrier", "different numbers of barriers"},
                                         {"nobarrier", "between the same two barriers: a race"},
                                         {"wait", "while a cp.async to it is in flight"},
                                         {"nocopy", "which no thread of its block wrote"},
                                         {"misaligned", "at an address not a multiple of"},
                                         {"outside", "an access outside"}};
enum { NINJECT = sizeof injects / sizeof *injects };

START_TEST(emulation_catches_faults)
{
	Arena arena;
	arena_init(&arena);
	Program prog = compile_pattern(&arena, "apply block(8, 8, 25%);", shapes[0]);
	const OpResult *op = &prog.ops[0];
	KernelCase kc;
	kernel_case_init(&kc, op, PAT_LAYOUT_KN, op->shape.N);
	LowerKernel lk = {op->ir, {op->shape.M, op->shape.K, op->shape.N, PAT_F32, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "emu", 1, {0}, false, 0};
	char err[PTX_ERR_MAX];
	const int32_t *const *index = (const int32_t *const *)kc.mask.index;
	ck_assert(!ptx_emulate(&lk, NULL, "sm_90", kc.x + 1, kc.values, index, kc.c, NULL, NULL, err));
	ck_assert_msg(strstr(err, "16-byte aligned") != NULL, "%s", err);
	PtxPlan plan;
	ck_assert_msg(ptx_emulate(&lk, NULL, "sm_90", kc.x, kc.values, index, kc.c, &plan, NULL, err), "%s", err);
	ck_assert(kernel_case_error(&kc) < 1e-5);
	ck_assert_msg(plan.stage && plan.s.by > 1, "staged %d, %d rows of threads", plan.stage, plan.s.by);
	for (int i = 0; i < NINJECT; i++) {
		setenv("PATC_EMU_INJECT", injects[i][0], 1);
		ck_assert_msg(!ptx_emulate(&lk, NULL, "sm_90", kc.x, kc.values, index, kc.c, NULL, NULL, err), "%s", injects[i][0]);
		ck_assert_msg(strstr(err, injects[i][1]) != NULL, "%s: %s", injects[i][0], err);
	}
	unsetenv("PATC_EMU_INJECT");
	kernel_case_free(&kc);

	static const PtxSchedule wg = {.wg = 1};
	static const char *const pats[] = {"apply block(16, 16, 50%);", "apply block(64, 64, 50%);"};
	for (int p = 0; p < 2; p++) {
		Program tc = compile_typed(&arena, pats[p], tc_shapes[0], "bf16");
		PtxPlan tplan;
		ck_assert(emulate_tc(&tc.ops[0], PAT_BF16, PAT_LAYOUT_KN, p ? &wg : NULL, &tplan) < 1e-5);
		ck_assert(tplan.stage && tplan.s.by > 1 && tplan.tc_wg == (p == 1) && tplan.tc_wga == (p == 1));
		for (int i = 0; i < NINJECT; i++) {
			setenv("PATC_EMU_INJECT", injects[i][0], 1);
			emulate_tc_fail(&tc.ops[0], PAT_BF16, PAT_LAYOUT_KN, p ? &wg : NULL, "sm_90", NULL, false, injects[i][1], NULL);
		}
		if (p) { /* the copies' writes passed to the tensor cores with no fence.proxy.async */
			setenv("PATC_EMU_INJECT", "nofence", 1);
			emulate_tc_fail(&tc.ops[0], PAT_BF16, PAT_LAYOUT_KN, &wg, "sm_90", NULL, false, "no fence.proxy.async", NULL);
			/* a wait for one group of wgmma fewer: a buffer copied into while
			 * a wgmma still reads it (K = 256, 3 buffers: 4 steps of 32 k,
			 * too few to split, which reuse the buffers), and at the end a
			 * wgmma left in flight (K = 64: 2 steps) */
			static const int64_t deep[3] = {64, 256, 40};
			static const PtxSchedule wg3 = {.wg = 1, .tcs = 3};
			Program tcd = compile_typed(&arena, pats[p], deep, "bf16");
			setenv("PATC_EMU_INJECT", "wgwait", 1);
			emulate_tc_fail(&tcd.ops[0], PAT_BF16, PAT_LAYOUT_KN, &wg3, "sm_90", NULL, false,
			                "while a wgmma that reads it is in flight", NULL);
			emulate_tc_fail(&tc.ops[0], PAT_BF16, PAT_LAYOUT_KN, &wg, "sm_90", NULL, false,
			                "a wgmma still in flight at the kernel's end", NULL);
		}
		unsetenv("PATC_EMU_INJECT");
	}
	arena_free(&arena);
}
END_TEST

/* How the main kernels use memory, counted on the emulator per warp-wide
 * request (PtxEmuStats) on shapes whose rows are whole sectors: shared
 * memory's loads (ldmatrix's rows among them) and the copies' writes to it
 * free of bank conflicts; the copies' reads of global memory, the other
 * loads of X and the weights and the stores to C in as few sectors as
 * their bytes need, split-K's vector red on sm_90 among them, but where
 * known otherwise: split-K's atomics before sm_90 (one float a lane, a
 * thread's columns adjacent), the CUDA cores' stores to C in layout nk (a
 * warp's lanes on 32 columns, each storing its runs of rows down one) and
 * the unstaged kernels' X in layout nk (read down its columns).  Printed as a table
 * (bench/RESULTS.md). */
START_TEST(accesses_without_conflicts)
{
	static const struct {
		const char *pattern, *dtype;
		PatLayout layout;
		PtxSchedule s;
		int64_t shape[3];
		const char *sm;
	} kernels[] = {
		{"apply block(32, 32, 50%);", "f32", PAT_LAYOUT_KN, {0}, {1000, 96, 2112}, "sm_90"},
		{"apply tile_v(32, 25%);", "f32", PAT_LAYOUT_KN, {0}, {1000, 96, 2112}, "sm_90"},
		{"apply block(8, 8, 25%);", "f32", PAT_LAYOUT_KN, {0}, {1000, 96, 2112}, "sm_90"},
		{"apply block(32, 32, 50%);", "f32", PAT_LAYOUT_NK, {0}, {1000, 96, 2112}, "sm_90"},
		{"apply block(32, 32, 50%);", "f32", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_90"},
		{"apply block(32, 32, 50%);", "f32", PAT_LAYOUT_NK, {0}, {256, 256, 256}, "sm_90"},
		{"apply block(32, 32, 25%);", "bf16", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_90"},
		{"apply block(32, 32, 25%);", "bf16", PAT_LAYOUT_NK, {0}, {256, 256, 256}, "sm_90"},
		{"apply block(64, 64, 25%);", "bf16", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_90"},
		{"apply nm(2, 4);", "bf16", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_90"},
		{"apply nm(2, 4);", "bf16", PAT_LAYOUT_NK, {0}, {256, 256, 256}, "sm_90"},
		{"apply block(64, 64, 25%);", "bf16", PAT_LAYOUT_KN, {.wg = 1}, {256, 256, 256}, "sm_90"},
		{"apply block(64, 64, 25%);", "bf16", PAT_LAYOUT_NK, {.wg = 1}, {256, 256, 256}, "sm_90"},
		/* split-K's atomics before sm_90: one float a lane */
		{"apply block(32, 32, 50%);", "f32", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_80"},
		{"apply nm(2, 4);", "bf16", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_80"},
		/* unstaged: X read from global memory */
		{"apply nm(2, 4);", "f32", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_90"},
		{"apply row_balanced(25%);", "f32", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_90"},
		{"apply unstructured(10%);", "f32", PAT_LAYOUT_KN, {0}, {256, 256, 256}, "sm_90"},
		{"apply nm(2, 4);", "f32", PAT_LAYOUT_NK, {0}, {256, 256, 256}, "sm_90"},
		{"apply block(32, 32, 50%);", "f32", PAT_LAYOUT_KN, {.stage = -1}, {256, 256, 256}, "sm_90"},
	};
	printf("| kernel | layout | shape | shared loads | copies into shared memory | copies' sectors | "
	       "other loads of global memory | stores to C |\n"
	       "|---|---|---|---:|---:|---:|---:|---:|\n");
	int split = 0;
	for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
		Arena arena;
		arena_init(&arena);
		const bool f32 = !strcmp(kernels[i].dtype, "f32");
		Program prog = compile_typed(&arena, kernels[i].pattern, kernels[i].shape, kernels[i].dtype);
		const OpResult *op = &prog.ops[0];
		PtxPlan plan;
		PtxEmuStats st;
		const PtxSchedule *s = kernels[i].s.wg || kernels[i].s.stage ? &kernels[i].s : NULL;
		const char *sm = kernels[i].sm;
		const double e = f32 ? emulate_counted(op, kernels[i].layout, op->shape.N, s, sm, &plan, &st)
		                     : emulate_tc_fail(op, PAT_BF16, kernels[i].layout, s, sm, &plan, false, NULL, &st);
		ck_assert_msg(e < 1e-5, "%s: %g", kernels[i].pattern, e);
		ck_assert_msg(plan.stage == (i < 15), "%s: %s", kernels[i].pattern, plan.stage_why);
		/* on sm_90 a split walk adds a thread's adjacent columns with one red in layout kn */
		ck_assert_msg(kernels[i].layout == PAT_LAYOUT_NK || plan.vred == (plan.atomic && !strcmp(sm, "sm_90")), "%s",
		              kernels[i].pattern);
		if (i < 3) /* the wide register tiles: 8 x 8 a thread, 8 x 4 for block(8, 8) */
			ck_assert_msg(plan.s.r == 8 && plan.s.v == (i < 2 ? 8 : 4), "%s: %d x %d", kernels[i].pattern, plan.s.r,
			              plan.s.v);
		char tile[16] = "";
		if (f32)
			snprintf(tile, sizeof tile, ", %d x %d", plan.s.r, plan.s.v);
		printf("| %s %s%s%s, %s | %s | %lldx%lldx%lld |", kernels[i].pattern + 6, kernels[i].dtype,
		       plan.tc_wg ? " wgmma" : plan.tc_sp ? " mma.sp" : plan.tc ? " mma" : "", tile, sm,
		       pat_layout_names[kernels[i].layout], (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N);
		static const int kinds[5] = {PTX_ACC_LOAD, PTX_ACC_CP, PTX_ACC_SRC, PTX_ACC_GLOAD, PTX_ACC_GSTORE};
		for (int j = 0; j < 5; j++) {
			const PtxAccCount *a = &st.acc[kinds[j]];
			printf(" %.2fx of %lld |", a->ideal ? (double)a->cost / (double)a->ideal : 0, (long long)a->ideal);
		}
		printf("%s\n", plan.vred ? " (split-K: vector red)" : plan.atomic ? " (split-K: atomics)" : "");
		split += plan.atomic;
		/* wgmma reads the stage itself (not counted); nothing stores to it */
		ck_assert_msg(!plan.stage || plan.tc_wg || st.acc[PTX_ACC_LOAD].requests > 0, "%s", kernels[i].pattern);
		ck_assert_int_eq(st.acc[PTX_ACC_STORE].requests, 0);
		ck_assert_msg(plan.stage == (st.acc[PTX_ACC_CP].requests > 0 && st.acc[PTX_ACC_SRC].requests > 0), "%s",
		              kernels[i].pattern);
		ck_assert_msg(st.acc[PTX_ACC_GSTORE].requests > 0 && (plan.stage || st.acc[PTX_ACC_GLOAD].requests > 0), "%s",
		              kernels[i].pattern);
		/* fp32 in layout nk: a warp's lanes on 32 columns, each storing (or adding) a
		 * float or its run of mvec rows in a sector of its own: 8 / run times the fewest */
		const int run = plan.mvec && (!plan.atomic || plan.vred) ? plan.mvec : 1;
		const PtxAccCount *cs = &st.acc[PTX_ACC_GSTORE];
		ck_assert_msg(!f32 || kernels[i].layout == PAT_LAYOUT_KN ||
		                  fabs((double)cs->cost * run / (8.0 * (double)cs->ideal) - 1) < 0.05,
		              "%s, layout nk: stores %lld of %lld, runs of %d", kernels[i].pattern, (long long)cs->cost,
		              (long long)cs->ideal, run);
		for (int j = 0; j < PTX_ACC_KINDS; j++) {
			const bool known = (j == PTX_ACC_GSTORE && plan.atomic && !plan.vred) ||
			                   (j == PTX_ACC_GSTORE && f32 && kernels[i].layout == PAT_LAYOUT_NK) ||
			                   (j == PTX_ACC_GLOAD && !plan.stage && kernels[i].layout == PAT_LAYOUT_NK);
			ck_assert_msg(known || st.acc[j].cost == st.acc[j].ideal, "%s %s, layout %s: %s %lld of %lld",
			              kernels[i].pattern, kernels[i].dtype, pat_layout_names[kernels[i].layout], ptx_acc_names[j],
			              (long long)st.acc[j].cost, (long long)st.acc[j].ideal);
		}
		arena_free(&arena);
	}
	ck_assert(split > 0 && split < 12);

	/* the counts seen to find what they are for: the stages' rows
	 * unpadded (PATC_EMU_INJECT=nopad; right results), bank conflicts in
	 * the copies down the columns of fp32's X (layout nk) and in the
	 * ldmatrix of the tensor cores; X's rows of 80 bytes, sectors read in
	 * part (wgmma) */
	static const struct {
		const char *pattern, *dtype, *inject;
		PatLayout layout;
		int kind;
		int64_t shape[3];
	} costly[] = {
		{"apply block(32, 32, 50%);", "f32", "nopad", PAT_LAYOUT_NK, PTX_ACC_CP, {256, 256, 256}},
		{"apply block(32, 32, 25%);", "bf16", "nopad", PAT_LAYOUT_KN, PTX_ACC_LOAD, {256, 256, 256}},
		{"apply block(64, 64, 25%);", "bf16", NULL, PAT_LAYOUT_KN, PTX_ACC_SRC, {64, 72, 40}},
	};
	for (size_t i = 0; i < sizeof costly / sizeof *costly; i++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_typed(&arena, costly[i].pattern, costly[i].shape, costly[i].dtype);
		const OpResult *op = &prog.ops[0];
		PtxEmuStats st;
		static const PtxSchedule wg = {.wg = 1};
		if (costly[i].inject)
			setenv("PATC_EMU_INJECT", costly[i].inject, 1);
		const double e = strcmp(costly[i].dtype, "f32")
		                         ? emulate_tc_fail(op, PAT_BF16, costly[i].layout, costly[i].inject ? NULL : &wg,
		                                           "sm_90", NULL, false, NULL, &st)
		                         : emulate_counted(op, costly[i].layout, op->shape.N, NULL, "sm_90", NULL, &st);
		unsetenv("PATC_EMU_INJECT");
		const PtxAccCount *a = &st.acc[costly[i].kind];
		ck_assert_msg(e < 1e-5 && a->cost > a->ideal, "%s %s: %g, %s %lld of %lld", costly[i].pattern,
		              costly[i].dtype, e, ptx_acc_names[costly[i].kind], (long long)a->cost, (long long)a->ideal);
		ck_assert_msg(strstr(st.worst, costly[i].kind == PTX_ACC_SRC ? "sectors where" : "wavefronts where"), "%s",
		              st.worst);
		printf("planted: %s %s%s: %s\n", costly[i].pattern + 6, costly[i].dtype,
		       costly[i].inject ? ", rows unpadded" : "", st.worst);
		arena_free(&arena);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ptx");
	TCase *tc = tcase_create("ptx");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, mapping_matches_reference);
	tcase_add_test(tc, plans);
	tcase_add_test(tc, wide_tiles_match_reference);
	tcase_add_test(tc, ptx_for_both_targets);
	tcase_add_test(tc, no_driver);
	tcase_add_test(tc, emulation_catches_faults);
	tcase_add_test(tc, accesses_without_conflicts);
	tcase_add_test(tc, tc_mapping_matches_reference);
	tcase_add_test(tc, tc_sp_metadata_checked);
	tcase_add_test(tc, tc_wgmma_matches_reference);
	tcase_add_test(tc, tc_split_matches_reference);
	tcase_add_test(tc, tc_stages_match_reference);
	tcase_add_test(tc, tc_warps_match_reference);
	tcase_add_test(tc, tc_dynamic_smem);
	tcase_add_test(tc, tc_choice);
	tcase_add_test(tc, random_configurations_match_reference);
	tcase_add_test(tc, random_configuration_regressions);
	suite_add_tcase(s, tc);
	/* (their own cases: CK_RUN_CASE=runtime_n or epilogue runs one alone) */
	TCase *rt = tcase_create("runtime_n");
	tcase_set_timeout(rt, 600);
	tcase_add_test(rt, runtime_n_every_stdlib_pattern);
	suite_add_tcase(s, rt);
	TCase *ep = tcase_create("epilogue");
	tcase_set_timeout(ep, 600);
	tcase_add_test(ep, epilogue_matches_reference);
	suite_add_tcase(s, ep);
	return run_suite(s);
}
