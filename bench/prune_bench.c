/* SPDX-License-Identifier: MIT */
/* prune_bench.c - the pruning benchmark (make bench-prune).
 *
 * Times mask + metrics + pack of a 4096 x 4096 weight with a three-level
 * pattern (blocks, then sub-blocks, then 2:4) on one thread, beside one
 * dense 4096 x 4096 x 512 OpenBLAS sgemm on one thread, in the same run.
 * Prints a Markdown table and writes bench/results/prune.csv.  The search
 * prunes thousands of candidates, so pruning must stay well below one
 * dense product: the target is less than half of it.
 */
#define _POSIX_C_SOURCE 200809L
#include "patterns.h"
#include "prune/prune.h"
#include "support/util.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

enum { M = 4096, K = 4096, N = 512, REPS = 9 };

static const char *const three_level =
	"split m -> m0, m1, m2 : _, 4, 8; split k -> k0, k1, k2 : _, 8, 4;\n"
	"reorder m0, k0, m1, k1, m2, k2;\n"
	"perforate k0 keep 50%; perforate k1 keep 50%; perforate k2 keep 2;";

int main(int argc, char **argv)
{
	const char *stdlib = argc > 1 ? argv[1] : "stdlib";
	const char *csv = argc > 2 ? argv[2] : NULL;
	openblas_set_num_threads(1);
	Pir ir;
	if (!bench_pattern(stdlib, M, K, three_level, &ir)) {
		fprintf(stderr, "prune_bench: the pattern does not compile\n");
		return 1;
	}
	char paper[PIR_PAPER_MAX];
	pir_print_paper(&ir, paper, sizeof paper);
	float *w = malloc((size_t)M * K * sizeof *w), *imp = malloc((size_t)M * K * sizeof *imp);
	float *x = malloc((size_t)K * N * sizeof *x), *y = malloc((size_t)M * N * sizeof *y);
	PirMetrics pm;
	pir_metrics(&ir, &pm);
	float *values = malloc((size_t)pm.values * sizeof *values);
	if (!w || !imp || !x || !y || !values)
		util_oom();
	synth_weights(w, M, K, 1, SYNTH_HEADS, 64);
	synth_weights(x, K, N, 2, SYNTH_PLAIN, 1);
	prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, imp);
	/* Once per weight, shared by every candidate pattern of a search. */
	double t_setup = util_now();
	PruneBound bound;
	prune_bound_init(&bound, imp, (int64_t)M * K);
	t_setup = util_now() - t_setup;

	double t_gemm[REPS], t_mask[2][REPS], t_metrics[2][REPS], t_pack[2][REPS];
	double retained[2] = {0, 0};
	PruneWorkspace ws = {0}; /* as a search would keep it */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, w, K, x, N, 0.0f, y, N);
	for (int r = 0; r < REPS; r++) {
		double t0 = util_now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, w, K, x, N, 0.0f,
		            y, N);
		t_gemm[r] = util_now() - t0;
		for (int rank = 0; rank < 2; rank++) {
			PruneMask mask;
			PruneMetrics met;
			t0 = util_now();
			prune_mask_build_ws(&ir, imp, M, K, (PatRank)rank, &ws, &mask);
			double t1 = util_now();
			prune_metrics(&ir, &mask, imp, &bound, w, NULL, 0, M, K, &met);
			double t2 = util_now();
			prune_pack(&ir, &mask, w, M, K, values);
			double t3 = util_now();
			t_mask[rank][r] = t1 - t0, t_metrics[rank][r] = t2 - t1, t_pack[rank][r] = t3 - t2;
			retained[rank] = met.retained;
			prune_mask_free(&mask);
		}
	}
	double gemm = util_median(t_gemm, REPS);
	printf("pattern: %s (density %.2f%%)\n\n", paper, 100 * pm.density);
	printf("| rank | mask ms | metrics ms | pack ms | prune total ms | sgemm %dx%dx%d ms | prune / sgemm | retained |\n",
	       M, K, N);
	printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
	FILE *f = csv ? fopen(csv, "w") : NULL;
	if (f)
		fprintf(f, "rank,M,K,N,mask_ms,metrics_ms,pack_ms,prune_ms,sgemm_ms,ratio,retained\n");
	for (int rank = 0; rank < 2; rank++) {
		double tm = util_median(t_mask[rank], REPS), tt = util_median(t_metrics[rank], REPS),
		       tp = util_median(t_pack[rank], REPS), total = tm + tt + tp;
		printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %.4f%% |\n", pat_rank_names[rank],
		       1e3 * tm, 1e3 * tt, 1e3 * tp, 1e3 * total, 1e3 * gemm, total / gemm,
		       100 * retained[rank]);
		if (f)
			fprintf(f, "%s,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.6f\n", pat_rank_names[rank], M,
			        K, N, 1e3 * tm, 1e3 * tt, 1e3 * tp, 1e3 * total, 1e3 * gemm, total / gemm,
			        retained[rank]);
	}
	printf("\nmedians of %d runs, one thread each; sgemm: OpenBLAS %s (%s kernels)\n", REPS, openblas_get_config(),
	       openblas_get_corename());
	printf("once per weight (not per candidate): importance bound structure %.1f ms\n",
	       1e3 * t_setup);
	if (f)
		fclose(f);
	prune_bound_free(&bound);
	prune_workspace_free(&ws);
	free(w), free(imp), free(x), free(y), free(values);
	return 0;
}
