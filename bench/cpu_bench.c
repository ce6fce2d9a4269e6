/* SPDX-License-Identifier: MIT */
/* cpu_bench.c - the CPU benchmark of `make bench`.
 *
 *   cpu_bench STDLIB CSV [quick | SHAPE,...]
 *
 * The paper's 12 SpMM shapes at 50%, 75% and 93.75% sparsity; for each,
 * patc's kernels for block 8x8 and 32x32, vector-wise N:M, tile-wise,
 * the hybrid and row-balanced element-wise, with 1 and 2 threads, beside
 * OpenBLAS sgemm (same threads), Eigen's sparse x dense product (one
 * thread) and librsb's autotuned one (same threads) on the same mask, all
 * measured in the same run.  Every patc kernel is checked
 * first, as `patc --run` checks it: C poisoned with NaN, then the float64
 * product of the masked weight on CHECK_COLS sampled columns (librsb's
 * results too).  Writes CSV rows
 * shape,M,K,N,sparsity,pattern,method,threads,median_us,speedup_vs_dense
 * and prints a Markdown summary.  `quick` keeps the shapes of at most
 * 2^32 multiply-adds; a comma-separated list of shape names (such as
 * 64/576/3136,128/576/784) keeps those.
 */
#define _POSIX_C_SOURCE 200809L
#include "patterns.h"
#include "rsb_spmm.h"
#include "kernel_call.h"
#include "shapes.h"
#include "backend_x86/x86.h"
#include "prune/prune.h"
#include "support/blas_core.h"
#include "support/util.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns of C the float64 check samples: 32 of 4096 on the largest
 * shapes is a second a kernel on one core, where OpenBLAS's float32 product
 * of all of them (the check before) took several. */
enum { CHECK_COLS = 32 };

double eigen_spmm_us(const float *w, int64_t M, int64_t K, const float *x, int64_t N, int reps,
                     double *checksum);

/* Timing: util_time_us for every method (OpenBLAS, patc; eigen_spmm.cpp
 * does the same in C++): at least 20 ms of warm-up, then the median of
 * about 50 ms of calls, at least `reps` of them. */

typedef struct DenseCall {
	const float *w, *x;
	float *c;
	int64_t M, K, N;
} DenseCall;

static void dense_call(void *arg)
{
	const DenseCall *d = arg;
	blas_sgemm(true, d->M, d->K, d->N, d->w, d->x, d->c);
}

static double dense_us(const float *w, const float *x, float *c, int64_t M, int64_t K, int64_t N,
                       int threads, int reps)
{
	openblas_set_num_threads(threads);
	DenseCall d = {w, x, c, M, K, N};
	return util_time_us(dense_call, &d, reps);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cpu_bench STDLIB CSV [quick | SHAPE,...]\n");
		return 2;
	}
	const char *stdlib = argv[1];
	bool quick = argc > 3 && !strcmp(argv[3], "quick");
	const char *only = argc > 3 && !quick ? argv[3] : NULL;
	bool named = !only;
	for (int si = 0; only && si < NSHAPES; si++)
		named |= shape_listed(only, shapes[si].name);
	if (!named) {
		fprintf(stderr, "cpu_bench: no shape named in '%s' (names such as %s)\n", only, shapes[0].name);
		return 2;
	}
	FILE *csv = fopen(argv[2], "w");
	if (!csv) {
		perror(argv[2]);
		return 3;
	}
	fprintf(csv, "shape,M,K,N,sparsity,pattern,method,threads,median_us,speedup_vs_dense\n");
	/* speedups for the summary: [sparsity][shape][pattern][threads] */
	static double sp[3][NSHAPES][NPAT][2], vs_eigen[3][NSHAPES][NPAT], vs_rsb[3][NSHAPES][NPAT][2];
	if (!rsb_bench_init()) {
		fprintf(stderr, "cpu_bench: librsb does not start\n");
		return 3;
	}
	bool ran[NSHAPES] = {false};
	for (int si = 0; si < NSHAPES; si++) {
		const Shape *sh = &shapes[si];
		const int64_t M = sh->M, K = sh->K, N = sh->N;
		if (!shape_selected(sh, quick, only))
			continue;
		ran[si] = true;
		const int reps = shape_reps(sh);
		float *w = util_alloc_timed((size_t)(M * K) * sizeof *w), *imp = malloc((size_t)(M * K) * sizeof *imp);
		float *masked = util_alloc_timed((size_t)(M * K) * sizeof *masked);
		float *x = util_alloc_timed((size_t)(K * N) * sizeof *x), *c = util_alloc_timed((size_t)(M * N) * sizeof *c);
		if (!w || !imp || !masked || !x || !c) {
			fprintf(stderr, "cpu_bench: out of memory at %s\n", sh->name);
			return 3;
		}
		synth_weights(w, M, K, 1, SYNTH_PLAIN, 1);
		synth_weights(x, K, N, 2, SYNTH_PLAIN, 1);
		prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, imp);
		/* The dense baseline is timed before and after the shape's kernels and
		 * the faster of the two medians kept: this VM's speed drifts by 10-30%
		 * over a shape, and one slow baseline would flatter every kernel. */
		double dense[2], us[3][NPAT][2], eus[3][NPAT], rus[3][NPAT][2];
		bool have[3][NPAT] = {{false}};
		for (int t = 0; t < 2; t++)
			dense[t] = dense_us(w, x, c, M, K, N, t + 1, reps);
		util_settle(); /* OpenBLAS's idle workers spin ~0.1 s: let them sleep first */
		for (int s = 0; s < 3; s++)
			for (int p = 0; p < NPAT; p++) {
				char body[128];
				pattern_body(p, sparsities[s], body, sizeof body);
				Pir ir;
				PruneMask pm;
				float *values = bench_prune("cpu_bench", stdlib, sh->name, M, K, body, w, imp, &ir, &pm, masked);
				if (!values)
					continue;
				LowerKernel lk = {&ir, {M, K, N, PAT_F32, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, "bench_kernel", 0, {0}, false, 0};
				X86Kernel kern;
				char xerr[X86_ERR_MAX];
				if (!x86_jit(&lk, NULL, NULL, &kern, xerr)) {
					fprintf(stderr, "cpu_bench: %s\n", xerr);
					return 4;
				}
				const int32_t *const *index = (const int32_t *const *)pm.index;
				/* timed twice, before and after Eigen, the faster median kept (as
				 * for the baseline: one slow spell of the VM must not decide) */
				for (int t = 0; t < 4; t++) {
					if (t == 0) {
						for (int64_t i = 0; i < M * N; i++)
							c[i] = NAN;
						x86_run(&kern, x, c, values, index, NULL, kern.N, 1);
						const double rel =
						    prune_check_error(masked, x, c, M, K, N, true, PAT_F32, CHECK_COLS);
						if (rel < 0) {
							fprintf(stderr, "cpu_bench: out of memory at %s\n", sh->name);
							return 3;
						}
						if (!(rel < 1e-4)) { /* NaN too: an element left unwritten */
							fprintf(stderr, "cpu_bench: %s %s %g%%: wrong result (relative error %g)\n",
							        sh->name, pattern_names[p], sparsities[s], rel);
							return 4;
						}
					}
					KernelCall kc = {&kern, x, values, c, index, kern.N, t % 2 + 1, NULL};
					double med = util_time_us(kernel_call, &kc, reps);
					if (t < 2 || med < us[s][p][t % 2])
						us[s][p][t % 2] = med;
					if (t == 1) {
						double sum;
						eus[s][p] = eigen_spmm_us(masked, M, K, x, N, reps, &sum);
						for (int rt = 0; rt < 2; rt++) {
							for (int64_t i = 0; i < M * N; i++)
								c[i] = NAN;
							rus[s][p][rt] = rsb_spmm_us(masked, M, K, x, N, rt + 1, reps, c);
							const double rel = rus[s][p][rt] < 0 ? -1
							                   : prune_check_error(masked, x, c, M, K, N, true, PAT_F32,
							                                       CHECK_COLS);
							if (!(rel >= 0 && rel < 1e-4)) {
								fprintf(stderr, "cpu_bench: librsb failed or wrong at %s %s %g%% "
								        "(relative error %g)\n", sh->name, pattern_names[p],
								        sparsities[s], rel);
								return 4;
							}
						}
						util_settle(); /* its OpenMP workers spin after a call too */
					}
				}
				have[s][p] = true;
				fprintf(stderr, "  %s %5g%% %-8s  %.2fx (1 thread)  %.2fx (2 threads)  %.2fx vs Eigen  "
				        "%.2fx %.2fx vs librsb\n", sh->name, sparsities[s], pattern_names[p],
				        dense[0] / us[s][p][0], dense[1] / us[s][p][1], eus[s][p] / us[s][p][0],
				        rus[s][p][0] / us[s][p][0], rus[s][p][1] / us[s][p][1]);
				x86_kernel_free(&kern);
				free(values);
				prune_mask_free(&pm);
			}
		for (int t = 0; t < 2; t++) {
			double again = dense_us(w, x, c, M, K, N, t + 1, reps);
			dense[t] = again < dense[t] ? again : dense[t];
			fprintf(csv, "%s,%lld,%lld,%lld,0,dense,openblas,%d,%.1f,1\n", sh->name, (long long)M,
			        (long long)K, (long long)N, t + 1, dense[t]);
		}
		util_settle();
		for (int s = 0; s < 3; s++)
			for (int p = 0; p < NPAT; p++) {
				if (!have[s][p])
					continue;
				for (int t = 0; t < 2; t++) {
					sp[s][si][p][t] = dense[t] / us[s][p][t];
					fprintf(csv, "%s,%lld,%lld,%lld,%g,%s,patc,%d,%.1f,%.3f\n", sh->name, (long long)M,
					        (long long)K, (long long)N, sparsities[s], pattern_names[p], t + 1,
					        us[s][p][t], sp[s][si][p][t]);
				}
				vs_eigen[s][si][p] = eus[s][p] / us[s][p][0];
				fprintf(csv, "%s,%lld,%lld,%lld,%g,%s,eigen,1,%.1f,%.3f\n", sh->name, (long long)M,
				        (long long)K, (long long)N, sparsities[s], pattern_names[p], eus[s][p],
				        dense[0] / eus[s][p]);
				for (int t = 0; t < 2; t++) {
					vs_rsb[s][si][p][t] = rus[s][p][t] / us[s][p][t];
					fprintf(csv, "%s,%lld,%lld,%lld,%g,%s,librsb,%d,%.1f,%.3f\n", sh->name, (long long)M,
					        (long long)K, (long long)N, sparsities[s], pattern_names[p], t + 1, rus[s][p][t],
					        dense[t] / rus[s][p][t]);
				}
			}
		fflush(csv);
		fprintf(stderr, "  %s: OpenBLAS %.1f us (1 thread), %.1f us (2 threads), the faster of before and after\n",
		        sh->name, dense[0], dense[1]);
		free(w), free(imp), free(masked), free(x), free(c);
	}
	fclose(csv);
	/* the summary: geometric means over the shapes run */
	printf("| sparsity | best structured, 2 threads | block8 | block32 | nm | tile | hybrid | rowbal | patc / Eigen "
	       "(min over patterns) | patc / librsb, 1 thread (geomean; min) | 2 threads (geomean; min) |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int s = 0; s < 3; s++) {
		double best = 0, g[NPAT] = {0}, minE = INFINITY, gr[2] = {0}, minR[2] = {INFINITY, INFINITY};
		int n = 0;
		for (int si = 0; si < NSHAPES; si++) {
			if (!ran[si])
				continue;
			double b = 0;
			for (int p = 0; p < NPAT - 1; p++) /* structured: all but row-balanced */
				b = sp[s][si][p][1] > b ? sp[s][si][p][1] : b;
			best += log(b);
			for (int p = 0; p < NPAT; p++) {
				g[p] += log(sp[s][si][p][1]);
				minE = vs_eigen[s][si][p] < minE ? vs_eigen[s][si][p] : minE;
				for (int t = 0; t < 2; t++) {
					gr[t] += log(vs_rsb[s][si][p][t]) / NPAT;
					minR[t] = vs_rsb[s][si][p][t] < minR[t] ? vs_rsb[s][si][p][t] : minR[t];
				}
			}
			n++;
		}
		printf("| %g%% | %.2fx |", sparsities[s], exp(best / n));
		for (int p = 0; p < NPAT; p++)
			printf(" %.2fx |", exp(g[p] / n));
		printf(" %.2fx | %.2fx; %.2fx | %.2fx; %.2fx |\n", minE, exp(gr[0] / n), minR[0], exp(gr[1] / n), minR[1]);
	}
	printf("\nspeedup over OpenBLAS sgemm with the same threads (geometric mean over %s shapes); "
	       "OpenBLAS: %s (%s kernels); patc / librsb over every pattern\n",
	       quick ? "the quick" : only ? "the named" : "the 12", openblas_get_config(), openblas_get_corename());
	rsb_bench_exit();
	return 0;
}
