/* SPDX-License-Identifier: MIT */
/* test_x86.c - the x86-64 backend: JIT-compiled kernels of every stdlib
 * pattern golden (shapes with padding), both layouts, one and two threads,
 * against a float64 reference on the masked weight; the targets. */
#define _POSIX_C_SOURCE 200809L
#include "kernelcase.h"
#include "backend_x86/x86.h"
#include "prune/prune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ||C - W_s X|| / ||W_s X|| with the reference in double (kernelcase.h),
 * the kernel with schedule sched (NULL: the backend's own). */
static double run_scheduled(const OpResult *op, PatLayout layout, int64_t N, int threads,
                            const KernelSchedule *sched)
{
	KernelCase kc;
	kernel_case_init(&kc, op, layout, N);
	char name[64];
	snprintf(name, sizeof name, "k_%s", op->name);
	LowerKernel lk = {op->ir, {op->shape.M, op->shape.K, N, PAT_F32, layout, PAT_ACT_NONE, false}, name, 0, {0}, false, 0};
	if (sched)
		lk.sched = *sched;
	X86Kernel kern;
	char xerr[X86_ERR_MAX];
	ck_assert_msg(x86_jit(&lk, NULL, NULL, &kern, xerr), "%s", xerr);
	/* NaN garbage: the kernel must zero C, or store every element */
	memset(kc.c, 0xff, (size_t)(op->shape.M * N) * sizeof *kc.c);
	x86_run(&kern, kc.x, kc.c, kc.values, (const int32_t *const *)kc.mask.index, NULL, N, threads);
	double e = kernel_case_error(&kc);
	x86_kernel_free(&kern);
	kernel_case_free(&kc);
	return e;
}

static double run_and_compare(const OpResult *op, PatLayout layout, int64_t N, int threads)
{
	return run_scheduled(op, layout, N, threads, NULL);
}

START_TEST(stdlib_kernels_match_reference)
{
	const char *data = getenv("PATC_TEST_DATA");
	ck_assert_ptr_nonnull(data);
	static const char *const files[] = {"stdlib_block.pat", "stdlib_nm.pat", "stdlib_tile.pat",
	                                    "stdlib_channel.pat", "stdlib_elementwise.pat",
	                                    "stdlib_hybrid.pat", "fig6.pat", "language.pat"};
	int checked = 0;
	for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
		char path[1024];
		snprintf(path, sizeof path, "%s/golden/pir/%s", data, files[f]);
		Arena arena;
		arena_init(&arena);
		Program prog;
		ck_assert_int_eq(compile_quiet(path, NULL, &arena, &prog), 0);
		for (int i = 0; i < prog.nops; i++)
			for (int layout = 0; layout < 2; layout++)
				for (int threads = 1; threads <= 2; threads++) {
					double e = run_and_compare(&prog.ops[i], (PatLayout)layout, 13, threads);
					ck_assert_msg(e < 1e-5, "%s op %s layout %s threads %d: relative error %g",
					              files[f], prog.ops[i].name, pat_layout_names[layout], threads, e);
					checked++;
				}
		arena_free(&arena);
	}
	ck_assert_int_ge(checked, 60);
}
END_TEST

/* Every stdlib pattern on 6 shapes, several of them with extents no tile
 * size divides, both layouts, 1 and 2 threads. */
START_TEST(stdlib_patterns_six_shapes)
{
	static const char *const patterns[] = {
		"apply block(8, 8, 25%);", "apply block(32, 32, 50%);", "apply nm(2, 4);",
		"apply nm(1, 8);", "apply tile_v(16, 25%);", "apply tile_h(16, 50%);",
		"apply channel(50%);", "apply channel_in(25%);", "apply row_balanced(25%);",
		"apply unstructured(10%);", "apply hybrid(16, 32, 50%);",
	};
	/* N = 160 and 300 reach the full column tiles (128 columns with
	 * AVX-512, 32 with AVX) and every smaller tile and scalar tail */
	static const int64_t shapes[6][3] = {{64, 64, 160}, {100, 70, 33}, {33, 129, 17},
	                                     {130, 96, 300}, {7, 250, 9}, {257, 31, 1}};
	int checked = 0;
	for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++)
		for (int s = 0; s < 6; s++) {
			Arena arena;
			arena_init(&arena);
			char *text = arena_printf(&arena,
			                          "include \"all.pat\";\nop s%d: spmm(M = %lld, K = %lld, N = %lld) { %s }\n",
			                          s, (long long)shapes[s][0], (long long)shapes[s][1],
			                          (long long)shapes[s][2], patterns[p]);
			Program prog;
			ck_assert_msg(compile_quiet("t.pat", text, &arena, &prog) == 0, "%s", text);
			OpResult op = prog.ops[0];
			for (int layout = 0; layout < 2; layout++)
				for (int threads = 1; threads <= 2; threads++) {
					double e = run_and_compare(&op, (PatLayout)layout, op.shape.N, threads);
					ck_assert_msg(e < 1e-5, "%s on %lldx%lldx%lld, layout %s, %d threads: %g",
					              patterns[p], (long long)op.shape.M, (long long)op.shape.K, (long long)op.shape.N,
					              pat_layout_names[layout], threads, e);
					checked++;
				}
			arena_free(&arena);
		}
	ck_assert_int_eq(checked, 11 * 6 * 4);
}
END_TEST

/* One kernel compiled for N at run time (tuned for nominal) serves every
 * N: each stdlib pattern on shapes no tile divides (and K = 2048, where
 * the columns run in chunks), both layouts, N = 1, 2, 7, 64, 333 and the
 * nominal N, two threads, each against float64. */
START_TEST(runtime_n_every_stdlib_pattern)
{
	static const char *const patterns[] = {
		"apply block(8, 8, 25%);", "apply block(32, 32, 50%);", "apply nm(2, 4);",
		"apply nm(1, 8);", "apply tile_v(16, 25%);", "apply tile_h(16, 50%);",
		"apply channel(50%);", "apply channel_in(25%);", "apply row_balanced(25%);",
		"apply unstructured(10%);", "apply hybrid(16, 32, 50%);",
	};
	static const int64_t shapes[3][3] = {{100, 70, 96}, {33, 129, 17}, {64, 2048, 256}};
	static const int64_t ns[] = {1, 2, 7, 64, 333, 0 /* the nominal N */};
	int checked = 0;
	for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++)
		for (int s = 0; s < 3; s++) {
			Arena arena;
			arena_init(&arena);
			char *text = arena_printf(&arena, "include \"all.pat\";\nop r: spmm(M = %lld, K = %lld, N = %lld) { %s }\n",
			                          (long long)shapes[s][0], (long long)shapes[s][1], (long long)shapes[s][2],
			                          patterns[p]);
			Program prog;
			ck_assert_msg(compile_quiet("t.pat", text, &arena, &prog) == 0, "%s", text);
			const OpResult *op = &prog.ops[0];
			for (int layout = 0; layout < 2; layout++) {
				LowerKernel lk = {op->ir, op->shape, "k_rt", 0, {0}, true, 0};
				lk.shape.layout = (PatLayout)layout;
				X86Kernel kern;
				char xerr[X86_ERR_MAX];
				ck_assert_msg(x86_jit(&lk, NULL, NULL, &kern, xerr), "%s", xerr);
				for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
					const int64_t N = ns[j] ? ns[j] : op->shape.N;
					KernelCase kc;
					kernel_case_init(&kc, op, (PatLayout)layout, N);
					memset(kc.c, 0xff, (size_t)(op->shape.M * N) * sizeof *kc.c);
					x86_run(&kern, kc.x, kc.c, kc.values, (const int32_t *const *)kc.mask.index, NULL, N, 2);
					const double e = kernel_case_error(&kc);
					kernel_case_free(&kc);
					ck_assert_msg(e < 1e-5, "%s on %lldx%lld (tuned for N = %lld), layout %s, N = %lld: %g",
					              patterns[p], (long long)op->shape.M, (long long)op->shape.K,
					              (long long)op->shape.N, pat_layout_names[layout], (long long)N, e);
					checked++;
				}
				x86_kernel_free(&kern);
			}
			arena_free(&arena);
		}
	ck_assert_int_eq(checked, 11 * 3 * 2 * 6);
}
END_TEST

/* The epilogue, C = act(W X + bias (+ C)), on every stdlib pattern in both
 * layouts (the fast paths' pass over C, the nk panels' transpose into C,
 * the point walk): each activation once per pattern and layout, with a
 * bias and with none (NULL at the call), every other one accumulating
 * into a C that holds values, at N 7 and 64 on a shape the tiles do not
 * divide, against float64 with libm's tanh and erf. */
START_TEST(epilogues_every_stdlib_pattern)
{
	static const char *const patterns[] = {
		"apply block(8, 8, 25%);", "apply block(32, 32, 50%);", "apply nm(2, 4);",
		"apply nm(1, 8);", "apply tile_v(16, 25%);", "apply tile_h(16, 50%);",
		"apply channel(50%);", "apply channel_in(25%);", "apply row_balanced(25%);",
		"apply unstructured(10%);", "apply hybrid(16, 32, 50%);",
	};
	static const int64_t ns[] = {7, 64};
	int checked = 0;
	for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++) {
		Arena arena;
		arena_init(&arena);
		char *text = arena_printf(&arena, "include \"all.pat\";\nop r: spmm(M = 33, K = 129, N = 17) { %s }\n",
		                          patterns[p]);
		Program prog;
		ck_assert_msg(compile_quiet("t.pat", text, &arena, &prog) == 0, "%s", text);
		const OpResult *op = &prog.ops[0];
		float bias[33];
		synth_weights(bias, 1, 33, 9, SYNTH_PLAIN, 1);
		for (int layout = 0; layout < 2; layout++)
			for (int a = 0; a < PAT_NACTS; a++) {
				LowerKernel lk = {.ir = op->ir, .shape = op->shape, .name = "k_epi", .n_runtime = true};
				lk.shape.layout = (PatLayout)layout;
				lk.shape.act = (PatAct)a;
				lk.shape.accumulate = a % 2 == 1;
				X86Kernel kern;
				char xerr[X86_ERR_MAX];
				ck_assert_msg(x86_jit(&lk, NULL, NULL, &kern, xerr), "%s", xerr);
				for (size_t j = 0; j < sizeof ns / sizeof *ns; j++)
					for (int with_bias = 0; with_bias < 2; with_bias++) {
						const int64_t N = ns[j];
						KernelCase kc;
						kernel_case_init(&kc, op, (PatLayout)layout, N);
						float *old = NULL;
						if (lk.shape.accumulate) { /* C holds values the kernel adds to */
							old = malloc((size_t)(33 * N) * sizeof *old);
							ck_assert_ptr_nonnull(old);
							synth_weights(old, 33, N, 11, SYNTH_PLAIN, 1);
							memcpy(kc.c, old, (size_t)(33 * N) * sizeof *old);
						} else {
							memset(kc.c, 0xff, (size_t)(33 * N) * sizeof *kc.c);
						}
						const float *b = with_bias ? bias : NULL;
						x86_run(&kern, kc.x, kc.c, kc.values, (const int32_t *const *)kc.mask.index, b, N, 2);
						const double e = kernel_case_error_epi(&kc, (PatAct)a, b, old);
						kernel_case_free(&kc);
						free(old);
						ck_assert_msg(e < 1e-5, "%s, layout %s, %s%s%s, N = %lld: %g", patterns[p],
						              pat_layout_names[layout], pat_act_names[a], with_bias ? ", bias" : "",
						              lk.shape.accumulate ? ", accumulate" : "", (long long)N, e);
						checked++;
					}
				x86_kernel_free(&kern);
			}
		arena_free(&arena);
	}
	ck_assert_int_eq(checked, 11 * 2 * PAT_NACTS * 2 * 2);
}
END_TEST

/* The activations alone, on values across their range (large, small,
 * near zero, both signs), against float64: lower_act's exp, tanh and erf
 * are approximations, each within a few float32 ulps of the function's
 * scale. */
START_TEST(activations_match_libm)
{
	enum { NV = 4096 };
	static float x[NV];
	for (int i = 0; i < NV; i++) /* -100 .. 100, dense near 0 */
		x[i] = (float)(i < NV / 2 ? -1 : 1) * powf(10.0f, -4.0f + 6.3f * (float)(i % (NV / 2)) / (NV / 2));
	x[0] = 0.0f;
	Arena arena;
	arena_init(&arena);
	/* a 1 x 1 dense weight of 1: C = act(X + 0) */
	Program prog;
	ck_assert_int_eq(compile_quiet("t.pat", "op r: spmm(M = 1, K = 1, N = 16) { }\n", &arena, &prog), 0);
	const OpResult *op = &prog.ops[0];
	const float one = 1.0f;
	const int32_t *const index[1] = {NULL};
	for (int a = 1; a < PAT_NACTS; a++) {
		LowerKernel lk = {.ir = op->ir, .shape = op->shape, .name = "k_act", .n_runtime = true};
		lk.shape.act = (PatAct)a;
		X86Kernel kern;
		char xerr[X86_ERR_MAX];
		ck_assert_msg(x86_jit(&lk, NULL, NULL, &kern, xerr), "%s", xerr);
		static float c[NV];
		x86_run(&kern, x, c, &one, index, NULL, NV, 1);
		double worst = 0;
		int at = 0;
		for (int i = 0; i < NV; i++) {
			const double ref = kernel_act((PatAct)a, x[i]);
			const double err = fabs(c[i] - ref) / fmax(fabs(ref), fmin(fabs((double)x[i]), 1.0));
			if (!(err <= worst))
				worst = err, at = i;
		}
		ck_assert_msg(worst < 1e-5, "%s(%g) = %.9g, want %.9g", pat_act_names[a], (double)x[at], (double)c[at],
		              kernel_act((PatAct)a, x[at]));
		x86_kernel_free(&kern);
	}
	arena_free(&arena);
}
END_TEST

/* Layout nk runs the fast kn paths on transposed panels wherever kn has
 * one (blocks, N:M, tiles, channels, rows, hybrids), not the per-weight
 * walk; a panel keeps X's panel near 512 KiB. */
START_TEST(nk_takes_panels)
{
	static const char *const patterns[] = {
		"apply block(8, 8, 25%);", "apply block(32, 32, 50%);", "apply nm(2, 4);", "apply tile_v(16, 25%);",
		"apply tile_h(16, 50%);", "apply channel(50%);", "apply row_balanced(25%);", "apply hybrid(16, 32, 50%);",
	};
	for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++) {
		Arena arena;
		arena_init(&arena);
		char *text = arena_printf(&arena, "include \"all.pat\";\nop r: spmm(M = 768, K = 768, N = 512) { %s }\n",
		                          patterns[p]);
		Program prog;
		ck_assert_msg(compile_quiet("t.pat", text, &arena, &prog) == 0, "%s", text);
		LowerKernel lk = {prog.ops[0].ir, prog.ops[0].shape, "k", 0, {0}, true, 0};
		lk.shape.layout = PAT_LAYOUT_KN;
		const LowerPath kn = lower_path(&lk, &x86_update_hooks);
		lk.shape.layout = PAT_LAYOUT_NK;
		ck_assert_msg(kn != LOWER_POINT && x86_nk_panels(&lk, &x86_update_hooks), "%s: kn path %d", patterns[p], kn);
		ck_assert_int_eq(x86_nk_panel(&lk), 128);
		arena_free(&arena);
	}
}
END_TEST

/* Relative error of the nk kernel kern (C = act(X W^T + bias (+ C))) on N
 * tokens against float64, with a bias or without, C pre-filled where the
 * op accumulates (else NaN, which the kernel must overwrite). */
static double nk_epilogue_error(const OpResult *op, const X86Kernel *kern, const OpShape *shape, int64_t N,
                                bool with_bias)
{
	const int64_t M = op->shape.M, K = op->shape.K;
	KernelCase kc;
	kernel_case_init(&kc, op, PAT_LAYOUT_NK, N);
	float *bias = malloc((size_t)M * sizeof *bias), *old = malloc((size_t)(M * N) * sizeof *old);
	ck_assert(bias && old);
	synth_weights(bias, 1, M, 7, SYNTH_PLAIN, 1);
	synth_weights(old, N, M, 8, SYNTH_PLAIN, 1);
	if (shape->accumulate)
		memcpy(kc.c, old, (size_t)(M * N) * sizeof *old);
	else
		memset(kc.c, 0xff, (size_t)(M * N) * sizeof *kc.c);
	x86_run(kern, kc.x, kc.c, kc.values, (const int32_t *const *)kc.mask.index, with_bias ? bias : NULL, N, 2);
	double num = 0, den = 0;
	for (int64_t n = 0; n < N; n++)
		for (int64_t m = 0; m < M; m++) {
			double ref = 0;
			for (int64_t k = 0; k < K; k++)
				ref += (double)kc.dense[m * K + k] * kc.x[n * K + k];
			ref += (with_bias ? bias[m] : 0) + (shape->accumulate ? old[n * M + m] : 0);
			ref = kernel_act(shape->act, ref);
			const double got = kc.c[n * M + m];
			num += isnan(got) ? INFINITY : (got - ref) * (got - ref);
			den += ref * ref;
		}
	const double guard = kernel_case_error(&kc); /* +inf where a store left C */
	free(bias), free(old);
	kernel_case_free(&kc);
	return isinf(guard) ? guard : sqrt(num / (den > 0 ? den : 1));
}

/* The nk kernels that read X and C in place (nkdot.c) are taken for
 * tiles, channel_in and blocks of 16 rows or more (8 x 8 blocks keep the
 * panels), and match float64 with each activation (every pattern and shape
 * half of the six epilogues, in turn),
 * with a bias and without (NULL at run time), accumulating into C and
 * not, on shapes no tile divides, N = 1, 2, 7, 64, 333 (token tails of
 * every tile), two threads. */
START_TEST(nk_dot_epilogues)
{
	static const char *const patterns[] = {
		"apply tile_v(32, 25%);", "apply tile_v(16, 50%);", "apply channel_in(25%);",
		"apply block(32, 32, 50%);", "apply block(16, 32, 25%);",
	};
	static const int64_t shapes[2][2] = {{100, 70}, {33, 129}};
	static const int64_t ns[] = {1, 2, 7, 64, 333};
	static const struct {
		PatAct act;
		bool acc;
	} eps[] = {{PAT_ACT_NONE, false}, {PAT_ACT_RELU, true}, {PAT_ACT_GELU_TANH, false},
	           {PAT_ACT_GELU_ERF, true}, {PAT_ACT_SILU, false}, {PAT_ACT_NONE, true}};
	for (size_t p = 0; p < sizeof patterns / sizeof *patterns; p++)
		for (int s = 0; s < 2; s++) {
			Arena arena;
			arena_init(&arena);
			char *text = arena_printf(&arena, "include \"all.pat\";\nop r: spmm(M = %lld, K = %lld, N = 64) { %s }\n",
			                          (long long)shapes[s][0], (long long)shapes[s][1], patterns[p]);
			Program prog;
			ck_assert_msg(compile_quiet("t.pat", text, &arena, &prog) == 0, "%s", text);
			const OpResult *op = &prog.ops[0];
			for (size_t e = (p + (size_t)s) % 2; e < sizeof eps / sizeof *eps; e += 2) { /* half, in turn */
				LowerKernel lk = {.ir = op->ir, .shape = op->shape, .name = "k_nkdot", .vector_width = 16, .n_runtime = true};
				lk.shape.layout = PAT_LAYOUT_NK;
				lk.shape.act = eps[e].act;
				lk.shape.accumulate = eps[e].acc;
				ck_assert_msg(x86_nk_dot(&lk, &x86_update_hooks), "%s: not taken", patterns[p]);
				lk.vector_width = 0;
				X86Kernel kern;
				char xerr[X86_ERR_MAX];
				ck_assert_msg(x86_jit(&lk, NULL, NULL, &kern, xerr), "%s", xerr);
				for (size_t j = 0; j < sizeof ns / sizeof *ns; j++)
					for (int b = 0; b < 2; b++) {
						const double err = nk_epilogue_error(op, &kern, &lk.shape, ns[j], b);
						ck_assert_msg(err < 1e-5, "%s on %lldx%lld, N = %lld, act %s%s%s: %g", patterns[p],
						              (long long)shapes[s][0], (long long)shapes[s][1], (long long)ns[j],
						              pat_act_names[eps[e].act], eps[e].acc ? ", accumulate" : "",
						              b ? ", bias" : "", err);
					}
				x86_kernel_free(&kern);
			}
			arena_free(&arena);
		}
}
END_TEST

/* 500 random legal patterns (random splits with padding, reorders, joins,
 * perforations, keep counts) on random small shapes, random N (up to 300)
 * and layout, half of them with a random kernel schedule (vector width,
 * accumulators, column chunks, X in panels or not; drawn from a second
 * stream, so that the patterns stay those of the seed): each compiled, run
 * and checked.  A fixed seed gives the same cases; a failure prints its
 * pattern, shape and schedule.  PATC_RANDOM_RUNS and PATC_RANDOM_SEED make
 * it a longer soak with other draws. */
START_TEST(random_patterns_property)
{
	const char *env_runs = getenv("PATC_RANDOM_RUNS"), *env_seed = getenv("PATC_RANDOM_SEED");
	const int runs = env_runs ? atoi(env_runs) : 500;
	uint64_t st = env_seed ? strtoull(env_seed, NULL, 10) : 20261130, sst = st ^ 0x5c4ed01e;
	ck_assert_int_ge(runs, 1);
	static const int widths[] = {0, 1, 2, 4, 8, 16};
	for (int round = 0; round < runs; round++) {
		Pir ir;
		test_random_pattern(&ir, &st, 20);
		OpResult op = {.name = "r", .shape.M = ir.len[0], .shape.K = ir.len[1], .ir = &ir};
		PatLayout layout = (PatLayout)test_rnd(&st, 2);
		/* narrow N most of the time, wide enough for full tiles sometimes */
		int64_t N = 1 + test_rnd(&st, test_rnd(&st, 4) ? 19 : 299);
		int threads = 1 + (int)test_rnd(&st, 2);
		KernelSchedule ks = {0};
		const bool scheduled = test_rnd(&sst, 2);
		if (scheduled) {
			const int64_t chunks[] = {0, -1, 4 + (int64_t)test_rnd(&sst, 200)};
			ks = (KernelSchedule){.vector_width = widths[test_rnd(&sst, 6)], .col_tiles = (int)test_rnd(&sst, 5),
			                      .chunk = chunks[test_rnd(&sst, 3)], .stage = (int)test_rnd(&sst, 3) - 1};
		}
		double e = run_scheduled(&op, layout, N, threads, scheduled ? &ks : NULL);
		char *text = pir_print_text(&ir);
		ck_assert_msg(e < 1e-5,
		              "case %d: relative error %g, N %lld, layout %s, %d threads, schedule %d,%d,%lld,%d:\n%s", round,
		              e, (long long)N, pat_layout_names[layout], threads, ks.vector_width, ks.col_tiles,
		              (long long)ks.chunk, ks.stage, text);
		free(text);
	}
}
END_TEST

/* Thread slices: they cover 0..N in order, start on multiples of
 * X86_SLICE_ALIGN, and are as even as that allows. */
START_TEST(slices_cover_columns)
{
	for (int64_t N = 1; N <= 700; N++)
		for (int t = 1; t <= 9; t++) {
			ck_assert_int_eq(x86_slice_bound(N, 0, t), 0);
			ck_assert_int_eq(x86_slice_bound(N, t, t), N);
			for (int s = 0; s < t; s++) {
				int64_t a = x86_slice_bound(N, s, t), b = x86_slice_bound(N, s + 1, t);
				ck_assert_msg(a <= b, "N %lld, %d slices: slice %d runs %lld..%lld", (long long)N, t,
				              s, (long long)a, (long long)b);
				ck_assert(a % X86_SLICE_ALIGN == 0 || a == N);
				ck_assert(llabs(b - a - N / t) <= X86_SLICE_ALIGN + 1);
			}
		}
}
END_TEST

/* A slice's chunks cover it in order: each w columns wide but the last,
 * which takes the remainder: at least w / 2 columns, and fewer than w / 2
 * more than w (or the whole slice). */
START_TEST(chunks_cover_slices)
{
	for (int64_t w = 1; w <= 130; w++)
		for (int64_t len = 1; len <= 700; len++) {
			int64_t a = 40, end = 40 + len, b;
			for (; a < end; a = b) {
				b = x86_chunk_end(a, end, w);
				ck_assert_msg(b > a && b <= end, "w %lld, len %lld: chunk %lld..%lld", (long long)w,
				              (long long)len, (long long)a, (long long)b);
				if (b < end)
					ck_assert_int_eq(b - a, w);
				else if (a > 40)
					ck_assert(b - a >= w / 2 && b - a <= w + (w > 1 ? w / 2 - 1 : 0));
			}
			ck_assert_int_eq(a, end);
		}
}
END_TEST

/* Compiles each pattern body on each M x K x N shape and checks its kernel
 * of schedule sched (NULL: the backend's own) in the first nlayouts layouts
 * (kn, then nk) with min_threads to 2 threads; returns the number of checks. */
static int check_scheduled(const char *const *patterns, size_t np, const int64_t (*shapes)[3], size_t ns,
                           const KernelSchedule *sched, int nlayouts, int min_threads)
{
	int checked = 0;
	for (size_t p = 0; p < np; p++)
		for (size_t sh = 0; sh < ns; sh++) {
			Arena arena;
			arena_init(&arena);
			char *text = arena_printf(&arena,
			                          "include \"all.pat\";\nop b: spmm(M = %lld, K = %lld, N = %lld) { %s }\n",
			                          (long long)shapes[sh][0], (long long)shapes[sh][1], (long long)shapes[sh][2],
			                          patterns[p]);
			Program prog;
			ck_assert_msg(compile_quiet("t.pat", text, &arena, &prog) == 0, "%s", text);
			for (int layout = 0; layout < nlayouts; layout++)
				for (int threads = min_threads; threads <= 2; threads++) {
					double e = run_scheduled(&prog.ops[0], (PatLayout)layout, shapes[sh][2], threads, sched);
					ck_assert_msg(e < 1e-5, "%s layout %s, %d threads: %g", text, pat_layout_names[layout],
					              threads, e);
					checked++;
				}
			arena_free(&arena);
		}
	return checked;
}

/* The backend's own schedule, layout kn. */
static int check_patterns(const char *const *patterns, size_t np, const int64_t (*shapes)[3], size_t ns)
{
	return check_scheduled(patterns, np, shapes, ns, NULL, 1, 1);
}

/* Shapes wide enough in N and K that the k runs and m runs are walked in
 * several blocks along k (X86_KBLOCK_ROWS, X86_KBLOCK_BYTES), with k padded
 * and not; C starts as NaN garbage and is not zeroed by these kernels, so
 * a block other than the first that stored instead of adding would show. */
START_TEST(k_blocked_runs)
{
	static const char *const patterns[] = {"apply nm(2, 4);", "apply nm(1, 4);", "apply row_balanced(25%);",
	                                       "apply channel(50%);", "apply hybrid(16, 32, 50%);",
	                                       "apply block(32, 32, 50%);"};
	static const int64_t shapes[2][3] = {{9, 1024, 2100}, {6, 1001, 1030}};
	ck_assert_int_eq(check_patterns(patterns, 6, shapes, 2), 24);
}
END_TEST

/* Runs with at least X86_PACK_REUSE kept weights per k, which read X from
 * panels (m runs: blocks, 2:4, the hybrid, packed once per call; k runs:
 * row-balanced, one tile's panel filled before each tile, two rows at a
 * time), and k runs over rows in chunks (X86_KROW_BYTES; 1100 rows: three
 * chunks, the last one short): full tiles and column tails, k padded and
 * not, slices with no full tile (N = 70 on two threads). */
START_TEST(panel_packed_runs)
{
	static const char *const patterns[] = {"apply block(32, 32, 50%);", "apply block(8, 8, 25%);",
	                                       "apply nm(2, 4);", "apply hybrid(32, 64, 50%);",
	                                       "apply row_balanced(25%);", "apply nm(1, 4);"};
	static const int64_t shapes[3][3] = {{200, 300, 1013}, {130, 256, 70}, {1100, 300, 200}};
	ck_assert_int_eq(check_patterns(patterns, 6, shapes, 3), 36);
}
END_TEST

/* X over X86_CHUNK_FROM_BYTES: x86_run walks each slice's columns in
 * chunks of 128 (K = 4100), the last one short, with panels and without;
 * and X over X86_CHUNK_MRUN_FROM with K = 3000, where the m runs (8x8
 * blocks, 2:4) take chunks of one 64-column tile and tile_v none. */
START_TEST(column_chunks)
{
	static const char *const patterns[] = {"apply block(8, 8, 50%);", "apply tile_v(32, 50%);", "apply nm(2, 4);"};
	static const int64_t shapes[2][3] = {{128, 4100, 700}, {96, 3000, 500}};
	ck_assert_int_eq(check_patterns(patterns, 3, shapes, 2), 12);
}
END_TEST

/* m runs over X rows that share L1's sets (N = 512: rows 2 KiB apart, not
 * x_rows_spread) and fewer than X86_PACK_REUSE weights per k: the run's X
 * rows are condensed into a buffer per point (mrun_condense), with M and K
 * padded and not.  The shapes above all spread, so they read X in place. */
START_TEST(condensed_m_runs)
{
	static const char *const patterns[] = {"apply block(32, 32, 25%);", "apply hybrid(32, 32, 50%);"};
	static const int64_t shapes[2][3] = {{70, 100, 512}, {64, 96, 512}};
	ck_assert_int_eq(check_patterns(patterns, 2, shapes, 2), 8);
}
END_TEST

/* The schedules the search tunes (narrower vectors, fewer accumulators,
 * other column chunks, none, X in panels always or never) on the k runs,
 * m runs and the rest, both layouts, 2 threads, shapes no tile divides:
 * every one against float64. */
START_TEST(schedules_match_reference)
{
	static const char *const patterns[] = {"apply block(8, 8, 25%);", "apply nm(2, 4);", "apply row_balanced(25%);",
	                                       "apply tile_v(16, 50%);", "apply hybrid(16, 32, 50%);",
	                                       "apply unstructured(20%);"};
	static const int64_t shapes[2][3] = {{70, 129, 300}, {33, 250, 97}};
	static const KernelSchedule scheds[] = {
		{.vector_width = 8}, {.col_tiles = 1}, {.vector_width = 8, .col_tiles = 2}, {.chunk = 64}, {.chunk = -1},
		{.vector_width = 8, .col_tiles = 1, .chunk = 40}, {.stage = 1}, {.stage = -1},
		{.vector_width = 8, .col_tiles = 2, .stage = 1, .threads = 1}};
	int checked = 0;
	for (size_t i = 0; i < sizeof scheds / sizeof *scheds; i++)
		checked += check_scheduled(patterns, 6, shapes, 2, &scheds[i], 2, 2);
	ck_assert_int_eq(checked, 9 * 6 * 2 * 2);
}
END_TEST

/* What random patterns with random schedules found (a harness run of
 * 16,000 cases): row pairs of a k run under a joined m loop whose m wraps,
 * taken as real by their last row, stored a padding row past C (the
 * default schedule); the k run's buffer of X, claimed 64-byte aligned at
 * vectors 4 (vl) bytes apart, crashed an aligned store at vl = 1; and that
 * buffer, on the stack, overflowed it where a digit spans most of a long K
 * (the default schedule).  Each failed before its fix. */
START_TEST(random_schedule_regressions)
{
	static const char *const joined[] = {
		"split m -> m0, m1 : _, 4 pad; reorder m1, m0, k; join m1, m0 -> j; perforate k keep 50%;"};
	static const int64_t joined_shape[1][3] = {{9, 16, 64}};
	ck_assert_int_eq(check_scheduled(joined, 1, joined_shape, 1, NULL, 2, 1), 4);
	static const char *const nm[] = {"apply nm(1, 4);", "apply nm(3, 7);"};
	static const int64_t nm_shapes[2][3] = {{1, 65, 128}, {60, 147, 48}};
	static const KernelSchedule narrow = {.vector_width = 1, .col_tiles = 3, .chunk = -1, .stage = -1};
	ck_assert_int_eq(check_scheduled(nm, 2, nm_shapes, 2, &narrow, 1, 1), 8);
	static const char *const long_k[] = {
		"perforate m keep 50%; split k -> k0, k1 : _, 128 pad; perforate k0 keep 17;"};
	static const int64_t long_shape[1][3] = {{2, 17536, 128}};
	ck_assert_int_eq(check_scheduled(long_k, 1, long_shape, 1, NULL, 1, 1), 2);
}
END_TEST

/* The targets (target.c): each level's CPU and vector width, the older
 * names' levels, what the host lacks (made to lack features by
 * PATC_TEST_CPU_LACKS), and the check the shared library carries. */
START_TEST(targets_and_levels)
{
	static const struct {
		const char *target, *cpu, *level;
		int width;
	} t[] = {{"x86-64-v2", "x86-64-v2", "x86-64-v2", 4},       {"x86-64-v3", "x86-64-v3", "x86-64-v3", 8},
	         {"x86-64-v4", "x86-64-v4", "x86-64-v4", 16},      {"x86-64-avx2", "haswell", "x86-64-v3", 8},
	         {"x86-64-avx512", "skylake-avx512", "x86-64-v4", 16}};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		ck_assert_str_eq(x86_target_cpu(t[i].target), t[i].cpu);
		ck_assert_str_eq(x86_target_level(t[i].target)->name, t[i].level);
		ck_assert_int_eq(x86_cpu_width(t[i].cpu), t[i].width);
		char err[X86_ERR_MAX];
		LLVMTargetMachineRef tm = x86_target_machine(t[i].cpu, "", true, err);
		ck_assert_msg(tm, "%s", err);
		ck_assert_int_eq(x86_vector_width(tm), t[i].width);
		LLVMDisposeTargetMachine(tm);
	}
	ck_assert_ptr_null(x86_target_cpu("native"));
	ck_assert_ptr_null(x86_target_cpu("x86-64"));
	ck_assert_ptr_null(x86_host_lacks(NULL));
	const X86Level *host = x86_host_level();
	if (host && host->width >= 8) { /* (a host of x86-64-v3 at least) */
		ck_assert_ptr_null(x86_host_lacks("x86-64-v2"));
		ck_assert_ptr_null(x86_host_lacks("haswell"));
		ck_assert_ptr_eq(x86_target_level("native"), host);
		setenv("PATC_TEST_CPU_LACKS", "avx512f,fma", 1);
		ck_assert_str_eq(x86_host_lacks("x86-64-v4"), "fma"); /* (the first of the level's table) */
		ck_assert_str_eq(x86_host_lacks("skylake-avx512"), "fma");
		ck_assert_ptr_null(x86_host_lacks("x86-64-v2"));
		ck_assert_str_eq(x86_host_level()->name, "x86-64-v2");
		setenv("PATC_TEST_CPU_LACKS", "avx512", 1); /* (a prefix of avx512f is not it) */
		ck_assert_ptr_eq(x86_host_level(), host);
		unsetenv("PATC_TEST_CPU_LACKS");
	}
	StrBuf c;
	sb_init(&c);
	setenv("PATC_TEST_CPU_LACKS", "avx512bw", 1);
	x86_cpu_check_c(&c, "t", "x86-64-v4");
	unsetenv("PATC_TEST_CPU_LACKS");
	ck_assert_ptr_nonnull(strstr(c.data, "__attribute__((constructor))"));
	ck_assert_ptr_nonnull(strstr(c.data, "{\"avx512f\", 0x7, 1, 16, 0xe6, 0},"));
	ck_assert_ptr_nonnull(strstr(c.data, "{\"avx512bw\", 0x7, 1, 30, 0xe6, 1},"));
	ck_assert_ptr_nonnull(strstr(c.data, "{\"lzcnt\", 0x80000001, 2, 5, 0x0, 0},"));
	ck_assert_ptr_nonnull(strstr(c.data, "\"t.so needs x86-64-v4 (AVX-512); this CPU lacks %s\\n\""));
	sb_free(&c);
	sb_init(&c);
	x86_cpu_check_c(&c, "t", "x86-64-v2");
	ck_assert_ptr_null(strstr(c.data, "avx")); /* only the level's own features */
	ck_assert_ptr_nonnull(strstr(c.data, "{\"cx16\", 0x1, 2, 13, 0x0, 0},"));
	sb_free(&c);
}
END_TEST

static Suite *x86_suite(void)
{
	Suite *s = suite_create("x86");
	TCase *tc = tcase_create("kernels");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, stdlib_kernels_match_reference);
	tcase_add_test(tc, stdlib_patterns_six_shapes);
	tcase_add_test(tc, runtime_n_every_stdlib_pattern);
	tcase_add_test(tc, nk_takes_panels);
	tcase_add_test(tc, epilogues_every_stdlib_pattern);
	tcase_add_test(tc, activations_match_libm);
	tcase_add_test(tc, random_patterns_property);
	tcase_add_test(tc, slices_cover_columns);
	tcase_add_test(tc, chunks_cover_slices);
	tcase_add_test(tc, k_blocked_runs);
	tcase_add_test(tc, panel_packed_runs);
	tcase_add_test(tc, column_chunks);
	tcase_add_test(tc, condensed_m_runs);
	tcase_add_test(tc, schedules_match_reference);
	tcase_add_test(tc, random_schedule_regressions);
	suite_add_tcase(s, tc);
	TCase *td = tcase_create("nkdot");
	tcase_set_timeout(td, 120);
	tcase_add_test(td, nk_dot_epilogues);
	suite_add_tcase(s, td);
	TCase *tt = tcase_create("targets");
	tcase_add_test(tt, targets_and_levels);
	suite_add_tcase(s, tt);
	return s;
}

int main(void) { return run_suite(x86_suite()); }
