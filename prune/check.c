/* SPDX-License-Identifier: MIT */
/* check.c - a kernel's C against the float64 product of the masked weight
 * (prune.h: prune_check, prune_check_error), shared by both backends' --run
 * and the GPU measurements. */
#include "prune.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* From here on a float64 value rounds to float32's infinity (half an ulp
 * past FLT_MAX, as weights/safetensors.c has it for F64 tensors). */
#define F32_PAST ((double)FLT_MAX + 0x1p103)

/* v as the kernel reads it: rounded to 16 bits for dtype f16 or bf16. */
static double as_input(float v, PatDtype dt)
{
	return dt == PAT_F16 ? fp16_to_f32(f32_to_fp16(v)) : dt == PAT_BF16 ? bf16_to_f32(f32_to_bf16(v)) : v;
}

void prune_check(const float *dense, const float *x, const float *c, int64_t M, int64_t K, int64_t N, bool kn,
                 PatDtype dt, int64_t ncols, PruneCheck *out)
{
	memset(out, 0, sizeof *out);
	if (ncols <= 0 || ncols > N)
		ncols = N;
	/* the sampled columns of X gathered first, so each row of the weight
	 * is read once for all of them */
	double *xs = malloc((size_t)(ncols * K + 1) * sizeof *xs), *w = malloc((size_t)(K + 1) * sizeof *w);
	int64_t *cols = malloc((size_t)ncols * sizeof *cols);
	if (!xs || !w || !cols) {
		free(xs), free(w), free(cols);
		out->rel = -1;
		return;
	}
	for (int64_t s = 0; s < ncols; s++) {
		const int64_t n = ncols == N ? s : s * (N - 1) / (ncols > 1 ? ncols - 1 : 1);
		cols[s] = n;
		for (int64_t k = 0; k < K; k++)
			xs[s * K + k] = as_input(kn ? x[k * N + n] : x[n * K + k], dt);
	}
	/* Overflow is told apart from a wrong kernel element by element: a
	 * reference past float32's range cannot come out of any float32 kernel,
	 * and where the terms' magnitudes add up past it, a partial sum may
	 * overflow in the kernel's order (which is its own) though the total
	 * would not; only a non-finite element of C is excused by the latter. */
	double num = 0, den = 0;
	for (int64_t m = 0; m < M; m++) {
		for (int64_t k = 0; k < K; k++)
			w[k] = as_input(dense[m * K + k], dt);
		for (int64_t s = 0; s < ncols; s++) {
			const double *xr = xs + s * K;
			double ref = 0, mag = 0;
			for (int64_t k = 0; k < K; k++)
				ref += w[k] * xr[k], mag += fabs(w[k] * xr[k]);
			const double got = !c ? ref : kn ? c[m * N + cols[s]] : c[cols[s] * M + m];
			num += (got - ref) * (got - ref), den += ref * ref;
			/* the element named: the largest reference past the range, else
			 * the largest sum of magnitudes past it */
			const bool past = fabs(ref) >= F32_PAST, partial = !past && mag >= F32_PAST && !isfinite(got);
			if ((past && (!out->ref_past || fabs(ref) > fabs(out->ref))) ||
			    (partial && !out->ref_past && mag > out->mag)) {
				out->overflow = true;
				out->ref_past = past;
				out->m = m, out->n = cols[s];
				out->ref = ref, out->mag = mag;
			}
		}
	}
	free(xs), free(w), free(cols);
	out->rel = den > 0 ? sqrt(num) / sqrt(den) : sqrt(num);
}

double prune_check_error(const float *dense, const float *x, const float *c, int64_t M, int64_t K, int64_t N,
                         bool kn, PatDtype dt, int64_t ncols)
{
	PruneCheck r;
	prune_check(dense, x, c, M, K, N, kn, dt, ncols, &r);
	return r.rel;
}
