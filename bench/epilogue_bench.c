/* SPDX-License-Identifier: MIT */
/* epilogue_bench.c - what a fused epilogue costs, in `make bench`.
 *
 *   epilogue_bench STDLIB CSV [quick | SHAPE,SHAPE...]
 *
 * On the largest of the paper's shapes (quick: 1024/4096/1024 and
 * 4096/1024/1024; otherwise also the three large ones, 4096/4096/4096,
 * 16384/4096/4096 and 4096/16384/4096; or the ones named), block
 * 32 x 32 and 2:4 at 50%, 75% and 93.75% (2:4: 50% only), each layout, the
 * kernel for N at run time with no epilogue beside the same kernel with a
 * bias and ReLU, a bias and GELU (tanh form), and accumulate (C += W X),
 * 2 threads.  Each is checked against float64 on sampled columns before
 * it is timed; the four are timed in turn, five rounds, each its fastest
 * round's median.  The cost is the epilogue kernel's time over the plain
 * one's, minus one.
 * CSV rows: shape,M,K,N,pattern,sparsity,layout,epilogue,median_us,cost.
 */
#define _POSIX_C_SOURCE 200809L
#include "patterns.h"
#include "kernel_call.h"
#include "shapes.h"
#include "backend_x86/x86.h"
#include "prune/prune.h"
#include "support/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CHECK_COLS = 16, THREADS = 2, NEPI = 4 };

static const char *const epi_names[NEPI] = {"none", "bias+relu", "bias+gelu_tanh", "accumulate"};

static double act_ref(PatAct a, double x)
{
	switch (a) {
	case PAT_ACT_RELU: return x < 0 ? 0 : x;
	case PAT_ACT_GELU_TANH: return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
	default: return x;
	}
}

/* The relative error of C's first CHECK_COLS tokens against float64's
 * act(W X + bias (+ old)). */
static double check(const float *w, const float *x, const float *c, const float *bias, const float *old, PatAct act,
                    int64_t M, int64_t K, int64_t N, bool kn)
{
	double num = 0, den = 0;
	for (int64_t n = 0; n < N && n < CHECK_COLS; n++)
		for (int64_t m = 0; m < M; m++) {
			double r = 0;
			for (int64_t k = 0; k < K; k++)
				r += (double)w[m * K + k] * (kn ? x[k * N + n] : x[n * K + k]);
			const int64_t at = kn ? m * N + n : n * M + m;
			r = act_ref(act, r + (bias ? bias[m] : 0) + (old ? old[at] : 0));
			num += (c[at] - r) * (c[at] - r), den += r * r;
		}
	return sqrt(num / (den > 0 ? den : 1));
}

typedef struct Case {
	const Pir *ir;
	int64_t M, K, N;
	PatLayout layout;
	const float *values, *masked, *x, *bias;
	const int32_t *const *index;
	float *c, *old;
	int reps;
} Case;

/* The kernel with epilogue e (epi_names), compiled and checked; false on
 * failure (said). */
static bool epi_kernel(const Case *k, int e, X86Kernel *kern)
{
	const PatAct act = e == 1 ? PAT_ACT_RELU : e == 2 ? PAT_ACT_GELU_TANH : PAT_ACT_NONE;
	LowerKernel lk = {.ir = k->ir, .shape = {k->M, k->K, k->N, PAT_F32, k->layout, act, e == 3}, .name = "bench_kernel",
	                  .n_runtime = true};
	char err[X86_ERR_MAX];
	if (!x86_jit(&lk, NULL, NULL, kern, err)) {
		fprintf(stderr, "epilogue_bench: %s\n", err);
		return false;
	}
	const float *bias = e == 1 || e == 2 ? k->bias : NULL;
	memcpy(k->c, k->old, (size_t)(k->M * k->N) * sizeof *k->c);
	x86_run(kern, k->x, k->c, k->values, k->index, bias, k->N, THREADS);
	const double rel = check(k->masked, k->x, k->c, bias, e == 3 ? k->old : NULL, act, k->M, k->K, k->N,
	                         k->layout == PAT_LAYOUT_KN);
	if (!(rel < 1e-4)) {
		fprintf(stderr, "epilogue_bench: wrong result with %s (relative error %g)\n", epi_names[e], rel);
		x86_kernel_free(kern);
		return false;
	}
	return true;
}

/* The four kernels' times into us[]: ROUNDS rounds, each timing every
 * kernel in turn (a median of reps calls), and each kernel's fastest
 * round, so that another process's burst on the shared machine lands in
 * one round of one kernel rather than in one kernel's whole time.  False
 * on a failure (said). */
enum { ROUNDS = 5 };
static bool epi_times(const Case *k, double us[NEPI])
{
	X86Kernel kern[NEPI];
	for (int e = 0; e < NEPI; e++)
		if (!epi_kernel(k, e, &kern[e])) {
			while (e-- > 0)
				x86_kernel_free(&kern[e]);
			return false;
		}
	for (int e = 0; e < NEPI; e++)
		us[e] = INFINITY;
	for (int r = 0; r < ROUNDS; r++)
		for (int e = 0; e < NEPI; e++) {
			/* accumulate: C grows by W X each call, which changes no timing */
			KernelCall kc = {&kern[e], k->x, k->values, k->c, k->index, k->N, THREADS,
			                 e == 1 || e == 2 ? k->bias : NULL};
			us[e] = fmin(us[e], util_time_us(kernel_call, &kc, k->reps));
		}
	for (int e = 0; e < NEPI; e++)
		x86_kernel_free(&kern[e]);
	return true;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: epilogue_bench STDLIB CSV [quick | SHAPE,SHAPE...]\n");
		return 2;
	}
	const bool quick = argc > 3 && !strcmp(argv[3], "quick");
	const char *only = argc > 3 && !quick ? argv[3] : NULL;
	static const int sel[] = {2, 1, 9, 10, 11}; /* 1024/4096/1024, 4096/1024/1024, then the large three */
	bool named = !only;
	for (size_t q = 0; only && q < sizeof sel / sizeof *sel; q++)
		named |= shape_listed(only, shapes[sel[q]].name);
	if (!named) {
		fprintf(stderr, "epilogue_bench: no shape of this benchmark named in '%s' (names such as %s)\n", only,
		        shapes[sel[0]].name);
		return 2;
	}
	FILE *csv = fopen(argv[2], "w");
	if (!csv) {
		perror(argv[2]);
		return 3;
	}
	fprintf(csv, "shape,M,K,N,pattern,sparsity,layout,epilogue,median_us,cost\n");
	static const char *const pats[][2] = {{"block32", "block(32, 32, %g%%)"}, {"nm2:4", "nm(2, 4)"}};
	printf("| shape | pattern | sparsity | layout | plain us | bias+relu | bias+gelu_tanh | accumulate |\n"
	       "|---|---|---:|---|---:|---:|---:|---:|\n");
	double worst = 0;
	bool ok = true;
	for (size_t q = 0; ok && q < (quick ? 2 : sizeof sel / sizeof *sel); q++) {
		const Shape *sh = &shapes[sel[q]];
		if (only && !shape_listed(only, sh->name))
			continue;
		const int64_t M = sh->M, K = sh->K, N = sh->N;
		float *w = util_alloc_timed((size_t)(M * K) * sizeof *w), *imp = malloc((size_t)(M * K) * sizeof *imp);
		float *masked = util_alloc_timed((size_t)(M * K) * sizeof *masked), *x = util_alloc_timed((size_t)(K * N) * 4);
		float *c = util_alloc_timed((size_t)(M * N) * 4), *old = util_alloc_timed((size_t)(M * N) * 4);
		float *bias = malloc((size_t)M * sizeof *bias);
		if (!w || !imp || !masked || !x || !c || !old || !bias) {
			fprintf(stderr, "epilogue_bench: out of memory for %s\n", sh->name);
			return 4;
		}
		synth_weights(w, M, K, 1, SYNTH_PLAIN, 1);
		synth_weights(x, K, N, 2, SYNTH_PLAIN, 1);
		synth_weights(old, M, N, 3, SYNTH_PLAIN, 1);
		synth_weights(bias, 1, M, 4, SYNTH_PLAIN, 1);
		prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, imp);
		for (int p = 0; ok && p < 2; p++)
			for (int s = 0; ok && s < (p == 0 ? 3 : 1); s++) {
				char body[96], ap[64];
				snprintf(ap, sizeof ap, pats[p][1], 100 - sparsities[s]);
				snprintf(body, sizeof body, "apply %s;", ap);
				Pir ir;
				PruneMask pm;
				float *values = bench_prune("epilogue_bench", argv[1], sh->name, M, K, body, w, imp, &ir, &pm, masked);
				if (!values) {
					ok = false;
					break;
				}
				for (int l = 0; ok && l < 2; l++) {
					Case k = {&ir, M, K, N, (PatLayout)l, values, masked, x, bias, (const int32_t *const *)pm.index,
					          c, old, shape_reps(sh)};
					double us[NEPI];
					if (!(ok = epi_times(&k, us)))
						break;
					printf("| %s | %s | %g%% | %s | %.1f |", sh->name, pats[p][0], sparsities[s], pat_layout_names[l],
					       us[0]);
					for (int e = 1; e < NEPI; e++) {
						const double cost = us[e] / us[0] - 1;
						worst = fmax(worst, cost);
						printf(" %+.1f%% |", 100 * cost);
					}
					printf("\n");
					for (int e = 0; e < NEPI; e++)
						fprintf(csv, "%s,%lld,%lld,%lld,%s,%g,%s,%s,%.1f,%.4f\n", sh->name, (long long)M, (long long)K,
						        (long long)N, pats[p][0], sparsities[s], pat_layout_names[l], epi_names[e], us[e],
						        us[e] / us[0] - 1);
					fflush(csv);
				}
				free(values);
				prune_mask_free(&pm);
			}
		free(w), free(imp), free(masked), free(x), free(c), free(old), free(bias);
	}
	fclose(csv);
	printf("\n2 threads, kernels for N at run time; cost: the epilogue kernel's time over the plain one's (each the "
	       "fastest of %d rounds in turn); largest %+.1f%%\n", ROUNDS,
	       100 * worst);
	return ok ? 0 : 4;
}
