/* SPDX-License-Identifier: MIT */
/* importance.c - importance scores (docs/language.md §13).
 *
 *   magnitude  |w|             the default
 *   l2         w^2
 *   wanda      |w| * ||X_k||_2 (Sun et al., "A Simple and Effective Pruning
 *                              Approach for LLMs", 2023): column k's
 *                              activation norm over the calibration tokens
 *   tensor     the user's scores (movement, gradient...), non-negative
 *
 * Scores are float32.  l2 and wanda are computed in double and multiplied
 * by one power of two for the whole weight, chosen so that the largest lies
 * in [2^62, 2^64) (SCALE_TOP), then rounded once to float32: a power of two
 * is exact and common to every score, so no ratio, ranking or tie changes,
 * but a square of 1e-30 no longer sinks to 0 (tying weights that differ) nor
 * does 1e20's overflow.  Only scores below the largest by 2^188 or more
 * (l2: weights below it by 2^94) reach float32's subnormals, where
 * distinct values may round alike.  The largest stays far enough below
 * float32's top (2^128) that a block sum of up to 2^60 of them, which the
 * search rounds to float32 on the largest weights, is finite.
 */
#include "prune.h"
#include "../support/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SCALE_TOP = 63 };

/* The power of two that takes top, the largest of non-negative values,
 * into [2^(SCALE_TOP-1), 2^SCALE_TOP); 0 where top is 0. */
static int scale_for(double top)
{
	if (!(top > 0) || !isfinite(top))
		return 0;
	int e;
	frexp(top, &e);
	return SCALE_TOP - e;
}

void prune_importance(PatImportance kind, const float *w, const float *scores, const float *x,
                      int64_t n, int64_t M, int64_t K, float *imp)
{
	const int64_t count = M * K;
	switch (kind) {
	case PAT_IMP_MAGNITUDE:
		for (int64_t i = 0; i < count; i++)
			imp[i] = fabsf(w[i]);
		return;
	case PAT_IMP_L2: {
		/* the largest |w| scaled (exactly, in double) into [2^31, 2^32),
		 * then squared exactly in double (48 bits) and rounded once: equal
		 * to fl(w*w) times a power of two wherever that is a normal float */
		float top = 0;
		for (int64_t i = 0; i < count; i++)
			top = fmaxf(top, fabsf(w[i]));
		int e;
		frexpf(top, &e);
		const int s = top > 0 ? SCALE_TOP / 2 + 1 - e : 0;
		for (int64_t i = 0; i < count; i++) {
			const double ws = ldexp((double)w[i], s);
			imp[i] = (float)(ws * ws);
		}
		return;
	}
	case PAT_IMP_WANDA: {
		PATC_ASSERT(x && n > 0);
		double *sq = calloc((size_t)K, sizeof *sq);
		if (!sq)
			util_oom();
		for (int64_t t = 0; t < n; t++)
			for (int64_t k = 0; k < K; k++)
				sq[k] += (double)x[t * K + k] * x[t * K + k];
		double top = 0;
		for (int64_t k = 0; k < K; k++)
			sq[k] = sqrt(sq[k]);
		for (int64_t m = 0; m < M; m++)
			for (int64_t k = 0; k < K; k++)
				top = fmax(top, fabs((double)w[m * K + k]) * sq[k]);
		const int s = scale_for(top);
		for (int64_t m = 0; m < M; m++)
			for (int64_t k = 0; k < K; k++)
				imp[m * K + k] = (float)ldexp(fabs((double)w[m * K + k]) * sq[k], s);
		free(sq);
		return;
	}
	case PAT_IMP_TENSOR:
		PATC_ASSERT(scores);
		for (int64_t i = 0; i < count; i++)
			imp[i] = scores[i] == 0 ? 0.0f : scores[i]; /* -0 is 0 */
		return;
	case PAT_NIMPORTANCES:
		break;
	}
	util_ice(__FILE__, __LINE__, "unknown importance kind");
}
