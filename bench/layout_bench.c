/* SPDX-License-Identifier: MIT */
/* layout_bench.c - the layouts and N at run time, in `make bench`.
 *
 *   layout_bench STDLIB CSV [quick | SHAPE,...]
 *
 * Two tables, each kernel checked against float64 on sampled columns
 * before it is timed, every time beside OpenBLAS in the same run:
 *  - layouts: on the paper's 12 shapes at 50%, 75% and 93.75%, each
 *    pattern of shapes.h in layout kn (C = W X, beside sgemm NoTrans) and
 *    in layout nk (C = X W^T, PyTorch's, beside sgemm with W transposed),
 *    2 threads, kernels for N at run time; the best structured pattern
 *    per shape in nk over its dense baseline, against kn's over its own;
 *  - batch: on four of the shapes' M x K, N = 1, 8, 64, 512, 4096, the
 *    kernel compiled for N at run time (tuned for the shape's N) beside
 *    one specialised on each N and beside dense at the same N, layout nk,
 *    2 threads, block 32 x 32 and 2:4 at 75% and 50%.
 * CSV rows: table,shape,M,K,N,sparsity,pattern,layout,method,median_us,speedup_vs_dense.
 */
#define _POSIX_C_SOURCE 200809L
#include "patterns.h"
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

enum { CHECK_COLS = 32, THREADS = 2 };

typedef struct Dense {
	const float *w, *x;
	float *c;
	int64_t M, K, N;
	bool kn;
} Dense;

static void dense_call(void *arg)
{
	const Dense *d = arg;
	blas_sgemm(d->kn, d->M, d->K, d->N, d->w, d->x, d->c);
}

static double dense_us(const float *w, const float *x, float *c, int64_t M, int64_t K, int64_t N, bool kn, int reps)
{
	openblas_set_num_threads(THREADS);
	Dense d = {w, x, c, M, K, N, kn};
	return util_time_us(dense_call, &d, reps);
}

/* Compiles ir for M x K (tuned for N, specialised on it unless n_runtime),
 * checks it on x (N columns) and times it; < 0 on failure (said). */
static double kernel_us(const Pir *ir, int64_t M, int64_t K, int64_t tuned, bool n_runtime, PatLayout layout,
                        const float *values, const PruneMask *pm, const float *masked, const float *x, float *c,
                        int64_t N, int reps)
{
	LowerKernel lk = {ir, {M, K, tuned, PAT_F32, layout, PAT_ACT_NONE, false}, "bench_kernel", 0, {0}, n_runtime, 0};
	X86Kernel kern;
	char err[X86_ERR_MAX];
	if (!x86_jit(&lk, NULL, NULL, &kern, err)) {
		fprintf(stderr, "layout_bench: %s\n", err);
		return -1;
	}
	const int32_t *const *index = (const int32_t *const *)pm->index;
	for (int64_t i = 0; i < M * N; i++)
		c[i] = NAN;
	x86_run(&kern, x, c, values, index, NULL, N, THREADS);
	const double rel = prune_check_error(masked, x, c, M, K, N, layout == PAT_LAYOUT_KN, PAT_F32, CHECK_COLS);
	if (!(rel >= 0 && rel < 1e-4)) {
		fprintf(stderr, "layout_bench: wrong result on %lldx%lldx%lld %s (relative error %g)\n", (long long)M,
		        (long long)K, (long long)N, pat_layout_names[layout], rel);
		x86_kernel_free(&kern);
		return -1;
	}
	KernelCall kc = {&kern, x, values, c, index, N, THREADS, NULL};
	const double us = util_time_us(kernel_call, &kc, reps);
	x86_kernel_free(&kern);
	return us;
}

typedef struct Weights {
	float *w, *imp, *masked, *x, *c;
} Weights;

static bool weights_init(Weights *b, int64_t M, int64_t K, int64_t N)
{
	b->w = util_alloc_timed((size_t)(M * K) * sizeof *b->w);
	b->imp = malloc((size_t)(M * K) * sizeof *b->imp);
	b->masked = util_alloc_timed((size_t)(M * K) * sizeof *b->masked);
	b->x = util_alloc_timed((size_t)(K * N) * sizeof *b->x);
	b->c = util_alloc_timed((size_t)(M * N) * sizeof *b->c);
	if (!b->w || !b->imp || !b->masked || !b->x || !b->c)
		return false;
	synth_weights(b->w, M, K, 1, SYNTH_PLAIN, 1);
	synth_weights(b->x, K, N, 2, SYNTH_PLAIN, 1);
	prune_importance(PAT_IMP_MAGNITUDE, b->w, NULL, NULL, 0, M, K, b->imp);
	return true;
}

static void weights_free(Weights *b) { free(b->w), free(b->imp), free(b->masked), free(b->x), free(b->c); }

/* The layouts table; returns false on a failure. */
static bool layouts(const char *stdlib, FILE *csv, bool quick, const char *only)
{
	static double best[2][3][NSHAPES]; /* [layout][sparsity][shape]: best structured speedup */
	bool ran[NSHAPES] = {false};
	for (int si = 0; si < NSHAPES; si++) {
		const Shape *sh = &shapes[si];
		const int64_t M = sh->M, K = sh->K, N = sh->N;
		if (!shape_selected(sh, quick, only))
			continue;
		ran[si] = true;
		const int reps = shape_reps(sh);
		Weights b;
		if (!weights_init(&b, M, K, N))
			return false;
		double dense[2];
		for (int l = 0; l < 2; l++)
			dense[l] = dense_us(b.w, b.x, b.c, M, K, N, l == PAT_LAYOUT_KN, reps);
		util_settle();
		for (int s = 0; s < 3; s++)
			for (int p = 0; p < NPAT; p++) {
				char body[128];
				pattern_body(p, sparsities[s], body, sizeof body);
				Pir ir;
				PruneMask pm;
				float *values = bench_prune("layout_bench", stdlib, sh->name, M, K, body, b.w, b.imp, &ir, &pm,
				                            b.masked);
				if (!values)
					continue;
				for (int l = 0; l < 2; l++) {
					const double us = kernel_us(&ir, M, K, N, true, (PatLayout)l, values, &pm, b.masked, b.x,
					                            b.c, N, reps);
					if (us < 0)
						return false;
					const double sp = dense[l] / us;
					if (p < NPAT - 1 && sp > best[l][s][si]) /* structured: all but row-balanced */
						best[l][s][si] = sp;
					fprintf(csv, "layouts,%s,%lld,%lld,%lld,%g,%s,%s,patc,%.1f,%.3f\n", sh->name, (long long)M,
					        (long long)K, (long long)N, sparsities[s], pattern_names[p], pat_layout_names[l], us, sp);
					fprintf(stderr, "  %s %5g%% %-8s %s %.2fx\n", sh->name, sparsities[s], pattern_names[p],
					        pat_layout_names[l], sp);
				}
				free(values);
				prune_mask_free(&pm);
			}
		for (int l = 0; l < 2; l++) {
			const double again = dense_us(b.w, b.x, b.c, M, K, N, l == PAT_LAYOUT_KN, reps);
			/* the faster of before and after, as cpu_bench: the speedups above
			 * used the first; rescale them where the second was faster */
			const double scale = again < dense[l] ? again / dense[l] : 1;
			for (int s = 0; s < 3; s++)
				best[l][s][si] *= scale;
			dense[l] = fmin(dense[l], again);
			fprintf(csv, "layouts,%s,%lld,%lld,%lld,0,dense,%s,openblas,%.1f,1\n", sh->name, (long long)M,
			        (long long)K, (long long)N, pat_layout_names[l], dense[l]);
		}
		fflush(csv);
		weights_free(&b);
	}
	printf("| sparsity | best structured, kn (geomean) | best structured, nk (geomean) | nk / kn (geomean) | nk / kn "
	       "(min over shapes) |\n|---:|---:|---:|---:|---:|\n");
	for (int s = 0; s < 3; s++) {
		double g[2] = {0, 0}, r = 0, rmin = INFINITY;
		int n = 0;
		for (int si = 0; si < NSHAPES; si++) {
			if (!ran[si])
				continue;
			g[0] += log(best[0][s][si]), g[1] += log(best[1][s][si]);
			const double q = best[1][s][si] / best[0][s][si];
			r += log(q), rmin = fmin(rmin, q);
			n++;
		}
		printf("| %g%% | %.2fx | %.2fx | %.2f | %.2f |\n", sparsities[s], exp(g[0] / n), exp(g[1] / n), exp(r / n),
		       rmin);
	}
	printf("\n2 threads; each layout over OpenBLAS sgemm in its own transpose (kn: W X; nk: X W^T)\n\n");
	return true;
}

/* The batch table: N = 1 .. 4096, runtime-N kernels beside specialised ones and dense. */
static bool batch(const char *stdlib, FILE *csv, bool quick)
{
	static const int sel[] = {3, 4, 0, 9}; /* 768/768, 3072/768, 1024/1024, 4096/4096 */
	static const int64_t ns[] = {1, 8, 64, 512, 4096};
	static const char *const bodies[][2] = {{"block32", "apply block(32, 32, 25%);"}, {"nm2:4", "apply nm(2, 4);"}};
	printf("| M x K | pattern | N | dense us | runtime-N us | specialised us | runtime / specialised | runtime-N "
	       "over dense |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
	for (size_t q = 0; q < (quick ? 2 : sizeof sel / sizeof *sel); q++) {
		const Shape *sh = &shapes[sel[q]];
		const int64_t M = sh->M, K = sh->K;
		Weights b;
		if (!weights_init(&b, M, K, 4096))
			return false;
		for (size_t pb = 0; pb < 2; pb++) {
			Pir ir;
			PruneMask pm;
			float *values = bench_prune("layout_bench", stdlib, sh->name, M, K, bodies[pb][1], b.w, b.imp, &ir, &pm,
			                            b.masked);
			if (!values)
				return false;
			for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
				const int64_t N = ns[j];
				const int reps = (int)fmin(50, fmax(3, 4e9 / (2.0 * (double)M * (double)K * (double)N)));
				const double d = dense_us(b.w, b.x, b.c, M, K, N, false, reps);
				util_settle();
				const double rt = kernel_us(&ir, M, K, sh->N, true, PAT_LAYOUT_NK, values, &pm, b.masked, b.x, b.c,
				                            N, reps);
				const double sp = kernel_us(&ir, M, K, N, false, PAT_LAYOUT_NK, values, &pm, b.masked, b.x, b.c, N,
				                            reps);
				if (rt < 0 || sp < 0)
					return false;
				printf("| %lldx%lld | %s | %lld | %.1f | %.1f | %.1f | %.2f | %.2fx |\n", (long long)M, (long long)K,
				       bodies[pb][0], (long long)N, d, rt, sp, rt / sp, d / rt);
				fprintf(csv, "batch,%s,%lld,%lld,%lld,0,%s,nk,runtime,%.1f,%.3f\n", sh->name, (long long)M,
				        (long long)K, (long long)N, bodies[pb][0], rt, d / rt);
				fprintf(csv, "batch,%s,%lld,%lld,%lld,0,%s,nk,specialised,%.1f,%.3f\n", sh->name, (long long)M,
				        (long long)K, (long long)N, bodies[pb][0], sp, d / sp);
				fprintf(csv, "batch,%s,%lld,%lld,%lld,0,dense,nk,openblas,%.1f,1\n", sh->name, (long long)M,
				        (long long)K, (long long)N, d);
				fflush(csv);
			}
			free(values);
			prune_mask_free(&pm);
		}
		weights_free(&b);
	}
	printf("\nlayout nk, 2 threads; the runtime-N kernel tuned for the shape's N; dense: OpenBLAS sgemm X W^T\n");
	return true;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: layout_bench STDLIB CSV [quick | SHAPE,...]\n");
		return 2;
	}
	const bool quick = argc > 3 && !strcmp(argv[3], "quick");
	const char *only = argc > 3 && !quick ? argv[3] : NULL;
	FILE *csv = fopen(argv[2], "w");
	if (!csv) {
		perror(argv[2]);
		return 3;
	}
	fprintf(csv, "table,shape,M,K,N,sparsity,pattern,layout,method,median_us,speedup_vs_dense\n");
	const bool ok = layouts(argv[1], csv, quick, only) && batch(argv[1], csv, quick || only);
	fclose(csv);
	printf("OpenBLAS: %s (%s kernels)\n", openblas_get_config(), openblas_get_corename());
	return ok ? 0 : 4;
}
