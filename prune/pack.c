/* pack.c - Fractal-ELL packing and unpacking (DESIGN.md §4).
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

typedef enum WalkMode { WALK_PACK, WALK_UNPACK, WALK_MASK } WalkMode;

typedef struct Packer {
	const Pir *ir;
	const PruneMask *mask;
	int64_t M, K;
	int64_t *cm[PIR_MAX_LOOPS], *ck[PIR_MAX_LOOPS]; /* per loop, per iteration */
	WalkMode mode;
	const float *src;
	float *dst;
	uint8_t *bits;
} Packer;

static void packer_init(Packer *p, const Pir *ir, const PruneMask *m, int64_t M, int64_t K)
{
	memset(p, 0, sizeof *p);
	p->ir = ir, p->mask = m, p->M = M, p->K = K;
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		p->cm[i] = calloc((size_t)l->len, sizeof(int64_t));
		p->ck[i] = calloc((size_t)l->len, sizeof(int64_t));
		if (!p->cm[i] || !p->ck[i])
			util_ice(__FILE__, __LINE__, "out of memory");
		for (int64_t v = 0; v < l->len; v++) {
			int64_t rest = v;
			for (int c = l->ncomp - 1; c >= 0; c--) {
				const PirComp *pc = &l->comp[c];
				int64_t digit = rest % pc->extent;
				rest /= pc->extent;
				(pc->axis == PIR_AXIS_M ? p->cm[i] : p->ck[i])[v] += digit * pc->stride;
			}
		}
	}
}

static void packer_free(Packer *p)
{
	for (int i = 0; i < p->ir->nloops; i++) {
		free(p->cm[i]);
		free(p->ck[i]);
	}
}

static void walk(Packer *p, int i, int64_t row, int64_t m, int64_t k)
{
	const PirLoop *l = &p->ir->loops[i];
	const int32_t *idx = p->mask->index[i] ? p->mask->index[i] + row * l->nnz : NULL;
	const int64_t *cm = p->cm[i], *ck = p->ck[i];
	if (i + 1 < p->ir->nloops) {
		for (int64_t d = 0; d < l->nnz; d++) {
			int64_t v = idx ? idx[d] : d;
			walk(p, i + 1, row * l->nnz + d, m + cm[v], k + ck[v]);
		}
		return;
	}
	const int64_t M = p->M, K = p->K;
	for (int64_t d = 0; d < l->nnz; d++) {
		int64_t v = idx ? idx[d] : d, mm = m + cm[v], kk = k + ck[v], at = row * l->nnz + d;
		bool real = mm < M && kk < K;
		switch (p->mode) {
		case WALK_PACK: p->dst[at] = real ? p->src[mm * K + kk] : 0.0f; break;
		case WALK_UNPACK:
			if (real)
				p->dst[mm * K + kk] = p->src[at];
			break;
		case WALK_MASK:
			if (real)
				p->bits[mm * K + kk] = 1;
			break;
		}
	}
}

void prune_pack(const Pir *ir, const PruneMask *m, const float *w, int64_t M, int64_t K,
                float *values)
{
	Packer p;
	packer_init(&p, ir, m, M, K);
	p.mode = WALK_PACK, p.src = w, p.dst = values;
	walk(&p, 0, 0, 0, 0);
	packer_free(&p);
}

void prune_unpack(const Pir *ir, const PruneMask *m, const float *values, int64_t M, int64_t K,
                  float *w)
{
	memset(w, 0, (size_t)(M * K) * sizeof *w);
	Packer p;
	packer_init(&p, ir, m, M, K);
	p.mode = WALK_UNPACK, p.src = values, p.dst = w;
	walk(&p, 0, 0, 0, 0);
	packer_free(&p);
}

void prune_dense_mask(const Pir *ir, const PruneMask *m, int64_t M, int64_t K, uint8_t *mask)
{
	memset(mask, 0, (size_t)(M * K));
	Packer p;
	packer_init(&p, ir, m, M, K);
	p.mode = WALK_MASK, p.bits = mask;
	walk(&p, 0, 0, 0, 0);
	packer_free(&p);
}
