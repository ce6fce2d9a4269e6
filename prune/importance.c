/* importance.c - importance scores (docs/language.md §13).
 *
 *   magnitude  |w|             the default
 *   l2         w^2
 *   wanda      |w| * ||X_k||_2 (Sun et al., "A Simple and Effective Pruning
 *                              Approach for LLMs", 2023): column k's
 *                              activation norm over the calibration tokens
 *   tensor     the user's scores (movement, gradient...), non-negative
 */
#include "prune.h"
#include "../support/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void prune_importance(PatImportance kind, const float *w, const float *scores, const float *x,
                      int64_t n, int64_t M, int64_t K, float *imp)
{
	const int64_t count = M * K;
	switch (kind) {
	case PAT_IMP_MAGNITUDE:
		for (int64_t i = 0; i < count; i++)
			imp[i] = fabsf(w[i]);
		return;
	case PAT_IMP_L2:
		for (int64_t i = 0; i < count; i++)
			imp[i] = w[i] * w[i];
		return;
	case PAT_IMP_WANDA: {
		PATC_ASSERT(x && n > 0);
		double *sq = calloc((size_t)K, sizeof *sq);
		if (!sq)
			util_oom();
		for (int64_t t = 0; t < n; t++)
			for (int64_t k = 0; k < K; k++)
				sq[k] += (double)x[t * K + k] * x[t * K + k];
		for (int64_t m = 0; m < M; m++)
			for (int64_t k = 0; k < K; k++)
				imp[m * K + k] = (float)(fabs((double)w[m * K + k]) * sqrt(sq[k]));
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
