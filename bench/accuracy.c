/* SPDX-License-Identifier: MIT */
/* accuracy.c - the accuracy study of docs/accuracy.md.
 *
 *   accuracy STDLIB [WEIGHTS.safetensors]
 *
 * For every 2-D matrix with both sides >= 256 in the weights file (when
 * given) and for synthetic weights of each structured kind, prints in
 * Markdown the magnitude loss rate of the standard patterns at 75% sparsity
 * beside the unstructured bound, and compares the two ways of ranking
 * multi-level perforations (total vs lookahead).
 */
#include "patterns.h"
#include "prune/prune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Pattern {
	const char *label, *body;
	bool coarse; /* skips whole tiles: blocks, tiles, channels */
} Pattern;

static const Pattern patterns[] = {
	{"row-balanced", "apply row_balanced(25%);", false},
	{"N:M 1:4", "apply nm(1, 4);", false},
	{"N:M 2:8", "apply nm(2, 8);", false},
	{"block 8", "apply block(8, 8, 25%);", true},
	{"block 16", "apply block(16, 16, 25%);", true},
	{"block 32", "apply block(32, 32, 25%);", true},
	{"block 64", "apply block(64, 64, 25%);", true},
	{"tile-v 32", "apply tile_v(32, 25%);", true},
	{"tile-v 64", "apply tile_v(64, 25%);", true},
	{"tile-v 128", "apply tile_v(128, 25%);", true},
	{"tile-h 32", "apply tile_h(32, 25%);", true},
	{"tile-h 64", "apply tile_h(64, 25%);", true},
	{"tile-h 128", "apply tile_h(128, 25%);", true},
	{"channel", "apply channel(25%);", true},
	{"hybrid 32x32+2:4", "apply hybrid(32, 32, 50%, 2, 4);", false},
};
enum { NPAT = sizeof patterns / sizeof patterns[0] };

/* Multi-level patterns, where the ranking rule matters. */
static const Pattern multilevel[] = {
	{"hybrid 16x16 blocks 50% + 2:4", "apply hybrid(16, 16, 50%, 2, 4);", false},
	{"hybrid 32x32 blocks 50% + 2:4", "apply hybrid(32, 32, 50%, 2, 4);", false},
	{"hybrid 64x64 blocks 50% + 2:4", "apply hybrid(64, 64, 50%, 2, 4);", false},
	{"tile-v 64 columns-of-4 50% + 2:4",
	 "split m -> m0, m1 : _, 64 pad; split k -> k0, k1 : _, 4 pad;"
	 " reorder m0, k0, m1, k1; perforate k0 keep 50%; perforate k1 keep 2;", false},
	{"blocks 64x64 50%, 8x8 inside 50%",
	 "split m -> m0, m1, m2 : _, 8, 8 pad; split k -> k0, k1, k2 : _, 8, 8 pad;"
	 " reorder m0, k0, m1, k1, m2, k2; perforate k0 keep 50%; perforate k1 keep 50%;", false},
};
enum { NML = sizeof multilevel / sizeof multilevel[0] };

typedef struct Matrix {
	char label[64];
	char name[TENSOR_NAME_MAX];
	int64_t M, K;
	float *imp;
	PruneBound bound;
} Matrix;

static bool run(const char *stdlib, const Matrix *m, const char *body, PatRank rank, PruneMetrics *out)
{
	Pir ir;
	if (!bench_pattern(stdlib, m->M, m->K, body, &ir))
		return false;
	PruneMask pm;
	prune_mask_build(&ir, m->imp, m->M, m->K, rank, &pm);
	prune_metrics(&ir, &pm, m->imp, &m->bound, m->imp, NULL, 0, m->M, m->K, out);
	prune_mask_free(&pm);
	return true;
}

static void loss_table(const char *stdlib, Matrix *mats, int n)
{
	printf("| pattern |");
	for (int i = 0; i < n; i++)
		printf(" %s |", mats[i].label);
	printf("\n|---|");
	for (int i = 0; i < n; i++)
		printf("---:|");
	printf("\n");
	double loss[NPAT][64], bound[64] = {0};
	for (int p = 0; p < NPAT; p++)
		for (int i = 0; i < n; i++) {
			PruneMetrics pm;
			loss[p][i] = run(stdlib, &mats[i], patterns[p].body, PAT_RANK_DEFAULT, &pm) ? pm.loss : NAN;
			if (p == 0)
				bound[i] = pm.bound_loss; /* 25% density everywhere (no padding) */
		}
	printf("| *unstructured bound* |");
	for (int i = 0; i < n; i++)
		printf(" *%.2f* |", 100 * bound[i]);
	printf("\n");
	/* The best pattern overall (row-balanced aside) and the best
	 * coarse-grained one (blocks, tiles, channels: the kinds whose kernels
	 * skip whole tiles), per matrix. */
	int best[64], coarse[64];
	for (int i = 0; i < n; i++) {
		best[i] = coarse[i] = -1;
		for (int q = 1; q < NPAT; q++) {
			if (isnan(loss[q][i]))
				continue;
			if (best[i] < 0 || loss[q][i] < loss[best[i]][i])
				best[i] = q;
			if (patterns[q].coarse && (coarse[i] < 0 || loss[q][i] < loss[coarse[i]][i]))
				coarse[i] = q;
		}
	}
	for (int p = 0; p < NPAT; p++) {
		printf("| %s |", patterns[p].label);
		for (int i = 0; i < n; i++) {
			if (isnan(loss[p][i]))
				printf(" - |");
			else if (p == best[i])
				printf(" **%.2f** |", 100 * loss[p][i]);
			else if (p == coarse[i])
				printf(" _%.2f_ |", 100 * loss[p][i]);
			else
				printf(" %.2f |", 100 * loss[p][i]);
		}
		printf("\n");
	}
	printf("| *best coarse-grained* |");
	for (int i = 0; i < n; i++)
		printf(" %s |", coarse[i] >= 0 ? patterns[coarse[i]].label : "-");
	printf("\n\nLoss rate 1 - R in %% of the total magnitude (lower is better). **Bold**: the lowest "
	       "loss among the structured patterns (row-balanced aside); _italic_: the lowest among "
	       "the coarse-grained ones (blocks, tiles, channels).\n");
}

static void rank_table(const char *stdlib, Matrix *mats, int n)
{
	printf("| pattern | matrices | mean retained, total | mean retained, lookahead | lookahead better | "
	       "equal | worse |\n|---|---:|---:|---:|---:|---:|---:|\n");
	for (int p = 0; p < NML; p++) {
		double st = 0, sl = 0;
		int better = 0, equal = 0, worse = 0, count = 0;
		for (int i = 0; i < n; i++) {
			PruneMetrics t, l;
			if (!run(stdlib, &mats[i], multilevel[p].body, PAT_RANK_TOTAL, &t) ||
			    !run(stdlib, &mats[i], multilevel[p].body, PAT_RANK_LOOKAHEAD, &l))
				continue;
			st += t.retained, sl += l.retained, count++;
			if (l.retained > t.retained + 1e-12)
				better++;
			else if (l.retained < t.retained - 1e-12)
				worse++;
			else
				equal++;
		}
		printf("| %s | %d | %.3f%% | %.3f%% | %d | %d | %d |\n", multilevel[p].label, count,
		       100 * st / count, 100 * sl / count, better, equal, worse);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: accuracy STDLIB [WEIGHTS.safetensors]\n");
		return 2;
	}
	const char *stdlib = argv[1];
	Matrix mats[64];
	int n = 0;
	if (argc > 2) {
		StInfo *info;
		int ni;
		char err[TENSOR_ERR_MAX];
		if (!st_list_file(argv[2], &info, &ni, err)) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("## %s\n\n", argv[2]);
		printf("| label | tensor | shape [out, in] |\n|---|---|---|\n");
		for (int i = 0; i < ni && n < 64; i++) {
			if (info[i].rank != 2 || info[i].shape[0] < 256 || info[i].shape[1] < 256)
				continue;
			Matrix *m = &mats[n];
			Tensor t;
			if (!st_read_file(argv[2], info[i].name, &t, err)) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			m->M = t.shape[0], m->K = t.shape[1];
			snprintf(m->name, sizeof m->name, "%s", info[i].name);
			snprintf(m->label, sizeof m->label, "W%d", n + 1);
			m->imp = malloc((size_t)t.count * sizeof(float));
			prune_importance(PAT_IMP_MAGNITUDE, t.data, NULL, NULL, 0, m->M, m->K, m->imp);
			prune_bound_init(&m->bound, m->imp, m->M * m->K);
			tensor_free(&t);
			printf("| %s | `%s` | [%lld, %lld] |\n", m->label, m->name, (long long)m->M,
			       (long long)m->K);
			n++;
		}
		free(info);
		printf("\n### Magnitude loss rate at 75%% sparsity (%%)\n\n");
		loss_table(stdlib, mats, n);
		printf("\n### Ranking multi-level perforations: total vs lookahead\n\n");
		rank_table(stdlib, mats, n);
		for (int i = 0; i < n; i++)
			free(mats[i].imp), prune_bound_free(&mats[i].bound);
	}
	/* Synthetic weights: 768 x 768, each structured kind. */
	printf("\n## Synthetic weights, 768 x 768, seed 1\n\n");
	n = 0;
	for (int k = 0; k < SYNTH_COUNT; k++) {
		Matrix *m = &mats[n++];
		m->M = m->K = 768;
		snprintf(m->label, sizeof m->label, "%s", synth_kind_names[k]);
		float *w = malloc(768 * 768 * sizeof *w);
		m->imp = malloc(768 * 768 * sizeof *w);
		synth_weights(w, 768, 768, 1, (SynthKind)k, 64);
		prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, 768, 768, m->imp);
		prune_bound_init(&m->bound, m->imp, 768 * 768);
		free(w);
	}
	printf("### Magnitude loss rate at 75%% sparsity (%%)\n\n");
	loss_table(stdlib, mats, n);
	printf("\n### Ranking multi-level perforations: total vs lookahead\n\n");
	rank_table(stdlib, mats, n);
	for (int i = 0; i < n; i++)
		free(mats[i].imp), prune_bound_free(&mats[i].bound);
	return 0;
}
