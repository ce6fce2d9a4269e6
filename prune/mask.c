/* mask.c - deciding the perforations of a PatternIR on real importance.
 *
 * Greedy from coarse to fine (DESIGN.md §3): every perforated loop keeps, in
 * each of its selection regions, the nnz iterations with the highest score.
 * The weights are first laid out in nest order (every loop at its full
 * length, padding as zero importance) so that the sub-block one iteration
 * addresses is contiguous.  Then the nest is reduced from the innermost loop
 * out: level j holds one value per prefix of loops 0..j-1.  A perforated
 * loop ranks its iterations by the level below it:
 *   total      the sum of the whole sub-block (the paper's rule);
 *   lookahead  what survives the perforations inside the sub-block (its own
 *              kept iterations at every inner perforated level).
 * Inner decisions never depend on outer ones (a region's choice looks only
 * inside the region), so every region of every level is decided once, and
 * the mask is read off by walking the kept iterations from the outside in.
 * Ties go to the lower iteration index; all sums run in double in index
 * order, so the result is deterministic.
 */
#include "prune.h"
#include "../support/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Cand {
	double score;
	int32_t idx;
} Cand;

static int cmp_cand(const void *a, const void *b)
{
	const Cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score < y->score ? 1 : -1; /* higher first */
	return (x->idx > y->idx) - (x->idx < y->idx); /* then lower index */
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Keeps the k best of row[0..len-1]: writes their indices ascending to
 * out and returns the sum of their scores (added in index order). */
static double select_top(const double *row, int64_t len, int64_t k, int32_t *out, Cand *scratch)
{
	if (k == len) {
		double s = 0;
		for (int64_t v = 0; v < len; v++)
			out[v] = (int32_t)v, s += row[v];
		return s;
	}
	if (len <= 32) {
		/* insertion into a sorted top list: small rows (N:M) are the
		 * common case and need no sort call */
		int64_t n = 0;
		for (int64_t v = 0; v < len; v++) {
			Cand c = {row[v], (int32_t)v};
			int64_t at = n < k ? n : k;
			while (at > 0 && cmp_cand(&c, &scratch[at - 1]) < 0)
				at--;
			if (at >= k)
				continue;
			int64_t last = n < k ? n : k - 1;
			memmove(&scratch[at + 1], &scratch[at], (size_t)(last - at) * sizeof *scratch);
			scratch[at] = c;
			if (n < k)
				n++;
		}
	} else {
		for (int64_t v = 0; v < len; v++)
			scratch[v] = (Cand){row[v], (int32_t)v};
		qsort(scratch, (size_t)len, sizeof *scratch, cmp_cand);
	}
	for (int64_t i = 0; i < k; i++)
		out[i] = scratch[i].idx;
	qsort(out, (size_t)k, sizeof *out, cmp_i32);
	double s = 0;
	for (int64_t i = 0; i < k; i++)
		s += row[out[i]];
	return s;
}

/* Offsets of real coordinates into the nest-order layout: the flat index
 * of (m, k) is off[m][m] + off[k][k]. */
static bool nest_offsets(const Pir *ir, int64_t *off[PIR_NAXES])
{
	int64_t ns[PIR_MAX_LOOPS], inner = 1;
	for (int i = ir->nloops - 1; i >= 0; i--) {
		ns[i] = inner;
		inner *= ir->loops[i].len;
	}
	for (int a = 0; a < PIR_NAXES; a++) {
		off[a] = calloc((size_t)ir->len[a], sizeof(int64_t));
		if (!off[a])
			return false;
	}
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		int64_t pv = 1;
		for (int c = l->ncomp - 1; c >= 0; c--) {
			const PirComp *pc = &l->comp[c];
			int64_t place = pv * ns[i];
			for (int64_t x = 0; x < ir->len[pc->axis]; x++)
				off[pc->axis][x] += ((x / pc->stride) % pc->extent) * place;
			pv *= pc->extent;
		}
	}
	return true;
}

void prune_mask_free(PruneMask *m)
{
	for (int i = 0; i < PIR_MAX_LOOPS; i++) {
		free(m->index[i]);
		m->index[i] = NULL;
	}
}

typedef struct Walk {
	const Pir *ir;
	int32_t *const *sel; /* per loop: chosen iterations, per real prefix */
	int target;          /* the perforated loop whose rows are written */
	int32_t *rows;
	int64_t next;
} Walk;

/* Enumerates the storage prefixes of loops 0..target-1 in row-major order,
 * copying the target's choice for each (o: real flat prefix). */
static void walk(Walk *w, int i, int64_t o)
{
	const PirLoop *l = &w->ir->loops[i];
	if (i == w->target) {
		memcpy(w->rows + w->next * l->nnz, w->sel[i] + o * l->nnz, (size_t)l->nnz * sizeof(int32_t));
		w->next++;
		return;
	}
	for (int64_t d = 0; d < l->nnz; d++) {
		int64_t v = pir_loop_is_perforated(l) ? w->sel[i][o * l->nnz + d] : d;
		walk(w, i + 1, o * l->len + v);
	}
}

bool prune_mask_build(const Pir *ir, const float *imp, int64_t M, int64_t K, PatRank rank,
                      PruneMask *out, char err[PRUNE_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	PATC_ASSERT(M == ir->len[PIR_AXIS_M] && K == ir->len[PIR_AXIS_K]);
	const int n = ir->nloops;
	int64_t size[PIR_MAX_LOOPS + 1]; /* size[j]: prefixes of loops 0..j-1 */
	size[0] = 1;
	for (int j = 0; j < n; j++)
		size[j + 1] = size[j] * ir->loops[j].len;
	const int64_t total = size[n];
	bool ok = false;
	int64_t *off[PIR_NAXES] = {NULL, NULL};
	float *T = NULL;
	double *R[PIR_MAX_LOOPS + 1] = {NULL};
	int32_t *sel[PIR_MAX_LOOPS] = {NULL};
	Cand *scratch = NULL;
	double *rowbuf = NULL;

	int64_t maxlen = 1;
	for (int j = 0; j < n; j++)
		maxlen = ir->loops[j].len > maxlen ? ir->loops[j].len : maxlen;
	T = calloc((size_t)total, sizeof *T);
	scratch = malloc((size_t)maxlen * sizeof *scratch);
	rowbuf = malloc((size_t)maxlen * sizeof *rowbuf);
	if (!T || !scratch || !rowbuf || !nest_offsets(ir, off)) {
		snprintf(err, PRUNE_ERR_MAX, "not enough memory to prune a %lld x %lld weight",
		         (long long)ir->ext[PIR_AXIS_M], (long long)ir->ext[PIR_AXIS_K]);
		goto done;
	}
	for (int64_t m = 0; m < M; m++) {
		const float *row = imp + m * K;
		float *base = T + off[PIR_AXIS_M][m];
		const int64_t *ok_ = off[PIR_AXIS_K];
		for (int64_t k = 0; k < K; k++)
			base[ok_[k]] = row[k];
	}

	/* Reduce from the innermost loop out, deciding perforated levels. */
	for (int j = n - 1; j >= 0; j--) {
		const PirLoop *l = &ir->loops[j];
		const int64_t len = l->len, rows = size[j];
		const bool perf = pir_loop_is_perforated(l);
		R[j] = malloc((size_t)rows * sizeof(double));
		if (perf)
			sel[j] = malloc((size_t)(rows * l->nnz) * sizeof(int32_t));
		if (!R[j] || (perf && !sel[j])) {
			snprintf(err, PRUNE_ERR_MAX, "not enough memory to prune this pattern");
			goto done;
		}
		for (int64_t o = 0; o < rows; o++) {
			const double *row;
			if (j == n - 1) {
				const float *src = T + o * len;
				for (int64_t v = 0; v < len; v++)
					rowbuf[v] = src[v];
				row = rowbuf;
			} else {
				row = R[j + 1] + o * len;
			}
			if (!perf) {
				double s = 0;
				for (int64_t v = 0; v < len; v++)
					s += row[v];
				R[j][o] = s;
				continue;
			}
			double kept = select_top(row, len, l->nnz, sel[j] + o * l->nnz, scratch);
			if (rank == PAT_RANK_LOOKAHEAD) {
				R[j][o] = kept;
			} else {
				double s = 0;
				for (int64_t v = 0; v < len; v++)
					s += row[v];
				R[j][o] = s;
			}
		}
		if (j + 1 < n) { /* level j+1 is no longer needed */
			free(R[j + 1]);
			R[j + 1] = NULL;
		}
	}

	/* Read the kept iterations off in storage order. */
	PirMetrics pm;
	pir_metrics(ir, &pm);
	for (int p = 0; p < n; p++) {
		if (!sel[p])
			continue;
		out->rows[p] = pm.loop[p].regions;
		out->index[p] = malloc((size_t)(pm.loop[p].index_len > 0 ? pm.loop[p].index_len : 1) *
		                       sizeof(int32_t));
		if (!out->index[p]) {
			snprintf(err, PRUNE_ERR_MAX, "not enough memory for the index arrays");
			goto done;
		}
		Walk w = {ir, sel, p, out->index[p], 0};
		walk(&w, 0, 0);
		PATC_ASSERT(w.next == out->rows[p]);
	}
	ok = true;
done:
	if (!ok)
		prune_mask_free(out);
	for (int j = 0; j <= n; j++)
		free(R[j]);
	for (int j = 0; j < n; j++)
		free(sel[j]);
	free(off[0]);
	free(off[1]);
	free(T);
	free(scratch);
	free(rowbuf);
	return ok;
}
