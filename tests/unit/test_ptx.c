/* test_ptx.c - the NVPTX backend without a GPU.
 *
 * The GPU mapping (which loops go to thread blocks, the row groups, the
 * columns per thread, atomics) is lowered with thread and block ids read
 * from globals, JIT-compiled for the host and run one thread at a time
 * over the whole grid, against a float64 reference on the masked weight;
 * C starts as NaN so that an element no thread writes fails.  The same
 * kernels are also compiled to PTX for sm_80 and sm_90 (tests/ptx.sh
 * assembles them with ptxas). */
#define _POSIX_C_SOURCE 200809L
#include "kernelcase.h"
#include "backend_ptx/cuda.h"
#include "backend_ptx/ptx.h"
#include "backend_x86/x86.h"
#include "prune/prune.h"

#include <math.h>

typedef struct Emu {
	int32_t *tid_x, *tid_y, *ctaid_x, *ctaid_y, *ctaid_z;
} Emu;

/* Runs the emulated kernel over its grid; returns ||C - ref|| / ||ref||,
 * or +inf when an element of C is left unwritten. */
static double emulate(const OpResult *op, PatLayout layout, int64_t N, const PtxSchedule *s, PtxPlan *plan_out)
{
	KernelCase kc;
	kernel_case_init(&kc, op, layout, N);
	LowerKernel lk = {op->ir, op->M, op->K, N, layout, "emu", 1};
	PtxPlan plan;
	ptx_plan(&lk, s, &plan);
	plan.emulate = true;
	LowerHooks hooks = ptx_hooks(&plan);
	X86Kernel kern;
	char xerr[X86_ERR_MAX];
	ck_assert_msg(x86_jit_hooks(&lk, &hooks, NULL, NULL, &kern, xerr), "%s", xerr);
	Emu e = {x86_lookup(&kern, "patc_emu_tid_x"), x86_lookup(&kern, "patc_emu_tid_y"),
	         x86_lookup(&kern, "patc_emu_ctaid_x"), x86_lookup(&kern, "patc_emu_ctaid_y"),
	         x86_lookup(&kern, "patc_emu_ctaid_z")};
	ck_assert(e.tid_x && e.tid_y && e.ctaid_x && e.ctaid_y);
	ck_assert(e.ctaid_z || plan.nsplit == 1);
	for (int64_t i = 0; i < op->M * N; i++)
		kc.c[i] = plan.zero ? 0.0f : NAN; /* as the launcher leaves it */
	unsigned grid[3], block[3];
	ptx_grid(&plan, N, grid, block);
	for (unsigned cz = 0; cz < grid[2]; cz++)
		for (unsigned cx = 0; cx < grid[0]; cx++)
			for (unsigned cy = 0; cy < grid[1]; cy++)
				for (unsigned ty = 0; ty < block[1]; ty++)
					for (unsigned tx = 0; tx < block[0]; tx++) {
						if (e.ctaid_z)
							*e.ctaid_z = (int32_t)cz;
						*e.ctaid_x = (int32_t)cx, *e.ctaid_y = (int32_t)cy;
						*e.tid_x = (int32_t)tx, *e.tid_y = (int32_t)ty;
						kern.fn(kc.x, kc.c, kc.values, (const int32_t *const *)kc.mask.index, 0, N);
					}
	double err = kernel_case_error(&kc);
	x86_kernel_free(&kern);
	kernel_case_free(&kc);
	if (plan_out)
		*plan_out = plan;
	return err;
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
 * three schedules: the default, one that takes single rows and columns,
 * and one with wide blocks. */
START_TEST(mapping_matches_reference)
{
	static const PtxSchedule scheds[] = {{0, 0, 0, 0, 0, 0},  {32, 1, 1, 1, 1, 0},  {64, 2, 3, 5, 3, 0},
	                                     {32, 2, 8, 16, 1, 1}, {32, 4, 4, 4, 2, 1}};
	int checked = 0, atomics = 0, groups = 0, xvec = 0, wk = 0, wr = 0, splits = 0, staged = 0;
	for (int p = 0; p < NPATTERNS; p++)
		for (int s = 0; s < 4; s++) {
			Arena arena;
			arena_init(&arena);
			Program prog = compile_pattern(&arena, patterns[p], shapes[s]);
			const OpResult *op = &prog.ops[0];
			for (int layout = 0; layout < 2; layout++)
				for (size_t k = 0; k < sizeof scheds / sizeof *scheds; k++) {
					PtxPlan plan;
					double e = emulate(op, (PatLayout)layout, op->N, &scheds[k], &plan);
					ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, layout %s, schedule %d/%d/%d/%d/%d/%d: %g",
					              patterns[p], (long long)op->M, (long long)op->K, (long long)op->N,
					              pat_layout_names[layout], scheds[k].bx, scheds[k].by, scheds[k].v,
					              scheds[k].r, scheds[k].ksplit, scheds[k].stage, e);
					checked++;
					atomics += plan.atomic;
					groups += plan.s.r > 1;
					xvec += plan.xvec, wk += plan.wk, wr += plan.wr, splits += plan.nsplit > 1;
					staged += plan.stage;
				}
			arena_free(&arena);
		}
	ck_assert_int_eq(checked, NPATTERNS * 4 * 2 * 5);
	ck_assert_int_gt(atomics, 0); /* tile_h and unstructured add with atomics */
	ck_assert_int_gt(groups, 0);  /* blocks, tile_v, channel_in take row groups */
	ck_assert_int_gt(xvec, 0);    /* and every vector load is reached */
	ck_assert_int_gt(wk, 0);
	ck_assert_int_gt(wr, 0);
	ck_assert_int_gt(splits, 0); /* the small shapes split the walk along k */
	ck_assert_int_gt(staged, 0); /* and X is staged in shared memory */
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
		{"apply block(32, 32, 25%);", false, false, 4}, {"apply nm(2, 4);", false, false, 1},
		{"apply tile_v(32, 25%);", false, false, 4},    {"apply tile_h(32, 25%);", true, true, 1},
		{"apply channel(50%);", false, true, 1},        {"apply row_balanced(25%);", false, false, 1},
	};
	static const int64_t shape[3] = {4096, 256, 64};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_pattern(&arena, want[i].pattern, shape);
		PtxPlan plan;
		const OpResult *op = &prog.ops[0];
		LowerKernel lk = {op->ir, op->M, op->K, 4096, PAT_LAYOUT_KN, "k", 1};
		ptx_plan(&lk, NULL, &plan);
		ck_assert_msg(plan.atomic == want[i].atomic && plan.zero == want[i].zero && plan.s.r == want[i].r,
		              "%s: atomic %d zero %d r %d", want[i].pattern, plan.atomic, plan.zero, plan.s.r);
		arena_free(&arena);
	}
}
END_TEST

/* PTX for both targets, every pattern: it must name its target and kernel. */
START_TEST(ptx_for_both_targets)
{
	static const char *const sms[] = {"sm_80", "sm_90"};
	for (int p = 0; p < NPATTERNS; p++) {
		Arena arena;
		arena_init(&arena);
		Program prog = compile_pattern(&arena, patterns[p], shapes[1]);
		const OpResult *op = &prog.ops[0];
		for (int t = 0; t < 2; t++) {
			PtxKernelSpec spec = {.k = {op->ir, op->M, op->K, op->N, PAT_LAYOUT_KN, "kern", 1},
			                      .s = ptx_default_schedule};
			char *ptx = NULL, err[PTX_ERR_MAX];
			ck_assert_msg(ptx_compile(&spec, 1, sms[t], &ptx, NULL, err), "%s", err);
			char target[32];
			snprintf(target, sizeof target, ".target %s", sms[t]);
			ck_assert_ptr_nonnull(strstr(ptx, target));
			ck_assert_ptr_nonnull(strstr(ptx, ".entry kern("));
			ck_assert_ptr_nonnull(strstr(ptx, ".version " PTX_ISA_VERSION));
			free(ptx);
		}
		arena_free(&arena);
	}
	char *ptx = NULL, err[PTX_ERR_MAX];
	PtxKernelSpec none = {.s = ptx_default_schedule};
	ck_assert(!ptx_compile(&none, 0, "sm_70", &ptx, NULL, err));
	ck_assert_ptr_nonnull(strstr(err, "sm_70"));
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

int main(void)
{
	Suite *s = suite_create("ptx");
	TCase *tc = tcase_create("ptx");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, mapping_matches_reference);
	tcase_add_test(tc, plans);
	tcase_add_test(tc, ptx_for_both_targets);
	tcase_add_test(tc, no_driver);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
