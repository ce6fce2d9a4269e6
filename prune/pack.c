/* SPDX-License-Identifier: MIT */
/* pack.c - Fractal-ELL packing and unpacking (docs/language.md, Fractal-ELL storage).
 *
 * The packed value array has the shape of the loop list with each
 * perforated loop's length replaced by its nnz, in loop order.  One walk
 * over that shape serves packing, unpacking and the dense mask: at every
 * level the storage digit d becomes the iteration v (d itself for a dense
 * loop, index[L][row][d] for a perforated one, row being the storage prefix
 * so far), and v adds its precomputed (m, k) offset.  Coordinates outside
 * the real M x K are padding: packed as 0, never unpacked.
 */
#include "prune.h"
#include "../support/util.h"

#include <stdlib.h>
#include <string.h>

typedef enum WalkMode { WALK_PACK, WALK_UNPACK, WALK_MASK, WALK_SUM } WalkMode;

typedef struct Packer {
	const Pir *ir;
	const PruneMask *mask;
	int64_t M, K;
	PruneCoords co;
	WalkMode mode;
	const float *src;
	float *dst;
	uint8_t *bits;
	double sum; /* WALK_SUM: src over the kept real weights */
	int64_t count;
	bool unpadded;  /* the nest has no padding: every point is real */
	int64_t *off;   /* innermost loop: m offset * K + k offset, per iteration */
} Packer;

void prune_coords_init(PruneCoords *co, const Pir *ir)
{
	memset(co, 0, sizeof *co);
	co->n = ir->nloops;
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		co->len[i] = l->len;
		co->cm[i] = calloc((size_t)l->len, sizeof(int64_t));
		co->ck[i] = calloc((size_t)l->len, sizeof(int64_t));
		if (!co->cm[i] || !co->ck[i])
			util_oom();
		for (int64_t v = 0; v < l->len; v++) {
			int64_t rest = v;
			for (int c = l->ncomp - 1; c >= 0; c--) {
				const PirComp *pc = &l->comp[c];
				int64_t digit = rest % pc->extent;
				rest /= pc->extent;
				(pc->axis == PIR_AXIS_M ? co->cm[i] : co->ck[i])[v] += digit * pc->stride;
			}
		}
	}
}

void prune_coords_free(PruneCoords *co)
{
	for (int i = 0; i < co->n; i++) {
		free(co->cm[i]);
		free(co->ck[i]);
	}
}

static void packer_init(Packer *p, const Pir *ir, const PruneMask *m, int64_t M, int64_t K)
{
	memset(p, 0, sizeof *p);
	p->ir = ir, p->mask = m, p->M = M, p->K = K;
	prune_coords_init(&p->co, ir);
	p->unpadded = ir->ext[PIR_AXIS_M] == M && ir->ext[PIR_AXIS_K] == K;
	const int last = ir->nloops - 1;
	p->off = malloc((size_t)ir->loops[last].len * sizeof *p->off);
	if (!p->off)
		util_oom();
	for (int64_t v = 0; v < ir->loops[last].len; v++)
		p->off[v] = p->co.cm[last][v] * K + p->co.ck[last][v];
}

static void packer_free(Packer *p)
{
	prune_coords_free(&p->co);
	free(p->off);
}

/* The innermost loop of one storage row: row is its storage prefix, (m, k)
 * the coordinates the loops outside it add up to. */
static inline void walk_leaf(Packer *p, int64_t row, int64_t m, int64_t k)
{
	const int last = p->ir->nloops - 1;
	const PirLoop *l = &p->ir->loops[last];
	const int32_t *idx = p->mask->index[last] ? p->mask->index[last] + row * l->nnz : NULL;
	const int64_t *cm = p->co.cm[last], *ck = p->co.ck[last];
	const int64_t M = p->M, K = p->K, n = l->nnz, at0 = row * n;
	if (p->mode == WALK_PACK && p->unpadded) { /* the common case, without checks */
		const float *base = p->src + m * K + k;
		float *out = p->dst + at0;
		if (idx)
			for (int64_t d = 0; d < n; d++)
				out[d] = base[p->off[idx[d]]];
		else
			for (int64_t d = 0; d < n; d++)
				out[d] = base[p->off[d]];
		return;
	}
	switch (p->mode) {
	case WALK_PACK:
		for (int64_t d = 0; d < n; d++) {
			int64_t v = idx ? idx[d] : d, mm = m + cm[v], kk = k + ck[v];
			p->dst[at0 + d] = mm < M && kk < K ? p->src[mm * K + kk] : 0.0f;
		}
		break;
	case WALK_UNPACK:
		for (int64_t d = 0; d < n; d++) {
			int64_t v = idx ? idx[d] : d, mm = m + cm[v], kk = k + ck[v];
			if (mm < M && kk < K)
				p->dst[mm * K + kk] = p->src[at0 + d];
		}
		break;
	case WALK_MASK:
		for (int64_t d = 0; d < n; d++) {
			int64_t v = idx ? idx[d] : d, mm = m + cm[v], kk = k + ck[v];
			if (mm < M && kk < K)
				p->bits[mm * K + kk] = 1;
		}
		break;
	case WALK_SUM:
		for (int64_t d = 0; d < n; d++) {
			int64_t v = idx ? idx[d] : d, mm = m + cm[v], kk = k + ck[v];
			if (mm < M && kk < K) {
				p->sum += p->src[mm * K + kk];
				p->count++;
			}
		}
		break;
	}
}

/* Level i of the odometer from its digit d[i]: the storage row, m and k
 * of the point below it (row, m, k at i + 1). */
static inline void descend(const Packer *p, int i, const int64_t *d, int64_t *row, int64_t *m, int64_t *k)
{
	const PirLoop *l = &p->ir->loops[i];
	const int32_t *idx = p->mask->index[i];
	const int64_t v = idx ? idx[row[i] * l->nnz + d[i]] : d[i];
	row[i + 1] = row[i] * l->nnz + d[i];
	m[i + 1] = m[i] + p->co.cm[i][v];
	k[i + 1] = k[i] + p->co.ck[i][v];
}

/* As walk, when the loop outside the innermost one is dense: the odometer
 * runs over the loops outside both, and both are looped here, so short
 * innermost rows do not each cost an odometer step. */
static void walk2(Packer *p)
{
	const Pir *ir = p->ir;
	const int last = ir->nloops - 1, outer = last - 1;
	const PirLoop *lo = &ir->loops[outer];
	const int64_t *cmo = p->co.cm[outer], *cko = p->co.ck[outer];
	int64_t d[PIR_MAX_LOOPS] = {0}, row[PIR_MAX_LOOPS + 1], m[PIR_MAX_LOOPS + 1],
	        k[PIR_MAX_LOOPS + 1];
	row[0] = m[0] = k[0] = 0;
	int i = 0;
	for (;;) {
		for (; i < outer; i++)
			descend(p, i, d, row, m, k);
		for (int64_t v = 0; v < lo->len; v++)
			walk_leaf(p, row[outer] * lo->len + v, m[outer] + cmo[v], k[outer] + cko[v]);
		for (i = outer - 1; i >= 0 && ++d[i] == ir->loops[i].nnz; i--)
			d[i] = 0;
		if (i < 0)
			return;
	}
}

/* Every storage row in order, with an odometer over the loops outside the
 * innermost one (no recursion: rows are many and short). */
static void walk(Packer *p)
{
	const Pir *ir = p->ir;
	const int last = ir->nloops - 1;
	if (last >= 1 && !p->mask->index[last - 1]) {
		walk2(p);
		return;
	}
	int64_t d[PIR_MAX_LOOPS] = {0}, row[PIR_MAX_LOOPS + 1], m[PIR_MAX_LOOPS + 1],
	        k[PIR_MAX_LOOPS + 1];
	row[0] = m[0] = k[0] = 0;
	int i = 0;
	for (;;) {
		for (; i < last; i++) /* levels i..last-1 from their digits */
			descend(p, i, d, row, m, k);
		walk_leaf(p, row[last], m[last], k[last]);
		for (i = last - 1; i >= 0 && ++d[i] == ir->loops[i].nnz; i--)
			d[i] = 0;
		if (i < 0)
			return;
	}
}

float *prune_pack_new(const Pir *ir, const PruneMask *m, const float *w, int64_t M, int64_t K,
                      int64_t *nvalues, float *dense)
{
	PirMetrics pm;
	pir_metrics(ir, &pm);
	float *values = malloc((size_t)(pm.values > 0 ? pm.values : 1) * sizeof *values);
	if (!values)
		return NULL;
	prune_pack(ir, m, w, M, K, values);
	if (dense)
		prune_unpack(ir, m, values, M, K, dense);
	if (nvalues)
		*nvalues = pm.values;
	return values;
}

/* One walk of mode over the kept weights, from src into dst. */
static void walk_once(const Pir *ir, const PruneMask *m, int64_t M, int64_t K, WalkMode mode, const float *src,
                      float *dst)
{
	Packer p;
	packer_init(&p, ir, m, M, K);
	p.mode = mode, p.src = src, p.dst = dst;
	walk(&p);
	packer_free(&p);
}

void prune_pack(const Pir *ir, const PruneMask *m, const float *w, int64_t M, int64_t K,
                float *values)
{
	walk_once(ir, m, M, K, WALK_PACK, w, values);
}

void prune_unpack(const Pir *ir, const PruneMask *m, const float *values, int64_t M, int64_t K,
                  float *w)
{
	memset(w, 0, (size_t)(M * K) * sizeof *w);
	walk_once(ir, m, M, K, WALK_UNPACK, values, w);
}

void prune_kept_sum(const Pir *ir, const PruneMask *m, const float *v, int64_t M, int64_t K,
                    double *sum, int64_t *count)
{
	Packer p;
	packer_init(&p, ir, m, M, K);
	p.mode = WALK_SUM, p.src = v;
	walk(&p);
	*sum = p.sum;
	*count = p.count;
	packer_free(&p);
}

void prune_dense_mask(const Pir *ir, const PruneMask *m, int64_t M, int64_t K, uint8_t *mask)
{
	memset(mask, 0, (size_t)(M * K));
	Packer p;
	packer_init(&p, ir, m, M, K);
	p.mode = WALK_MASK, p.bits = mask;
	walk(&p);
	packer_free(&p);
}
