/* SPDX-License-Identifier: MIT */
/* space.c - the search's pattern space: every axis tiled into levels,
 * one level perforated with the loops inside it (and optionally an N:M
 * inside that), each candidate's PatternIR built with the primitives and
 * its mask key (candidates with one key make one mask); the target
 * densities; and the region scores, the importance sums of each block
 * shape computed once, on which the candidates that choose among blocks
 * are scored (spec_reduced, search_score_reduced).  See search.h, steps 0
 * to 2. */
#define _POSIX_C_SOURCE 200809L
#include "search_impl.h"
#include "../support/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pattern space ---- */

/* The tilings of an axis of length len. */
static int axis_tilings(int64_t len, const SearchSettings *s, Tiling *out, int max)
{
	int n = 0;
	out[n++] = (Tiling){1, {len, 0, 0}, len};
	const int depth = s->max_depth < MAX_DEPTH ? s->max_depth : MAX_DEPTH;
	int64_t lo = 4;
	while (lo < s->min_length)
		lo *= 2;
	for (int64_t a = lo; depth >= 2 && a <= s->max_pattern && n < max; a *= 2) {
		int64_t outer = (len + a - 1) / a;
		if (outer >= s->min_length)
			out[n++] = (Tiling){2, {outer, a, 0}, outer * a};
		for (int64_t b = lo; depth >= 3 && b <= s->max_pattern && n < max; b *= 2) {
			int64_t o3 = (len + a * b - 1) / (a * b);
			if (o3 >= s->min_length)
				out[n++] = (Tiling){3, {o3, a, b}, o3 * a * b};
		}
	}
	return n;
}

static void level_name(const Spec *sp, int axis, int level, char name[PIR_NAME_MAX])
{
	const char *a = axis == PIR_AXIS_M ? "m" : "k";
	if (sp->t[axis].depth == 1)
		snprintf(name, PIR_NAME_MAX, "%s", a);
	else
		snprintf(name, PIR_NAME_MAX, "%s%d", a, level);
}

/* Builds the candidate's IR; false where a primitive refuses it. */
bool search_spec_ir(const Spec *sp, const char *op, int64_t M, int64_t K, Pir *ir)
{
	pir_init(ir, op, M, K);
	PirReason why;
	for (int a = 0; a < PIR_NAXES; a++) {
		const Tiling *t = &sp->t[a];
		if (t->depth == 1)
			continue;
		PirPrim p = {.kind = PIR_PRIM_SPLIT};
		snprintf(p.u.split.loop, PIR_NAME_MAX, "%s", a == PIR_AXIS_M ? "m" : "k");
		p.u.split.n = t->depth;
		for (int l = 0; l < t->depth; l++) {
			level_name(sp, a, l, p.u.split.names[l]);
			p.u.split.factor[l] = l ? t->f[l] : 0;
		}
		p.u.split.pad = true;
		p.u.split.pad_amount = -1;
		if (!pir_apply(ir, &p, &why))
			return false;
	}
	/* the order: outside the perforated loop rows then columns, then it,
	 * then the loops inside it */
	const int pa = sp->pa;
	PirPrim r = {.kind = PIR_PRIM_REORDER};
	int n = 0;
	for (int a = 0; a < PIR_NAXES; a++) {
		int upto = a == pa ? sp->pi : sp->cut;
		for (int l = 0; l < upto; l++)
			level_name(sp, a, l, r.u.reorder.loops[n++]);
	}
	char perf[PIR_NAME_MAX];
	level_name(sp, pa, sp->pi, perf);
	snprintf(r.u.reorder.loops[n++], PIR_NAME_MAX, "%s", perf);
	const int first = sp->inner_k_first ? PIR_AXIS_K : PIR_AXIS_M;
	for (int i = 0; i < 2; i++) {
		int a = i ? 1 - first : first;
		int from = a == pa ? sp->pi + 1 : sp->cut;
		for (int l = from; l < sp->t[a].depth; l++)
			level_name(sp, a, l, r.u.reorder.loops[n++]);
	}
	r.u.reorder.n = n;
	if (n > 1 && !pir_apply(ir, &r, &why))
		return false;
	PirPrim p = {.kind = PIR_PRIM_PERFORATE};
	snprintf(p.u.perforate.loop, PIR_NAME_MAX, "%s", perf);
	p.u.perforate.keep = sp->nnz;
	if (!pir_apply(ir, &p, &why))
		return false;
	if (sp->nm_n) {
		PirPrim q = {.kind = PIR_PRIM_PERFORATE};
		level_name(sp, PIR_AXIS_K, sp->t[PIR_AXIS_K].depth - 1, q.u.perforate.loop);
		q.u.perforate.keep = sp->nm_n;
		if (!pir_apply(ir, &q, &why))
			return false;
	}
	return pir_verify(ir, NULL, 0);
}

/* What decides the mask: the perforated loop's axis, length and keep
 * count, the block it keeps (the loops inside it, per axis), the padded
 * extents and the inner N:M. */
/* The block the perforated loop chooses among (the loops inside it), per
 * axis: the product of its axis's inner levels and of the other axis's
 * levels from the cut on (all of that axis when the cut is 0). */
static void spec_block(const Spec *sp, int64_t sub[PIR_NAXES])
{
	const int pa = sp->pa, pb = 1 - pa;
	sub[0] = sub[1] = 1;
	for (int l = sp->pi + 1; l < sp->t[pa].depth; l++)
		sub[pa] *= sp->t[pa].f[l];
	for (int l = sp->cut; l < sp->t[pb].depth; l++)
		sub[pb] *= sp->t[pb].f[l];
	if (sp->cut == 0)
		sub[pb] = sp->t[pb].ext;
}

static void spec_key(const Spec *sp, char key[128])
{
	int64_t sub[PIR_NAXES];
	spec_block(sp, sub);
	const int pa = sp->pa;
	snprintf(key, 128, "%c%lld^%lld/%lldx%lld/%lldx%lld%s%lld", pa == PIR_AXIS_M ? 'm' : 'k',
	         (long long)sp->t[pa].f[sp->pi], (long long)sp->nnz, (long long)sub[PIR_AXIS_M],
	         (long long)sub[PIR_AXIS_K], (long long)sp->t[PIR_AXIS_M].ext, (long long)sp->t[PIR_AXIS_K].ext,
	         sp->nm_n ? "/nm" : "",
	         (long long)(sp->nm_n ? sp->nm_n * 100 + sp->t[PIR_AXIS_K].f[sp->t[PIR_AXIS_K].depth - 1] : 0));
}

bool search_pool_add(Pool *p, const SearchCandidate *c, const Spec *sp)
{
	if (p->n == p->cap) {
		int cap = p->cap ? 2 * p->cap : 256;
		SearchCandidate *nc = realloc(p->c, (size_t)cap * sizeof *nc);
		if (!nc)
			return false;
		p->c = nc;
		Spec *ns = realloc(p->spec, (size_t)cap * sizeof *ns);
		if (!ns)
			return false;
		p->spec = ns;
		p->cap = cap;
	}
	p->c[p->n] = *c;
	p->spec[p->n++] = *sp;
	return true;
}

static bool key_seen(const Pool *p, const char *key)
{
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->c[i].key, key))
			return true;
	return false;
}

/* The keep counts of a loop of length len for density d within tol. */
static int64_t keep_for(int64_t len, double d, double tol)
{
	int64_t n = llround((double)len * d);
	if (n < 1 || n >= len || fabs((double)n / (double)len - d) > tol)
		return 0;
	return n;
}

int search_targets(const SearchSettings *s, double dens[SEARCH_MAX_TARGETS])
{
	const double hi = 1 - s->sparsity;
	if (!(s->max_sparsity > s->sparsity)) {
		dens[0] = hi;
		return 1;
	}
	/* a range: its ends and evenly between them, at least twice the
	 * tolerance apart; one within the tolerance of the whole range: its
	 * middle */
	const double lo = 1 - s->max_sparsity, width = hi - lo;
	if (width <= 2 * s->tolerance + 1e-12) {
		dens[0] = (hi + lo) / 2;
		return 1;
	}
	int n = (int)floor(width / (2 * s->tolerance) + 1e-9) + 1;
	if (n > SEARCH_MAX_TARGETS)
		n = SEARCH_MAX_TARGETS;
	for (int i = 0; i < n; i++)
		dens[i] = hi - width * i / (n - 1);
	return n;
}

bool search_density_ok(const SearchSettings *s, double density)
{
	const double hi = 1 - s->sparsity, lo = s->max_sparsity > s->sparsity ? 1 - s->max_sparsity : hi;
	return density >= lo - s->tolerance - 1e-9 && density <= hi + s->tolerance + 1e-9;
}

/* Every candidate pattern (one per key), its IR built, at every target
 * density. */
bool search_enumerate(const char *op, int64_t M, int64_t K, const SearchSettings *s, Pool *pool,
                      int64_t *considered)
{
	Tiling tm[64], tk[64];
	int nm = axis_tilings(M, s, tm, 64), nk = axis_tilings(K, s, tk, 64);
	static const int64_t nm_shapes[][2] = {{2, 4}, {1, 4}, {2, 8}, {1, 8}};
	double dens[SEARCH_MAX_TARGETS];
	const int ntargets = search_targets(s, dens);
	for (int im = 0; im < nm; im++)
		for (int ik = 0; ik < nk; ik++)
			for (int pa = 0; pa < PIR_NAXES; pa++) {
				Spec sp = {.t = {tm[im], tk[ik]}, .pa = pa};
				const int pb = 1 - pa;
				for (sp.pi = 0; sp.pi < sp.t[pa].depth; sp.pi++)
					for (sp.cut = 0; sp.cut <= sp.t[pb].depth; sp.cut++)
						for (int v = -1; v < (int)(sizeof nm_shapes / sizeof *nm_shapes); v++)
						for (int target = 0; target < ntargets; target++) {
							const double d = dens[target];
							const int64_t len = sp.t[pa].f[sp.pi];
							double want = d;
							sp.nm_n = 0;
							if (v >= 0) { /* N:M inside, on the innermost k level */
								const Tiling *t = &sp.t[PIR_AXIS_K];
								const int last = t->depth - 1;
								const bool inside = pa == PIR_AXIS_K ? sp.pi < last : sp.cut <= last;
								if (t->depth < 2 || t->f[last] != nm_shapes[v][1] || !inside)
									continue;
								sp.nm_n = nm_shapes[v][0];
								want = d * (double)nm_shapes[v][1] / (double)nm_shapes[v][0];
								if (want >= 1)
									continue;
							}
							sp.nnz = keep_for(len, want, s->tolerance);
							if (!sp.nnz)
								continue;
							(*considered)++;
							SearchCandidate c = {.status = SEARCH_RANKED, .measured_us = -1};
							spec_key(&sp, c.key);
							if (key_seen(pool, c.key))
								continue;
							sp.inner_k_first = 0;
							if (!search_spec_ir(&sp, op, M, K, &c.ir) || (s->gpu && pir_check_gpu(&c.ir, NULL, 0)))
								continue;
							PirMetrics pm;
							pir_metrics(&c.ir, &pm);
							if (fabs(pm.density - d) > s->tolerance)
								continue;
							pir_print_paper(&c.ir, c.notation, sizeof c.notation);
							if (!search_pool_add(pool, &c, &sp))
								return false;
						}
			}
	return true;
}

/* ---- region scores, computed once and shared ----
 *
 * Where everything inside a candidate's perforated loop is dense (no N:M
 * inside), it chooses among blocks of bm x bk weights by their importance
 * sums, and many candidates choose among blocks of one shape (32 x 32
 * blocks in regions of any size and order).  The sums of each shape are
 * computed once; a candidate's mask is then built on them, the same
 * candidate on a bm * bk times smaller weight (spec_reduced), and its kept
 * importance and count read off the block sums and counts. */

static const Regions *regions_get(RegionCache *rc, const float *imp, int64_t M, int64_t K, int64_t bm, int64_t bk)
{
	for (int i = 0; i < rc->n; i++)
		if (rc->r[i].bm == bm && rc->r[i].bk == bk) {
			rc->hits++;
			return &rc->r[i];
		}
	if (rc->n == rc->cap) {
		int cap = rc->cap ? 2 * rc->cap : 16;
		Regions *nr = realloc(rc->r, (size_t)cap * sizeof *nr);
		if (!nr)
			return NULL;
		rc->r = nr, rc->cap = cap;
	}
	Regions g = {bm, bk, (M + bm - 1) / bm, (K + bk - 1) / bk, NULL, NULL, NULL};
	const size_t n = (size_t)(g.rm * g.rk);
	g.sum = malloc(n * sizeof *g.sum);
	g.dsum = calloc(n, sizeof *g.dsum);
	g.count = calloc(n, sizeof *g.count);
	if (!g.sum || !g.dsum || !g.count) {
		free(g.sum), free(g.dsum), free(g.count);
		return NULL;
	}
	for (int64_t i = 0; i < M; i++)
		for (int64_t k = 0; k < K; k++) {
			const int64_t b = (i / bm) * g.rk + k / bk;
			g.dsum[b] += imp[i * K + k];
			g.count[b]++;
		}
	/* to rank by: the sums' ranks (equal sums equal), where float holds
	 * them: the sums rounded to float would tie blocks that the mask of
	 * the full weight, ranking in double, tells apart */
	UtilKeyed *order = n <= ((size_t)1 << 24) ? malloc(n * sizeof *order) : NULL;
	if (order) {
		for (size_t b = 0; b < n; b++)
			order[b] = (UtilKeyed){g.dsum[b], (int64_t)b};
		qsort(order, n, sizeof *order, util_keyed_cmp);
		float rank = 0;
		for (size_t j = 0; j < n; j++) {
			if (j > 0 && order[j].v != order[j - 1].v)
				rank++;
			g.sum[order[j].i] = rank;
		}
		free(order);
	} else
		for (size_t b = 0; b < n; b++)
			g.sum[b] = (float)g.dsum[b];
	rc->hits++;
	rc->r[rc->n] = g;
	return &rc->r[rc->n++];
}

void search_regions_free(RegionCache *rc)
{
	for (int i = 0; i < rc->n; i++)
		free(rc->r[i].sum), free(rc->r[i].dsum), free(rc->r[i].count);
	free(rc->r);
	memset(rc, 0, sizeof *rc);
}

/* The candidate on its blocks' sums: the block its perforated loop chooses
 * among (sub, m and k) and the nest without the loops inside it, on a
 * ceil(M / sub_m) x ceil(K / sub_k) weight.  false where its mask does not
 * follow from block sums (an N:M inside) or the blocks are single weights. */
static bool spec_reduced(const Spec *sp, int64_t M, int64_t K, int64_t sub[PIR_NAXES], Pir *ir)
{
	if (sp->nm_n)
		return false;
	const int pa = sp->pa, pb = 1 - pa;
	spec_block(sp, sub);
	if (sub[0] * sub[1] == 1)
		return false;
	Spec r = *sp;
	r.t[pa].depth = sp->pi + 1;
	r.t[pa].ext = sp->t[pa].ext / sub[pa];
	if (sp->cut == 0)
		r.t[pb] = (Tiling){1, {1, 0, 0}, 1};
	else {
		r.t[pb].depth = sp->cut;
		r.t[pb].ext = sp->t[pb].ext / sub[pb];
	}
	if (r.t[pa].depth == 1)
		r.t[pa].f[0] = (sp->t[pa].ext / sub[pa]);
	if (r.t[pb].depth == 1 && sp->cut)
		r.t[pb].f[0] = sp->t[pb].ext / sub[pb];
	const int64_t len[PIR_NAXES] = {(M + sub[0] - 1) / sub[0], (K + sub[1] - 1) / sub[1]};
	for (int a = 0; a < PIR_NAXES; a++)
		if (r.t[a].depth == 1 && r.t[a].f[0] != len[a])
			return false; /* one level that would need padding: score it in full */
	return search_spec_ir(&r, "w", len[0], len[1], ir);
}

/* c's metrics from the cached block sums; false where it cannot be scored
 * that way (then the full mask is built). */
bool search_score_reduced(RegionCache *rc, const Spec *sp, SearchCandidate *c, const float *imp, int64_t M,
                          int64_t K, PatRank rank, PruneWorkspace *ws, const PruneBound *bound)
{
	Pir rir;
	int64_t sub[PIR_NAXES];
	if (!spec_reduced(sp, M, K, sub, &rir))
		return false;
	const Regions *g = regions_get(rc, imp, M, K, sub[0], sub[1]);
	if (!g)
		return false;
	PruneMask pm;
	prune_mask_build_ws(&rir, g->sum, g->rm, g->rk, rank, ws, &pm);
	uint8_t *mask = malloc((size_t)(g->rm * g->rk));
	if (!mask) {
		prune_mask_free(&pm);
		return false;
	}
	prune_dense_mask(&rir, &pm, g->rm, g->rk, mask);
	prune_mask_free(&pm);
	double kept = 0;
	int64_t nkept = 0;
	for (int64_t b = 0; b < g->rm * g->rk; b++)
		if (mask[b])
			kept += g->dsum[b], nkept += g->count[b];
	free(mask);
	prune_metrics_from(&c->ir, kept, nkept, bound, M * K, &c->metrics);
	return true;
}
