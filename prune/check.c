/* check.c - a kernel's C against the float64 product of the masked weight
 * (prune.h: prune_check_error), shared by both backends' --run and the GPU
 * measurements. */
#include "prune.h"

#include <math.h>
#include <stdlib.h>

/* v as the kernel reads it: rounded to 16 bits for dtype f16 or bf16. */
static double as_input(float v, PatDtype dt)
{
	return dt == PAT_F16 ? fp16_to_f32(f32_to_fp16(v)) : dt == PAT_BF16 ? bf16_to_f32(f32_to_bf16(v)) : v;
}

double prune_check_error(const float *dense, const float *x, const float *c, int64_t M, int64_t K, int64_t N,
                         bool kn, PatDtype dt, int64_t ncols)
{
	if (ncols <= 0 || ncols > N)
		ncols = N;
	/* the sampled columns of X gathered first, so each row of the weight
	 * is read once for all of them */
	double *xs = malloc((size_t)(ncols * K + 1) * sizeof *xs), *w = malloc((size_t)(K + 1) * sizeof *w);
	int64_t *cols = malloc((size_t)ncols * sizeof *cols);
	if (!xs || !w || !cols) {
		free(xs), free(w), free(cols);
		return -1;
	}
	for (int64_t s = 0; s < ncols; s++) {
		const int64_t n = ncols == N ? s : s * (N - 1) / (ncols > 1 ? ncols - 1 : 1);
		cols[s] = n;
		for (int64_t k = 0; k < K; k++)
			xs[s * K + k] = as_input(kn ? x[k * N + n] : x[n * K + k], dt);
	}
	double num = 0, den = 0;
	for (int64_t m = 0; m < M; m++) {
		for (int64_t k = 0; k < K; k++)
			w[k] = as_input(dense[m * K + k], dt);
		for (int64_t s = 0; s < ncols; s++) {
			const double *xr = xs + s * K;
			double ref = 0;
			for (int64_t k = 0; k < K; k++)
				ref += w[k] * xr[k];
			const double got = kn ? c[m * N + cols[s]] : c[cols[s] * M + m];
			num += (got - ref) * (got - ref), den += ref * ref;
		}
	}
	free(xs), free(w), free(cols);
	return den > 0 ? sqrt(num) / sqrt(den) : sqrt(num);
}
