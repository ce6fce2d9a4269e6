/* SPDX-License-Identifier: MIT */
/* mask.c - deciding the perforations of a PatternIR on real importance.
 *
 * Greedy from coarse to fine (docs/language.md §13.1): every perforated loop keeps, in
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

#ifdef __SSE2__
#include <emmintrin.h>
#endif
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

/* Small rows (N:M, sub-blocks) are the common case: every candidate is
 * ranked by counting the ones that beat it (higher score, or equal score
 * and lower index), without branches; the kept ones come out in index
 * order.  The sum adds them in index order. */
static inline double top_small(const double *row, int64_t len, int64_t k, int32_t *out)
{
	int64_t n = 0;
	double s = 0;
	for (int64_t c = 0; c < len; c++) {
		int64_t beaten = 0;
		for (int64_t d = 0; d < len; d++)
			beaten += (row[d] > row[c]) | ((row[d] == row[c]) & (d < c));
		if (beaten < k) {
			out[n++] = (int32_t)c;
			s += row[c];
		}
	}
	return s;
}

#define TOP_SMALL(N)                                                                       \
	static double top_small_##N(const double *row, int64_t k, int32_t *out)             \
	{                                                                                  \
		return top_small(row, N, k, out);                                           \
	}
TOP_SMALL(2)
TOP_SMALL(4)
TOP_SMALL(8)
TOP_SMALL(16)

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
	if (len <= 16) {
		switch (len) { /* constant lengths unroll into straight-line code */
		case 2: return top_small_2(row, k, out);
		case 4: return top_small_4(row, k, out);
		case 8: return top_small_8(row, k, out);
		case 16: return top_small_16(row, k, out);
		default: return top_small(row, len, k, out);
		}
	}
	if (len <= 32) {
		/* insertion into a sorted top list */
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
	if (k > 32) {
		qsort(out, (size_t)k, sizeof *out, cmp_i32);
	} else { /* few: insertion sort beats a qsort call */
		for (int64_t i = 1; i < k; i++)
			for (int64_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
				int32_t t = out[j];
				out[j] = out[j - 1];
				out[j - 1] = t;
			}
	}
	double s = 0;
	for (int64_t i = 0; i < k; i++)
		s += row[out[i]];
	return s;
}

/* The innermost level, straight from the weights: the nest is walked in
 * order (loops 0..n-2 give the row, the last loop its entries), each row
 * gathered from the real weights (padding reads as 0) and reduced at once,
 * so the nest-order copy of the whole weight is never built. */
typedef struct Leaf {
	const PruneCoords *co;
	const float *imp;
	int64_t M, K;
	int last;             /* n - 1 */
	const PirLoop *loop;  /* the innermost loop */
	PatRank rank;
	double *R;            /* per row: the value the level above ranks by */
	double *Kept;         /* per row: the importance it keeps (total rank only) */
	/* When set, the dense level above is summed here directly: row o adds
	 * into Up[o / uplen] (and UpKept), in the order the level would. */
	double *Up, *UpKept;
	int64_t uplen;
	double *UpR, *UpK; /* the arrays of the level above, if it may be fused */
	bool fused;        /* set by leaf_stream when it fused that level */
	int32_t *sel;         /* per row: kept iterations, when perforated */
	int64_t row;
	double *buf;
	Cand *scratch;
} Leaf;

/* out[o] = the sum of row o of the rows x len values at rows. */
static void row_sums(const double *rows, int64_t n, int64_t len, double *out)
{
	for (int64_t o = 0; o < n; o++) {
		const double *row = rows + o * len;
		double s = 0;
		for (int64_t v = 0; v < len; v++)
			s += row[v];
		out[o] = s;
	}
}

static double reduce_row(const double *row, const double *krow, const PirLoop *l, PatRank rank,
                         int32_t *sel, Cand *scratch, double *kept);

#ifdef __SSE2__
/* A row of four under a perforation (N:4, the commonest case) in SSE:
 * candidate c is beaten by d when v[d] > v[c], or v[d] == v[c] and d < c;
 * it is kept when fewer than k beat it.  Same result as select_top. */
static inline double top4_sse(const float *v, int64_t k, int32_t *out, double *total)
{
	__m128 x = _mm_loadu_ps(v);
	__m128i beaten = _mm_setzero_si128();
	/* rotation s puts v[(c + s) % 4] at lane c */
	__m128 r1 = _mm_shuffle_ps(x, x, _MM_SHUFFLE(0, 3, 2, 1));
	__m128 r2 = _mm_shuffle_ps(x, x, _MM_SHUFFLE(1, 0, 3, 2));
	__m128 r3 = _mm_shuffle_ps(x, x, _MM_SHUFFLE(2, 1, 0, 3));
	/* lanes c where (c + s) % 4 < c: a tie there goes to the other one */
	const __m128i lo1 = _mm_set_epi32(-1, 0, 0, 0), lo2 = _mm_set_epi32(-1, -1, 0, 0),
	              lo3 = _mm_set_epi32(-1, -1, -1, 0);
	beaten = _mm_sub_epi32(beaten, _mm_castps_si128(_mm_cmpgt_ps(r1, x)));
	beaten = _mm_sub_epi32(beaten, _mm_castps_si128(_mm_cmpgt_ps(r2, x)));
	beaten = _mm_sub_epi32(beaten, _mm_castps_si128(_mm_cmpgt_ps(r3, x)));
	beaten = _mm_sub_epi32(beaten, _mm_and_si128(_mm_castps_si128(_mm_cmpeq_ps(r1, x)), lo1));
	beaten = _mm_sub_epi32(beaten, _mm_and_si128(_mm_castps_si128(_mm_cmpeq_ps(r2, x)), lo2));
	beaten = _mm_sub_epi32(beaten, _mm_and_si128(_mm_castps_si128(_mm_cmpeq_ps(r3, x)), lo3));
	int keep = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(beaten, _mm_set1_epi32((int)k))));
	/* ranks are a permutation, so exactly k bits are set: their indices,
	 * ascending, come from a table */
	static const int8_t idx[16][4] = {
		{0, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}, {2, 0, 0, 0}, {0, 2, 0, 0},
		{1, 2, 0, 0}, {0, 1, 2, 0}, {3, 0, 0, 0}, {0, 3, 0, 0}, {1, 3, 0, 0}, {0, 1, 3, 0},
		{2, 3, 0, 0}, {0, 2, 3, 0}, {1, 2, 3, 0}, {0, 1, 2, 3},
	};
	double s = 0;
	for (int64_t i = 0; i < k; i++) {
		out[i] = idx[keep][i];
		s += v[idx[keep][i]];
	}
	*total = (((double)v[0] + v[1]) + v[2]) + v[3];
	return s;
}
#endif

/* The row of the innermost level at values buf[0..len-1], stored at row o. */
static inline void leaf_store(Leaf *L, int64_t o, const float *v, bool sse4)
{
	const PirLoop *l = L->loop;
	int32_t *sel = L->sel ? L->sel + o * l->nnz : NULL;
#ifdef __SSE2__
	double value, kept;
	if (sse4 && sel) {
		double total;
		kept = top4_sse(v, l->nnz, sel, &total);
		value = L->Kept ? total : kept;
	} else
#endif
	{
		(void)sse4;
		for (int64_t i = 0; i < l->len; i++)
			L->buf[i] = v[i];
		value = reduce_row(L->buf, L->buf, l, L->rank, sel, L->scratch, &kept);
	}
	if (L->Up) {
		L->Up[o / L->uplen] += value;
		if (L->UpKept)
			L->UpKept[o / L->uplen] += kept;
		return;
	}
	L->R[o] = value;
	if (L->Kept)
		L->Kept[o] = kept;
}

/* When the innermost loop runs along k with stride 1 (N:M, sub-block rows:
 * the common case), its rows are contiguous runs of W's rows.  Then W is
 * read once, in memory order, and each row's result goes to its nest-order
 * index, which is a sum of a part from m and a part from k.  Rows that reach
 * into the padding are gathered with bounds checks. */
static bool leaf_stream(Leaf *L, const Pir *ir)
{
	const PirLoop *l = L->loop;
	if (l->ncomp != 1 || l->comp[0].axis != PIR_AXIS_K || l->comp[0].stride != 1)
		return false;
	const int last = L->last;
	const int64_t len = l->len, M = L->M, K = L->K;
	const int64_t em = ir->ext[PIR_AXIS_M], ek = ir->ext[PIR_AXIS_K];
	int64_t *om = calloc((size_t)em, sizeof *om), *ok = calloc((size_t)ek, sizeof *ok);
	float *v = malloc((size_t)(len + 4) * sizeof *v);
	if (!om || !ok || !v)
		util_oom();
	int64_t rs = 1; /* row stride of loop i: the product of the lengths after it */
	for (int i = last - 1; i >= 0; i--) {
		const PirLoop *li = &ir->loops[i];
		int64_t pv = 1;
		for (int c = li->ncomp - 1; c >= 0; c--) {
			const PirComp *pc = &li->comp[c];
			int64_t *o = pc->axis == PIR_AXIS_M ? om : ok;
			int64_t ext = pc->axis == PIR_AXIS_M ? em : ek;
			for (int64_t x = 0; x < ext; x++)
				o[x] += ((x / pc->stride) % pc->extent) * pv * rs;
			pv *= pc->extent;
		}
		rs *= li->len;
	}
	const bool sse4 = len == 4;
	const int64_t full = K / len * len; /* row bases whose row is all real */
	/* Fuse the dense level above when its sums come out in order: it runs
	 * along one axis (so its iterations arrive in ascending order) and no
	 * row touches the padding (those come last). */
	const PirLoop *up = last > 0 ? &ir->loops[last - 1] : NULL;
	if (up && !pir_loop_is_perforated(up) && up->ncomp == 1 && em == M && ek == K && L->UpR) {
		L->Up = L->UpR;
		L->UpKept = L->UpK;
		L->uplen = up->len;
		memset(L->Up, 0, (size_t)(em * ek / len / up->len) * sizeof(double));
		if (L->UpKept)
			memset(L->UpKept, 0, (size_t)(em * ek / len / up->len) * sizeof(double));
		L->fused = true;
	}
	for (int64_t m = 0; m < M; m++) {
		const float *row = L->imp + m * K;
		for (int64_t kb = 0; kb < full; kb += len)
			leaf_store(L, om[m] + ok[kb], row + kb, sse4);
	}
	for (int64_t m = 0; m < em; m++) /* rows touching the padding */
		for (int64_t kb = m < M ? full : 0; kb < ek; kb += len) {
			for (int64_t i = 0; i < len; i++)
				v[i] = m < M && kb + i < K ? L->imp[m * K + kb + i] : 0.0f;
			leaf_store(L, om[m] + ok[kb], v, sse4);
		}
	L->row = em * (ek / len);
	free(om);
	free(ok);
	free(v);
	return true;
}

/* Walks the rows of the innermost loop in nest order with an odometer over
 * loops 0..n-2.  A row that lies inside the real weight (the common case)
 * is gathered through precomputed offsets without bounds checks. */
static void leaf_rows(Leaf *L)
{
	const PruneCoords *co = L->co;
	const int last = L->last;
	const PirLoop *l = L->loop;
	const int64_t len = l->len, M = L->M, K = L->K;
	const int64_t *cmL = co->cm[last], *ckL = co->ck[last];
	int64_t maxm = 0, maxk = 0;
	int64_t *off = malloc((size_t)len * sizeof *off);
	float *fbuf = malloc((size_t)(len + 4) * sizeof *fbuf);
	if (!off || !fbuf)
		util_oom();
	for (int64_t v = 0; v < len; v++) {
		off[v] = cmL[v] * K + ckL[v];
		maxm = cmL[v] > maxm ? cmL[v] : maxm;
		maxk = ckL[v] > maxk ? ckL[v] : maxk;
	}
	int64_t d[PIR_MAX_LOOPS] = {0};
	int64_t m = 0, k = 0;
	for (int i = 0; i < last; i++)
		m += co->cm[i][0], k += co->ck[i][0];
	const bool perf = L->sel != NULL;
	for (;;) {
		/* one row */
		bool inside = m + maxm < M && k + maxk < K;
		int32_t *sel = perf ? L->sel + L->row * l->nnz : NULL;
		double value, kept;
#ifdef __SSE2__
		if (len == 4 && perf && inside) {
			const float *base = L->imp + m * K + k;
			/* rows of the nest jump across rows of W: fetch ahead */
			__builtin_prefetch(base + off[0] + 64);
			for (int v = 0; v < 4; v++)
				fbuf[v] = base[off[v]];
			double total;
			kept = top4_sse(fbuf, l->nnz, sel, &total);
			value = L->rank == PAT_RANK_LOOKAHEAD ? kept : total;
			goto store;
		}
#endif
		if (inside) {
			const float *base = L->imp + m * K + k;
			for (int64_t v = 0; v < len; v++)
				L->buf[v] = base[off[v]];
		} else {
			for (int64_t v = 0; v < len; v++) {
				int64_t mm = m + cmL[v], kk = k + ckL[v];
				L->buf[v] = mm < M && kk < K ? L->imp[mm * K + kk] : 0.0;
			}
		}
		value = reduce_row(L->buf, L->buf, l, L->rank, sel, L->scratch, &kept);
#ifdef __SSE2__
	store:
#endif
		if (L->Kept)
			L->Kept[L->row] = kept;
		L->R[L->row++] = value;
		/* advance the odometer */
		int i = last - 1;
		for (; i >= 0; i--) {
			const int64_t *cm = co->cm[i], *ck = co->ck[i];
			if (d[i] + 1 < co->len[i]) {
				m += cm[d[i] + 1] - cm[d[i]], k += ck[d[i] + 1] - ck[d[i]];
				d[i]++;
				break;
			}
			m += cm[0] - cm[d[i]], k += ck[0] - ck[d[i]];
			d[i] = 0;
		}
		if (i < 0)
			break;
	}
	free(off);
	free(fbuf);
}

/* The value of one row for the level above: the sum of the row, or, for a
 * perforated loop under lookahead, the sum of what it keeps.  A perforated
 * loop records its choice in sel.  *kept gets the importance the row keeps,
 * from its children's kept values krow (the same as row under lookahead). */
static double reduce_row(const double *row, const double *krow, const PirLoop *l, PatRank rank,
                         int32_t *sel, Cand *scratch, double *kept)
{
	const int64_t len = l->len;
	if (!sel) {
		double s = 0, ks = 0;
		for (int64_t v = 0; v < len; v++)
			s += row[v];
		if (krow != row)
			for (int64_t v = 0; v < len; v++)
				ks += krow[v];
		*kept = krow != row ? ks : s;
		return s;
	}
	double top = select_top(row, len, l->nnz, sel, scratch);
	if (rank == PAT_RANK_LOOKAHEAD) {
		*kept = top;
		return top;
	}
	double s = 0, ks = 0;
	for (int64_t v = 0; v < len; v++)
		s += row[v];
	for (int64_t i = 0; i < l->nnz; i++)
		ks += krow[sel[i]];
	*kept = ks;
	return s;
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
 * copying the target's choice for each. */
static void walk(Walk *w)
{
	const Pir *ir = w->ir;
	const int t = w->target;
	const int64_t nnz = ir->loops[t].nnz;
	if (t == 0) {
		memcpy(w->rows, w->sel[0], (size_t)nnz * sizeof(int32_t));
		w->next = 1;
		return;
	}
	/* an odometer over the storage digits of loops 0..t-1; o[i] is the
	 * real prefix of loops 0..i-1 */
	int64_t d[PIR_MAX_LOOPS] = {0}, o[PIR_MAX_LOOPS + 1];
	o[0] = 0;
	int i = 0;
	/* when the loop just outside the target is dense, loop it here */
	const int u = t - 1;
	const bool inner = !pir_loop_is_perforated(&ir->loops[u]);
	const int stop = inner ? u : t;
	const int64_t ulen = ir->loops[u].len;
	int32_t *dst = w->rows;
	for (;;) {
		for (; i < stop; i++) {
			const PirLoop *l = &ir->loops[i];
			int64_t v = pir_loop_is_perforated(l) ? w->sel[i][o[i] * l->nnz + d[i]] : d[i];
			o[i + 1] = o[i] * l->len + v;
		}
		if (inner) {
			const int32_t *src = w->sel[t] + o[u] * ulen * nnz;
			for (int64_t x = 0; x < ulen * nnz; x++)
				dst[x] = src[x]; /* rows o[u]*ulen .. +ulen-1 are contiguous */
			dst += ulen * nnz;
			w->next += ulen;
		} else {
			const int32_t *src = w->sel[t] + o[t] * nnz;
			for (int64_t x = 0; x < nnz; x++)
				dst[x] = src[x];
			dst += nnz;
			w->next++;
		}
		for (i = stop - 1; i >= 0 && ++d[i] == ir->loops[i].nnz; i--)
			d[i] = 0;
		if (i < 0)
			return;
	}
}

void prune_workspace_free(PruneWorkspace *ws)
{
	free(ws->r);
	free(ws->sel);
	memset(ws, 0, sizeof *ws);
}

/* Grows *buf to hold n items of size `item`. */
static bool reserve(void **buf, size_t *cap, size_t n, size_t item)
{
	if (n <= *cap)
		return true;
	void *p = realloc(*buf, n * item);
	if (!p)
		return false;
	*buf = p;
	*cap = n;
	return true;
}

void prune_mask_build(const Pir *ir, const float *imp, int64_t M, int64_t K, PatRank rank, PruneMask *out)
{
	PruneWorkspace ws = {0};
	prune_mask_build_ws(ir, imp, M, K, rank, &ws, out);
	prune_workspace_free(&ws);
}

void prune_mask_build_ws(const Pir *ir, const float *imp, int64_t M, int64_t K, PatRank rank, PruneWorkspace *ws,
                         PruneMask *out)
{
	memset(out, 0, sizeof *out);
	PATC_ASSERT(M == ir->len[PIR_AXIS_M] && K == ir->len[PIR_AXIS_K]);
	const int n = ir->nloops;
	int64_t size[PIR_MAX_LOOPS + 1]; /* size[j]: prefixes of loops 0..j-1 */
	size[0] = 1;
	for (int j = 0; j < n; j++)
		size[j + 1] = size[j] * ir->loops[j].len;
	double *R[PIR_MAX_LOOPS + 1] = {NULL}, *Kp[PIR_MAX_LOOPS + 1] = {NULL};
	int32_t *sel[PIR_MAX_LOOPS] = {NULL};
	Cand *scratch = NULL;
	double *rowbuf = NULL;
	PruneCoords co;
	prune_coords_init(&co, ir);

	int64_t maxlen = 1;
	for (int j = 0; j < n; j++)
		maxlen = ir->loops[j].len > maxlen ? ir->loops[j].len : maxlen;
	scratch = malloc((size_t)maxlen * sizeof *scratch);
	rowbuf = malloc((size_t)maxlen * sizeof *rowbuf);
	/* Every level's values and choices live in the workspace. */
	size_t nr = 0, nsel = 0;
	for (int j = 0; j < n; j++) {
		nr += (size_t)size[j];
		if (pir_loop_is_perforated(&ir->loops[j]))
			nsel += (size_t)(size[j] * ir->loops[j].nnz);
	}
	/* total ranking also carries what each row keeps (for the metrics) */
	const size_t nkept = rank == PAT_RANK_TOTAL ? nr : 0;
	if (!reserve((void **)&ws->r, &ws->rcap, nr + nkept, sizeof(double)) ||
	    !reserve((void **)&ws->sel, &ws->selcap, nsel ? nsel : 1, sizeof(int32_t)))
		goto nomem;
	nr = nsel = 0;
	for (int j = 0; j < n; j++) {
		R[j] = ws->r + nr;
		Kp[j] = nkept ? ws->r + nkept + nr : NULL;
		nr += (size_t)size[j];
		if (pir_loop_is_perforated(&ir->loops[j])) {
			sel[j] = ws->sel + nsel;
			nsel += (size_t)(size[j] * ir->loops[j].nnz);
		}
	}
	if (!scratch || !rowbuf)
		goto nomem;

	/* The innermost level from the weights, then every level above from
	 * the one below it, deciding perforated levels on the way. */
	Leaf leaf = {.co = &co, .imp = imp, .M = M, .K = K, .last = n - 1,
	             .loop = &ir->loops[n - 1], .rank = rank, .R = R[n - 1], .Kept = Kp[n - 1],
	             .sel = sel[n - 1], .buf = rowbuf, .scratch = scratch,
	             .UpR = n >= 2 ? R[n - 2] : NULL, .UpK = n >= 2 ? Kp[n - 2] : NULL};
	if (!leaf_stream(&leaf, ir))
		leaf_rows(&leaf);
	PATC_ASSERT(leaf.row == size[n - 1]);
	for (int j = leaf.fused ? n - 3 : n - 2; j >= 0; j--) {
		const PirLoop *l = &ir->loops[j];
		if (!sel[j]) { /* a dense level: plain sums, no call per row */
			row_sums(R[j + 1], size[j], l->len, R[j]);
			if (Kp[j])
				row_sums(Kp[j + 1], size[j], l->len, Kp[j]);
			continue;
		}
		for (int64_t o = 0; o < size[j]; o++) {
			const double *row = R[j + 1] + o * l->len;
			double kept;
			R[j][o] = reduce_row(row, Kp[j + 1] ? Kp[j + 1] + o * l->len : row, l, rank,
			                     sel[j] ? sel[j] + o * l->nnz : NULL, scratch, &kept);
			if (Kp[j])
				Kp[j][o] = kept;
		}
	}

	out->has_kept = true; /* the importance that survives, summed on the way */
	out->kept = Kp[0] ? Kp[0][0] : R[0][0];
	/* Read the kept iterations off in storage order. */
	PirMetrics pm;
	pir_metrics(ir, &pm);
	for (int p = 0; p < n; p++) {
		if (!sel[p])
			continue;
		out->rows[p] = pm.loop[p].regions;
		out->index[p] = malloc((size_t)(pm.loop[p].index_len > 0 ? pm.loop[p].index_len : 1) *
		                       sizeof(int32_t));
		if (!out->index[p])
			goto nomem;
		Walk w = {ir, sel, p, out->index[p], 0};
		walk(&w);
		PATC_ASSERT(w.next == out->rows[p]);
	}
	prune_coords_free(&co);
	free(scratch);
	free(rowbuf);
	return;
nomem:
	util_oom_for("pruning a %lld x %lld weight", (long long)ir->ext[PIR_AXIS_M], (long long)ir->ext[PIR_AXIS_K]);
}
