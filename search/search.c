/* search.c - the pattern and schedule search; see search.h. */
#define _POSIX_C_SOURCE 200809L
#include "search.h"
#include "../backend_ptx/gpu.h"
#include "../backend_x86/x86.h"
#include "../support/util.h"
#include "../weights/tensor.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const SearchSettings search_defaults = {
	.sparsity = 0.75, .tolerance = 0.02, .budget = 0.05, .max_depth = 3, .min_length = 4, .max_pattern = 64,
	.topk = 8, .tune = 3, .stop_ratio = 2, .tie = 0.02, .threads = 0, .timeout_s = 60, .seed = 0, .measure = true,
};

const char *const search_status_names[] = {"rejected", "ranked", "measured", "failed"};

/* ---- the pattern space ---- */

enum { MAX_DEPTH = 3 };

/* One axis tiled into depth levels, f[0] outermost (inferred), f[1..]
 * the inner factors. */
typedef struct Tiling {
	int depth;
	int64_t f[MAX_DEPTH];
	int64_t ext; /* padded extent */
} Tiling;

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

/* A candidate pattern: the tilings, the perforated level (axis pa, level
 * pi, keep nnz) with the other axis's levels from cut on inside it, and
 * optionally the innermost k level keeping nm_n of each group. */
typedef struct Spec {
	Tiling t[PIR_NAXES];
	int pa, pi, cut;
	int64_t nnz;
	int64_t nm_n; /* 0: no second perforation */
	int inner_k_first; /* the loops inside the perforated one: k levels first */
} Spec;

static void level_name(const Spec *sp, int axis, int level, char name[PIR_NAME_MAX])
{
	const char *a = axis == PIR_AXIS_M ? "m" : "k";
	if (sp->t[axis].depth == 1)
		snprintf(name, PIR_NAME_MAX, "%s", a);
	else
		snprintf(name, PIR_NAME_MAX, "%s%d", a, level);
}

/* Builds the candidate's IR; false where a primitive refuses it. */
static bool spec_ir(const Spec *sp, const char *op, int64_t M, int64_t K, Pir *ir)
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

/* A growing array of candidates with their specs. */
typedef struct Pool {
	SearchCandidate *c;
	Spec *spec;
	int n, cap;
} Pool;

static bool pool_add(Pool *p, const SearchCandidate *c, const Spec *sp)
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
static bool enumerate(const char *op, int64_t M, int64_t K, const SearchSettings *s, Pool *pool,
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
							if (!spec_ir(&sp, op, M, K, &c.ir) || (s->gpu && pir_check_gpu(&c.ir, NULL, 0)))
								continue;
							PirMetrics pm;
							pir_metrics(&c.ir, &pm);
							if (fabs(pm.density - d) > s->tolerance)
								continue;
							pir_print_paper(&c.ir, c.notation, sizeof c.notation);
							if (!pool_add(pool, &c, &sp))
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

typedef struct Regions {
	int64_t bm, bk, rm, rk; /* the block; the blocks per axis */
	float *sum;             /* rm x rk: a block's importance, to rank it (its rank among the blocks) */
	double *dsum;           /* its importance, for the kept importance */
	int64_t *count;         /* real weights per block */
} Regions;

typedef struct RegionCache {
	Regions *r;
	int n, cap;
	int64_t hits; /* candidates scored on cached sums */
} RegionCache;

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

static void regions_free(RegionCache *rc)
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
	return spec_ir(&r, "w", len[0], len[1], ir);
}

/* c's metrics from the cached block sums; false where it cannot be scored
 * that way (then the full mask is built). */
static bool score_reduced(RegionCache *rc, const Spec *sp, SearchCandidate *c, const float *imp, int64_t M,
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

/* ---- measurement in a child process ---- */

typedef struct Measured {
	double us, rel_err;
	int ok; /* 1: checked and timed */
	bool early; /* stopped after a few runs: us is their fastest */
	char why[120];
} Measured;

typedef struct KernelRun {
	const X86Kernel *k;
	const float *x, *values;
	float *c;
	const int32_t *const *index;
	int threads;
	double slow_s; /* the tests: a hopeless kernel (PATC_SEARCH_INJECT=slow) */
} KernelRun;

static void kernel_call(void *arg)
{
	const KernelRun *r = arg;
	x86_run(r->k, r->x, r->c, r->values, r->index, r->threads);
	if (r->slow_s > 0)
		util_sleep(r->slow_s);
}

typedef struct DenseRun {
	const float *w, *x;
	float *c;
	int64_t M, K, N;
	bool kn;
} DenseRun;

static void dense_call(void *arg)
{
	const DenseRun *d = arg;
	if (d->kn) /* C (M x N) = W X */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d->M, (int)d->N, (int)d->K, 1, d->w, (int)d->K,
		            d->x, (int)d->N, 0, d->c, (int)d->N);
	else /* C (N x M) = X W^T */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)d->N, (int)d->M, (int)d->K, 1, d->x, (int)d->K,
		            d->w, (int)d->K, 0, d->c, (int)d->M);
}

typedef struct Problem {
	const OpResult *op;
	const float *w, *imp, *x;
	int64_t M, K, N;
	int threads;
	int which; /* the candidate's place in the measuring order */
	double stop_us;       /* stop early where a few runs take longer (0: never) */
	const char *cpu;      /* x86: the kernels' CPU (NULL: the host's) */
	const char *sm;       /* a GPU target: measure there */
	bool emulate;         /* on the host emulator instead (its times are not a GPU's) */
	KernelSchedule sched; /* the kernel's */
} Problem;

/* For the tests: $PATC_SEARCH_INJECT = crash, hang or wrong makes the
 * first candidate's measuring process crash, hang or return a wrong C;
 * slow makes the second one's kernel take 20 ms longer a call. */
static void inject(int which, float *c, int64_t n)
{
	const char *e = getenv("PATC_SEARCH_INJECT");
	if (!e || which != 0)
		return;
	if (!strcmp(e, "crash"))
		raise(SIGSEGV);
	if (!strcmp(e, "hang"))
		for (;;)
			pause();
	if (!strcmp(e, "wrong"))
		for (int64_t i = 0; i < n; i++)
			c[i] += 1;
}

/* The candidate's mask, packed values and masked dense weight (for the
 * reference); false with m->why.  A measuring child exits after one
 * candidate: what it allocates is freed by its exit. */
static bool pack_candidate(const Problem *p, const Pir *ir, PruneMask *pm, float **dense, float **values,
                           Measured *m)
{
	prune_mask_build(ir, p->imp, p->M, p->K, p->op->rank, pm);
	*dense = malloc((size_t)(p->M * p->K) * sizeof **dense);
	*values = *dense ? prune_pack_new(ir, pm, p->w, p->M, p->K, NULL, *dense) : NULL;
	if (!*values) {
		snprintf(m->why, sizeof m->why, "out of memory");
		return false;
	}
	return true;
}

/* bytes of src in memory from util_alloc_measured; NULL when out of memory. */
static void *measured_copy(const void *src, size_t bytes)
{
	void *q = util_alloc_measured(bytes ? bytes : 1);
	return q ? memcpy(q, src, bytes) : NULL;
}

/* The packed values and index arrays the x86 kernel reads, moved into
 * memory from util_alloc_measured (the child's copies: freed by its exit). */
static bool measured_operands(const Pir *ir, PruneMask *pm, float **values)
{
	PirMetrics mt;
	pir_metrics(ir, &mt);
	if (!(*values = measured_copy(*values, (size_t)mt.values * sizeof **values)))
		return false;
	for (int i = 0; i < ir->nloops; i++) {
		const size_t bytes = (size_t)mt.loop[i].index_len * sizeof(int32_t);
		if (pm->index[i] && !(pm->index[i] = measured_copy(pm->index[i], bytes)))
			return false;
	}
	return true;
}

/* child_measure on the GPU: the candidate compiled to PTX, run on poisoned
 * C, checked against float64 and timed with events (gpu_measure); or (ir
 * NULL) the dense weight through cuBLAS in the op's type (a dense nest run
 * beside it). */
static Measured child_measure_gpu(const Problem *p, const Pir *ir)
{
	Measured m = {0};
	const int64_t M = p->M, K = p->K, N = p->N;
	Pir dense_ir;
	const bool baseline = !ir;
	if (baseline) {
		pir_init(&dense_ir, p->op->name, M, K);
		ir = &dense_ir;
	}
	PruneMask pm;
	float *dense, *values;
	if (!pack_candidate(p, ir, &pm, &dense, &values, &m))
		return m;
	char err[CUDA_ERR_MAX];
	Cuda *cu = p->emulate ? NULL : cuda_open(err);
	if (!cu && !p->emulate) {
		snprintf(m.why, sizeof m.why, "no GPU: %.100s", err);
		return m;
	}
	const KernelSchedule *ks = &p->sched; /* bx 0: patc's mapping (stage -1: without staging) */
	PtxSchedule sched = ptx_schedule_of(ks);
	GpuProblem gp = {ir, M, K, N, p->op->layout, values, &pm, dense, p->x, p->op->dtype, p->sm, sched,
	                 20, baseline, 64, baseline ? 0 : p->stop_us};
	const char *slow = getenv("PATC_SEARCH_INJECT");
	if (slow && !strcmp(slow, "slow") && p->which == 1 && gp.stop_us > 0)
		gp.stop_us = 1e-9; /* as if a second slower: hopeless */
	GpuResult r;
	/* emulated, the baseline is the dense kernel on the emulator too */
	const bool blas = baseline && !p->emulate;
	if (!(p->emulate ? gpu_emulate(&gp, &r, err) : gpu_measure(cu, &gp, &r, err)))
		snprintf(m.why, sizeof m.why, "on the %s: %.90s", p->emulate ? "host emulator" : "GPU", err);
	else if (r.unwritten || !(r.rel_err < SEARCH_MAX_REL_ERR)) {
		/* the input's where the product itself is past float32's range (as child_measure says) */
		PruneCheck chk;
		prune_check(dense, p->x, NULL, M, K, N, p->op->layout == PAT_LAYOUT_KN, p->op->dtype, 64, &chk);
		if (chk.overflow)
			snprintf(m.why, sizeof m.why, "the product of the weights and the activations overflows float32 "
			         "(C[%lld, %lld]: %.3g in float64)", (long long)chk.m, (long long)chk.n, chk.ref);
		else
			snprintf(m.why, sizeof m.why, "wrong result: relative error %.3g against float64, %lld elements not "
			         "written", r.rel_err, (long long)r.unwritten);
	} else if (blas && r.cublas_us <= 0)
		snprintf(m.why, sizeof m.why, "cuBLAS: %.100s", r.note);
	else if (ks->bx && !r.plan.tc && (r.plan.s.bx != ks->bx || r.plan.s.by != ks->by || r.plan.s.v != ks->v))
		snprintf(m.why, sizeof m.why, "the kernel ran %d x %d threads, %d columns each, not the schedule's",
		         r.plan.s.bx, r.plan.s.by, r.plan.s.v);
	else {
		m.us = blas ? r.cublas_us : r.kernel_us;
		m.rel_err = r.rel_err;
		m.ok = 1;
		m.early = r.early;
		if (r.early)
			snprintf(m.why, sizeof m.why, "stopped early: %.1f us in %s, over %.1f us", r.kernel_us,
			         p->emulate ? "one emulated run" : "3 runs", gp.stop_us);
	}
	if (cu)
		cuda_close(cu);
	return m;
}

/* The child's work: the candidate's kernel (ir) checked and timed, or (ir
 * NULL) the dense sgemm timed; on a GPU target, child_measure_gpu. */
static Measured child_measure(const Problem *p, const Pir *ir)
{
	if (p->sm)
		return child_measure_gpu(p, ir);
	Measured m = {0};
	const int64_t M = p->M, K = p->K, N = p->N;
	float *c = util_alloc_measured((size_t)(M * N) * sizeof *c);
	if (!c) {
		snprintf(m.why, sizeof m.why, "out of memory");
		return m;
	}
	if (!ir) {
		openblas_set_num_threads(p->threads);
		const float *w = measured_copy(p->w, (size_t)(M * K) * sizeof *p->w);
		if (!w) {
			snprintf(m.why, sizeof m.why, "out of memory");
			return m;
		}
		DenseRun d = {w, p->x, c, M, K, N, p->op->layout == PAT_LAYOUT_KN};
		m.us = util_time_min_us(dense_call, &d, 3);
		m.ok = 1;
		return m;
	}
	PruneMask pm;
	float *dense, *values;
	if (!pack_candidate(p, ir, &pm, &dense, &values, &m))
		return m;
	if (!measured_operands(ir, &pm, &values)) {
		snprintf(m.why, sizeof m.why, "out of memory");
		return m;
	}
	const bool kn = p->op->layout == PAT_LAYOUT_KN;
	LowerKernel lk = {ir, M, K, N, p->op->layout, "search_kernel", 0, PAT_F32, p->sched};
	X86Kernel kern;
	char xerr[X86_ERR_MAX];
	if (!x86_jit(&lk, p->cpu, p->cpu ? "" : NULL, &kern, xerr)) {
		snprintf(m.why, sizeof m.why, "compile: %.100s", xerr);
		return m;
	}
	const int32_t *const *index = (const int32_t *const *)pm.index;
	for (int64_t i = 0; i < M * N; i++) /* poisoned: an element the kernel leaves shows */
		c[i] = NAN;
	x86_run(&kern, p->x, c, values, index, p->threads);
	inject(p->which, c, M * N);
	/* check against float64 on up to 64 columns */
	PruneCheck chk;
	prune_check(dense, p->x, c, M, K, N, kn, PAT_F32, 64, &chk);
	m.rel_err = chk.rel;
	if (m.rel_err == -1) {
		snprintf(m.why, sizeof m.why, "out of memory for the float64 reference");
		return m;
	}
	if (chk.overflow) { /* the input's, not the kernel's: every candidate fails so */
		snprintf(m.why, sizeof m.why, "the product of the weights and the activations overflows float32 (C[%lld, "
		         "%lld]: %.3g in float64)", (long long)chk.m, (long long)chk.n, chk.ref_past ? chk.ref : chk.mag);
		return m;
	}
	if (!(m.rel_err < SEARCH_MAX_REL_ERR)) {
		snprintf(m.why, sizeof m.why, "wrong result: relative error %.3g against float64", m.rel_err);
		return m;
	}
	const char *slow = getenv("PATC_SEARCH_INJECT");
	KernelRun r = {&kern, p->x, values, c, index, p->sched.threads > 0 ? p->sched.threads : p->threads,
	               slow && !strcmp(slow, "slow") && p->which == 1 ? 0.02 : 0};
	if (p->stop_us > 0) { /* hopeless already? */
		double fastest = 0;
		for (int i = 0; i < 3; i++) {
			double t0 = util_now();
			kernel_call(&r);
			double us = 1e6 * (util_now() - t0);
			fastest = i == 0 || us < fastest ? us : fastest;
		}
		if (fastest > p->stop_us) {
			m.us = fastest;
			m.ok = 1;
			m.early = true;
			snprintf(m.why, sizeof m.why, "stopped early: %.1f us in 3 runs, over %.1f us", fastest, p->stop_us);
			return m;
		}
	}
	m.us = util_time_min_us(kernel_call, &r, 3);
	m.ok = 1;
	return m;
}

/* What a measurement that ran out of time says, then its limit ("%g s"):
 * --resume reads the limit back from the log (taken_over). */
#define TIMED_OUT "timed out after "

/* Runs child_measure in a child process with a timeout. */
static Measured measure(const Problem *p, const Pir *ir, double timeout_s)
{
	Measured m = {0};
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(m.why, sizeof m.why, "pipe: %s", strerror(errno));
		return m;
	}
	fflush(NULL);
	const pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]), close(fd[1]);
		snprintf(m.why, sizeof m.why, "fork: %s", strerror(errno));
		return m;
	}
	if (pid == 0) {
		util_die_with_parent(parent);
		close(fd[0]);
		Measured r = child_measure(p, ir);
		ssize_t wr = write(fd[1], &r, sizeof r);
		_exit(wr == (ssize_t)sizeof r ? 0 : 1);
	}
	close(fd[1]);
	struct pollfd pfd = {fd[0], POLLIN, 0};
	int ready = poll(&pfd, 1, (int)(timeout_s * 1000));
	bool got = false;
	if (ready > 0)
		got = read(fd[0], &m, sizeof m) == (ssize_t)sizeof m;
	close(fd[0]);
	if (!got)
		kill(pid, SIGKILL);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got)
		return m;
	m = (Measured){0};
	if (ready == 0) { /* the limit in the fewest digits that read back as it (taken_over compares it) */
		char v[32];
		for (int digits = 6; digits <= 17; digits++) {
			snprintf(v, sizeof v, "%.*g", digits, timeout_s);
			if (strtod(v, NULL) == timeout_s)
				break;
		}
		snprintf(m.why, sizeof m.why, TIMED_OUT "%s s", v);
	}
	else if (WIFSIGNALED(st))
		snprintf(m.why, sizeof m.why, "crashed (signal %d)", WTERMSIG(st));
	else
		snprintf(m.why, sizeof m.why, "the measuring process exited with status %d", WEXITSTATUS(st));
	return m;
}

/* ---- the tuning log ---- */

/* --resume: c's measurement as logged, if it is (the newest by its time,
 * the later line where the times tie, as patc merge keeps).  A timeout
 * under a shorter --timeout than this search's is not: the kernel is given
 * the time again. */
static bool taken_over(const SearchSettings *s, const SearchCandidate *c, Measured *m)
{
	if (!s->nlogged)
		return false;
	char *text = pir_print_text(&c->ir);
	const SearchLogged *e = NULL;
	for (int i = 0; text && i < s->nlogged; i++) {
		const SearchLogged *l = &s->logged[i];
		if (!strcmp(l->pir, text) && kernel_schedule_equal(&l->sched, &c->sched) &&
		    (!e || strcmp(l->time, e->time) >= 0))
			e = l;
	}
	free(text);
	double limit;
	if (!e || (!strncmp(e->why, TIMED_OUT, strlen(TIMED_OUT)) &&
	           sscanf(e->why + strlen(TIMED_OUT), "%lf", &limit) == 1 && limit < s->timeout_s))
		return false;
	*m = (Measured){.us = e->latency_us, .rel_err = e->rel_err, .ok = e->latency_us >= 0, .early = e->early};
	snprintf(m->why, sizeof m->why, "%.119s", e->why);
	return true;
}

/* Appends c's measurement to the log at once, so that a search killed
 * later keeps it; false where it could not (said on progress). */
static bool log_measurement(const SearchSettings *s, const SearchCandidate *c, Measured m, double dense_us,
                            FILE *progress)
{
	if (!s->log_path || !s->log_info)
		return false;
	SearchCandidate logged = *c;
	logged.status = m.ok ? SEARCH_MEASURED : SEARCH_FAILED;
	logged.measured_us = m.us;
	logged.rel_err = m.rel_err;
	logged.early = m.early;
	snprintf(logged.why, sizeof logged.why, "%s", m.why);
	char *line = search_log_line(s->log_info, &logged, dense_us);
	FILE *f = line ? fopen(s->log_path, "a") : NULL;
	bool ok = f && fprintf(f, "%s\n", line) > 0;
	if (f)
		ok = fclose(f) == 0 && ok;
	if (!ok && progress)
		fprintf(progress, "search: warning: cannot append to '%s': %s\n", s->log_path, strerror(errno));
	free(line);
	return ok;
}

/* A measurement's outcome into its candidate. */
static void record(SearchCandidate *c, const Measured *m)
{
	if (m->ok) {
		c->status = SEARCH_MEASURED;
		c->measured_us = m->us;
		c->rel_err = m->rel_err;
		c->early = m->early;
		if (m->early)
			snprintf(c->why, sizeof c->why, "%s", m->why);
	} else {
		c->status = SEARCH_FAILED;
		snprintf(c->why, sizeof c->why, "%s", m->why);
	}
}

/* ---- the search ---- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL, x ^= x >> 33;
	return x;
}

typedef struct Order {
	double key;
	uint64_t tie;
	int i;
} Order;

static int cmp_order(const void *a, const void *b)
{
	const Order *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->tie > y->tie) - (x->tie < y->tie);
}

static void mark_pareto(SearchResult *r)
{
	for (int i = 0; i < r->n; i++) {
		SearchCandidate *a = &r->c[i];
		if (a->status != SEARCH_MEASURED)
			continue;
		a->pareto = true;
		for (int j = 0; j < r->n && a->pareto; j++) {
			const SearchCandidate *b = &r->c[j];
			if (j == i || b->status != SEARCH_MEASURED)
				continue;
			bool no_worse = b->metrics.loss <= a->metrics.loss && b->measured_us <= a->measured_us;
			bool better = b->metrics.loss < a->metrics.loss || b->measured_us < a->measured_us;
			if (no_worse && better)
				a->pareto = false;
		}
	}
}

/* ---- progress: a one-line bar on a terminal, lines otherwise ---- */

typedef struct Progress {
	FILE *f;
	bool tty;
	int done, total;
	double fastest_us;
} Progress;

/* A line that stays (a round's summary, a failure), clearing the bar. */
static void progress_line(Progress *pr, const char *fmt, ...)
{
	if (!pr->f)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (pr->tty)
		fputs("\r\033[K", pr->f);
	vfprintf(pr->f, fmt, ap);
	fputc('\n', pr->f);
	va_end(ap);
}

/* On a terminal, the bar: done of total, the fastest so far and the current
 * candidate. */
static void progress_bar(const Progress *pr, const char *what)
{
	if (!pr->f || !pr->tty || pr->total <= 0)
		return;
	enum { WIDTH = 24 };
	int fill = (int)((double)WIDTH * pr->done / pr->total);
	char bar[WIDTH + 1];
	for (int i = 0; i < WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[WIDTH] = 0;
	fprintf(pr->f, "\r\033[Ksearch [%s] %d/%d", bar, pr->done, pr->total);
	if (pr->fastest_us > 0)
		fprintf(pr->f, "  fastest %.1f us", pr->fastest_us);
	fprintf(pr->f, "  %.40s", what);
	fflush(pr->f);
}

/* ---- measuring candidates ---- */

typedef struct Bench {
	Problem p;
	const SearchSettings *s;
	SearchResult *r;
	Progress pr;
} Bench;

/* Whether c counts for the best: measured in full within the budget, at
 * the target's density (a reference pattern's may be another: it is still
 * measured, to be drawn). */
static bool eligible(const SearchCandidate *c, const SearchSettings *s)
{
	return c->status == SEARCH_MEASURED && !c->early && !c->off_target && c->metrics.loss_over_bound <= s->budget;
}

/* Candidate i as the fastest so far, the standard library's patterns
 * included (the search measured them; a user wants the best pattern,
 * wherever it came from). */
static void consider_fastest(Bench *b, int i)
{
	SearchResult *r = b->r;
	const SearchCandidate *c = &r->c[i];
	if (!eligible(c, b->s))
		return;
	if (r->fastest < 0 || c->measured_us < r->c[r->fastest].measured_us) {
		r->fastest = i;
		b->pr.fastest_us = c->measured_us;
	}
}

/* The best, once everything is measured: kernels within s->tie of the
 * fastest are as fast as one another within this machine's timing noise
 * (the same kernel measures 2-10% apart in two processes), and patterns
 * of one kind often compile to the same kernel at several grains (keep 64
 * of 256 groups of 4 rows, 32 of 128 groups of 8) at losses far apart; of
 * those the most accurate is the better pattern.  None slower than the
 * fastest reference pattern within the budget is taken, so the search's
 * best is never slower than a fixed pattern it measured. */
static void choose_best(SearchResult *r, const SearchSettings *s)
{
	r->best = r->fastest, r->tied = 0, r->best_ref = -1;
	for (int i = 0; i < r->n; i++) /* a reference tuned to another schedule is a reference */
		if (r->c[i].ref[0] && eligible(&r->c[i], s) &&
		    (r->best_ref < 0 || r->c[i].measured_us < r->c[r->best_ref].measured_us))
			r->best_ref = i;
	if (r->fastest < 0)
		return;
	double limit = r->c[r->fastest].measured_us * (1 + s->tie), least = INFINITY;
	if (r->best_ref >= 0 && r->c[r->best_ref].measured_us < limit)
		limit = r->c[r->best_ref].measured_us;
	for (int i = 0; i < r->n; i++)
		if (eligible(&r->c[i], s) && r->c[i].measured_us <= limit) {
			r->tied++;
			least = fmin(least, r->c[i].metrics.loss);
		}
	/* of the least loss (within rounding: one kernel scored on block sums
	 * and in full), the fastest; the fastest overall where it is one */
	const double near = least + 1e-9;
	if (r->c[r->fastest].metrics.loss <= near)
		return;
	r->best = -1;
	for (int i = 0; i < r->n; i++) {
		const SearchCandidate *c = &r->c[i];
		if (eligible(c, s) && c->measured_us <= limit && c->metrics.loss <= near &&
		    (r->best < 0 || c->measured_us < r->c[r->best].measured_us))
			r->best = i;
	}
}

/* Measures candidate i (or takes its measurement over from the log),
 * records and logs it; the best is updated for searched candidates. */
static void bench_one(Bench *b, int i, const char *kind)
{
	SearchResult *r = b->r;
	SearchCandidate *c = &r->c[i];
	progress_bar(&b->pr, c->notation);
	/* hopeless: a few runs already this much slower than the fastest */
	/* (not the references: the comparison with them wants their full measurement) */
	b->p.stop_us =
	        b->s->stop_ratio > 0 && r->fastest >= 0 && !c->ref[0] ? b->s->stop_ratio * r->c[r->fastest].measured_us : 0;
	b->p.sched = c->sched;
	Measured m;
	if (taken_over(b->s, c, &m))
		r->resumed++;
	else {
		m = measure(&b->p, &c->ir, b->s->timeout_s);
		if (log_measurement(b->s, c, m, r->dense_us, b->pr.f))
			r->logged++;
		else if (b->s->log_path)
			r->unlogged++;
	}
	record(c, &m);
	b->pr.done++;
	r->stopped += m.ok && m.early;
	consider_fastest(b, i);
	char sched[128];
	kernel_schedule_text(&c->sched, sched, sizeof sched);
	if (!m.ok)
		progress_line(&b->pr, "search: %s%s (%s) FAILED: %s", kind, c->notation, sched, m.why);
	else if (!b->pr.tty)
		progress_line(&b->pr, "search: %s%-40s %-22s predicted %9.1f us, measured %9.1f us%s", kind, c->notation,
		              sched, c->predicted_us, m.us, m.early ? " (stopped early)" : "");
}

/* Candidate `from` again under schedule sc: appended, measured (or taken
 * from the log); *cur becomes it where it is faster than *cur.  A kernel
 * measured already (a standard-library pattern the search also found,
 * tuned from both) is not measured again.  Returns 1 (measured or taken
 * from the log), 0 (measured already) or -1 (out of memory). */
static int bench_variant(Bench *b, int from, const KernelSchedule *sc, int *cur)
{
	SearchResult *r = b->r;
	for (int i = 0; i < r->n; i++) {
		const SearchCandidate *t = &r->c[i];
		if ((t->status == SEARCH_MEASURED || t->status == SEARCH_FAILED) && kernel_schedule_equal(&t->sched, sc) &&
		    pir_equal(&t->ir, &r->c[from].ir)) {
			if (t->status == SEARCH_MEASURED && !t->early && t->measured_us < r->c[*cur].measured_us)
				*cur = i;
			return 0;
		}
	}
	if (r->n % 64 == 0) {
		SearchCandidate *nc = realloc(r->c, (size_t)(r->n + 64) * sizeof *nc);
		if (!nc)
			return -1;
		r->c = nc;
	}
	SearchCandidate v = r->c[from];
	v.sched = *sc;
	v.status = SEARCH_RANKED, v.measured_us = -1, v.early = false, v.pareto = false, v.why[0] = 0;
	r->c[r->n++] = v;
	b->p.which = -1;
	bench_one(b, r->n - 1, "schedule ");
	const SearchCandidate *t = &r->c[r->n - 1];
	if (t->status == SEARCH_MEASURED && !t->early && t->measured_us < r->c[*cur].measured_us)
		*cur = r->n - 1;
	return 1;
}

/* The x86 backend's knobs, one at a time from each base: the vector width
 * (8 floats instead of the host's 16), accumulators along N, column
 * chunks, X in panels, one thread.  Returns the number measured, -1 when
 * out of memory. */
static int tune_x86(Bench *b, const int *base, int nbase)
{
	SearchResult *r = b->r;
	char terr[X86_ERR_MAX];
	LLVMTargetMachineRef tm = x86_target_machine(b->p.cpu, b->p.cpu ? "" : NULL, false, terr);
	const int host = tm ? x86_vector_width(tm) : 8;
	if (tm)
		LLVMDisposeTargetMachine(tm);
	int measured = 0;
	/* the bar's total: at most this many alternatives per candidate (the
	 * chunks offered depend on the shape) */
	b->pr.done = 0, b->pr.total = nbase * ((host > 8) + 2 + 3 + 1 + (b->p.threads > 1));
	progress_line(&b->pr, "search: tuning the kernel schedules of the %d fastest", nbase);
	for (int n = 0; n < nbase; n++) {
		int cur = base[n];
		for (int knob = 0; knob < 5; knob++) {
			int64_t alts[3];
			int na = 0;
			LowerKernel lk = {&r->c[cur].ir, b->p.M, b->p.K, b->p.N, b->p.op->layout, "k", host, PAT_F32,
			                  r->c[cur].sched};
			lk.vector_width = lk.sched.vector_width ? lk.sched.vector_width : host;
			if (knob == 0 && host > 8)
				alts[na++] = 8;
			if (knob == 1)
				alts[na++] = 2, alts[na++] = 1;
			if (knob == 2) {
				const int64_t own = x86_chunk_columns(&lk);
				if (own < b->p.N)
					alts[na++] = -1;
				for (int64_t w = 128; w <= 512; w *= 4)
					if (w < b->p.N && w != own)
						alts[na++] = w;
			}
			if (knob == 3) { /* X in panels: the other way from the backend's rule */
				X86Traits tr;
				x86_kernel_traits(&lk, &tr);
				if (lk.vector_width >= 8)
					alts[na++] = tr.panel ? -1 : 1;
			}
			if (knob == 4 && b->p.threads > 1) /* fewer threads: small kernels pay for starting them */
				alts[na++] = 1;
			const int from = cur;
			for (int a = 0; a < na; a++) {
				KernelSchedule v = r->c[from].sched;
				if (knob == 0)
					v.vector_width = (int)alts[a];
				else if (knob == 1)
					v.col_tiles = (int)alts[a];
				else if (knob == 2)
					v.chunk = alts[a];
				else if (knob == 3)
					v.stage = (int)alts[a];
				else
					v.threads = (int)alts[a];
				const int got = bench_variant(b, from, &v, &cur);
				if (got < 0)
					return -1;
				measured += got;
			}
		}
	}
	return measured;
}

/* Whether two plans of one kernel map it alike. */
static bool same_kernel(const PtxPlan *x, const PtxPlan *y)
{
	return !memcmp(&x->s, &y->s, sizeof x->s) && x->stage == y->stage && x->nsplit == y->nsplit &&
	       x->tc_rows == y->tc_rows && x->tc_cols == y->tc_cols && x->tc_stages == y->tc_stages &&
	       x->tc_ku == y->tc_ku && x->smem_dyn == y->smem_dyn;
}

/* The GPU mapping's knobs (PtxSchedule), one at a time from each base:
 * half or twice the threads along the columns, 1, 2, 4 or 8 columns and 1
 * to 8 rows a thread, the walk along k split in two (or not), X staged in
 * shared memory (or not), a split walk's parts summed through a
 * workspace instead of atomics (or not), on sm_90 the tensor-core
 * kernels on wgmma (or not), and the staged tensor-core kernels through 6
 * buffers (or patc's) and in blocks of up to 8 warps (or patc's 4), past
 * 48 KiB of shared memory where they need it.  Variants that map to the
 * same kernel (as ptx_plan_target plans it for the target) are not
 * measured; the tensor-core mapping has only staging and the last three.
 * Returns the number measured, -1 when out of memory. */
static int tune_gpu(Bench *b, const int *base, int nbase)
{
	SearchResult *r = b->r;
	int measured = 0;
	b->pr.done = 0, b->pr.total = nbase * 9;
	progress_line(&b->pr, "search: tuning the GPU schedules of %d", nbase);
	for (int n = 0; n < nbase; n++) {
		int cur = base[n];
		PtxPlan tried[24]; /* the kernels measured from this base */
		int ntried = 0;
		for (int knob = 0; knob < 4; knob++) {
			const KernelSchedule *cs = &r->c[cur].sched;
			const Pir ir = r->c[cur].ir; /* a copy: measuring a variant may move r->c */
			LowerKernel lk = {&ir, b->p.M, b->p.K, b->p.N, b->p.op->layout, "k", 1, b->p.op->dtype, {0}};
			PtxSchedule given = ptx_schedule_of(cs), alts[5];
			PtxPlan plan;
			ptx_plan_target(&lk, &given, b->p.sm, &plan);
			if (plan.tc && knob != 3)
				continue; /* tensor cores: only staging, wgmma, buffers and warps */
			PtxSchedule now = plan.s;
			now.ksplit = (int)plan.nsplit, now.stage = plan.stage, now.tcs = given.tcs, now.tcw = given.tcw;
			int na = 0;
			if (knob == 0 && now.bx >= 32)
				alts[na] = now, alts[na++].bx = now.bx / 2;
			if (knob == 0 && now.bx <= 128 && 2 * now.bx * now.by <= 1024)
				alts[na] = now, alts[na++].bx = 2 * now.bx;
			for (int v = 1; knob == 1 && v <= 8; v *= 2)
				if (v != now.v)
					alts[na] = now, alts[na++].v = v;
			for (int rr = 1; knob == 2 && plan.group >= 0 && rr <= 8 && na < 4; rr *= 2)
				if (rr != now.r)
					alts[na] = now, alts[na++].r = rr;
			if (knob == 3) {
				if (!plan.tc)
					alts[na] = now, alts[na++].ksplit = plan.nsplit > 1 ? 1 : 2;
				if (!plan.tc && plan.nsplit > 1)
					alts[na] = now, alts[na++].wsum = !now.wsum;
				alts[na] = now, alts[na++].stage = !now.stage;
				/* on Hopper, wgmma (or mma.sync) where the kernel qualifies */
				if (plan.tc && !strcmp(b->p.sm, "sm_90"))
					alts[na] = now, alts[na++].wg = !now.wg;
				if (plan.tc && plan.stage) {
					alts[na] = now, alts[na++].tcs = now.tcs ? 0 : 6;
					if (!plan.tc_wg)
						alts[na] = now, alts[na++].tcw = now.tcw ? 0 : 8;
				}
			}
			const int from = cur;
			for (int a = 0; a < na; a++) {
				PtxPlan ap;
				ptx_plan_target(&lk, &alts[a], b->p.sm, &ap);
				bool same = same_kernel(&ap, &plan);
				for (int i = 0; i < ntried && !same; i++)
					same = same_kernel(&ap, &tried[i]);
				if (same || ntried == (int)(sizeof tried / sizeof *tried))
					continue; /* the same kernel (the knob does not apply, or maps as another did) */
				tried[ntried++] = ap;
				/* the schedule as the plan applies it (rows and blocks that
				 * divide the loops): what the kernel runs and the log says */
				KernelSchedule v = r->c[from].sched;
				if (plan.tc) /* patc's mapping, staged or not, on wgmma or not, its buffers and warps */
					v.bx = v.by = v.v = v.r = v.ksplit = 0, v.stage = ap.stage ? 1 : -1, v.wg = ap.tc_wg,
					v.tcs = ap.stage ? alts[a].tcs : 0, v.tcw = ap.stage && !ap.tc_wg ? alts[a].tcw : 0;
				else
					v.bx = ap.s.bx, v.by = ap.s.by, v.v = ap.s.v, v.r = ap.s.r, v.ksplit = (int)ap.nsplit,
					v.stage = ap.stage, v.wsum = ap.wsum;
				const int got = bench_variant(b, from, &v, &cur);
				if (got < 0)
					return -1;
				measured += got;
			}
		}
	}
	return measured;
}

/* Kernel-schedule tuning: for the best so far (choose_best) and the
 * fastest others measured within the budget, s->tune in all (the standard
 * library's patterns among them), the backend's knobs one at a time
 * (tune_x86, tune_gpu), each alternative measured and kept where it is
 * faster.  The variants are new candidates (same pattern, other schedule).
 * Returns the number measured, -1 when out of memory. */
static int tune_schedules(Bench *b)
{
	SearchResult *r = b->r;
	const SearchSettings *s = b->s;
	if (s->tune <= 0 || s->shards > 1)
		return 0; /* a shard does not know the fastest: resuming the merged log tunes */
	int *base = malloc((size_t)(s->tune > 0 ? s->tune : 1) * sizeof *base), nbase = 0;
	if (!base)
		return -1;
	for (int n = 0; n < s->tune; n++) { /* the best, then the fastest in order */
		int pick = -1;
		for (int i = 0; i < r->n && !(n == 0 && r->best >= 0); i++) {
			const SearchCandidate *c = &r->c[i];
			bool taken = false;
			for (int j = 0; j < nbase; j++)
				taken |= base[j] == i || pir_equal(&r->c[base[j]].ir, &c->ir);
			if (!taken && eligible(c, s) && (pick < 0 || c->measured_us < r->c[pick].measured_us))
				pick = i;
		}
		if (n == 0 && r->best >= 0)
			pick = r->best;
		if (pick < 0)
			break;
		base[nbase++] = pick;
	}
	const int measured = s->gpu ? tune_gpu(b, base, nbase) : tune_x86(b, base, nbase);
	free(base);
	if (measured < 0)
		return -1;
	r->tuned = measured;
	if (nbase)
		progress_line(&b->pr, "search: %d schedules measured; the fastest %.1f us", measured,
		              r->fastest >= 0 ? r->c[r->fastest].measured_us : 0.0);
	return measured;
}

int search_run(const OpResult *op, const float *w, const float *imp, const SearchSettings *s,
               FILE *progress, SearchResult *out, char err[256])
{
	memset(out, 0, sizeof *out);
	out->best = -1;
	out->fastest = -1;
	out->best_ref = -1;
	out->dense_us = -1;
	const double t0 = util_now();
	const int64_t M = op->M, K = op->K, N = op->N;
	Pool pool = {0};
	if (!enumerate(op->name, M, K, s, &pool, &out->patterns)) {
		free(pool.c), free(pool.spec);
		snprintf(err, 256, "out of memory listing candidates");
		return PATC_EXIT_ENV;
	}
	if (!pool.n) {
		free(pool.c), free(pool.spec);
		char spt[48];
		search_sparsity_text(s, spt, sizeof spt);
		snprintf(err, 256, "no pattern of at most %d levels per axis reaches %s sparsity within %.4g%%",
		         s->max_depth, spt, 100 * s->tolerance);
		return PATC_EXIT_INPUT;
	}
	const int nown = pool.n;
	for (int i = 0; i < s->nrefs; i++) { /* the reference points, each nest once */
		bool seen = false; /* (a range's two ends may round to one nest: block(8, 8, 26%) and 24%) */
		for (int k = nown; k < pool.n && !seen; k++)
			seen = pir_equal(&pool.c[k].ir, &s->refs[i]);
		if (seen)
			continue;
		SearchCandidate c = {.status = SEARCH_RANKED, .measured_us = -1, .ir = s->refs[i]};
		Spec none = {0};
		snprintf(c.ref, sizeof c.ref, "%s", s->ref_names[i]);
		snprintf(c.key, sizeof c.key, "reference %.100s", s->ref_names[i]);
		pir_print_paper(&c.ir, c.notation, sizeof c.notation);
		if (!pool_add(&pool, &c, &none)) {
			free(pool.c), free(pool.spec);
			snprintf(err, 256, "out of memory listing candidates");
			return PATC_EXIT_ENV;
		}
	}
	if (progress) {
		char spt[48];
		search_sparsity_text(s, spt, sizeof spt);
		fprintf(progress, "search: %d patterns (of %lld tilings and perforations) for %s, %lldx%lld at %s sparsity\n",
		        nown, (long long)out->patterns, op->name, (long long)M, (long long)K, spt);
	}
	/* the accuracy filter, one bound and one workspace for all */
	PruneBound bound;
	prune_bound_init(&bound, imp, M * K);
	PruneWorkspace ws = {0};
	RegionCache rc = {0};
	const char *env = getenv("PATC_SEARCH_REGIONS"); /* 0: every mask in full (the tests compare) */
	const bool shared = !env || strcmp(env, "0");
	for (int i = 0; i < pool.n; i++) {
		SearchCandidate *c = &pool.c[i];
		if (!shared || c->ref[0] || !score_reduced(&rc, &pool.spec[i], c, imp, M, K, op->rank, &ws, &bound)) {
			PruneMask pm;
			prune_mask_build_ws(&c->ir, imp, M, K, op->rank, &ws, &pm);
			prune_metrics(&c->ir, &pm, imp, &bound, w, NULL, 0, M, K, &c->metrics);
			prune_mask_free(&pm);
		}
		if (!search_density_ok(s, c->metrics.density)) {
			/* (a pattern's density over a padded nest is not the weight's:
			 * the padding is never kept where anything else can be) */
			char spt[48];
			search_sparsity_text(s, spt, sizeof spt);
			c->off_target = true;
			c->status = SEARCH_REJECTED;
			snprintf(c->why, sizeof c->why, "density %.2f%% is not %s sparsity within %.4g%%",
			         100 * c->metrics.density, spt, 100 * s->tolerance);
		} else if (c->metrics.loss_over_bound > s->budget) {
			c->status = SEARCH_REJECTED;
			snprintf(c->why, sizeof c->why, "loss %.4f is %.4f over the unstructured bound (budget %.4f)",
			         c->metrics.loss, c->metrics.loss_over_bound, s->budget);
		} else if (!c->ref[0])
			out->within++;
	}
	prune_workspace_free(&ws);
	prune_bound_free(&bound);
	out->region_shapes = rc.n;
	out->region_hits = rc.hits;
	regions_free(&rc);
	if (progress)
		fprintf(progress, "search: %lld within the accuracy budget (loss at most %.4g over the unstructured "
		                  "bound); %lld scored on the cached sums of %d block shapes\n",
		        (long long)out->within, s->budget, (long long)out->region_hits, out->region_shapes);
	/* schedules: each survivor also with the loops inside its perforated
	 * one in the other order */
	const int nbase = pool.n;
	out->masks = nown;
	for (int i = 0; i < nbase; i++) {
		if (pool.c[i].status == SEARCH_REJECTED || pool.c[i].ref[0])
			continue;
		Spec sp = pool.spec[i];
		sp.inner_k_first = 1;
		SearchCandidate c = pool.c[i];
		if (!spec_ir(&sp, op->name, M, K, &c.ir) || pir_equal(&c.ir, &pool.c[i].ir) ||
		    (s->gpu && pir_check_gpu(&c.ir, NULL, 0)))
			continue;
		pir_print_paper(&c.ir, c.notation, sizeof c.notation);
		if (!pool_add(&pool, &c, &sp)) {
			free(pool.c), free(pool.spec);
			snprintf(err, 256, "out of memory listing schedules");
			return PATC_EXIT_ENV;
		}
	}
	int threads = s->threads > 0 ? s->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (threads < 1)
		threads = 1;
	int width = 0; /* the floats a vector the model assumes (0: the host's) */
	if (!s->gpu && s->cpu) {
		char terr[X86_ERR_MAX];
		LLVMTargetMachineRef tm = x86_target_machine(s->cpu, "", false, terr);
		if (tm)
			width = x86_vector_width(tm), LLVMDisposeTargetMachine(tm);
	}
	Order *ord = malloc((size_t)(pool.n > 0 ? pool.n : 1) * sizeof *ord);
	int nord = 0;
	for (int i = 0; ord && i < pool.n; i++) {
		SearchCandidate *c = &pool.c[i];
		CostQuery q = {&c->ir, N, op->layout, threads, (double)c->metrics.nkept, c->sched, width};
		c->predicted_us = cost_predict_us(s->model, &q);
		if (c->status == SEARCH_REJECTED || c->ref[0])
			continue;
		ord[nord++] = (Order){c->predicted_us, mix(s->seed ^ mix((uint64_t)i + 1)), i};
	}
	if (!ord) {
		free(pool.c), free(pool.spec);
		snprintf(err, 256, "out of memory ranking candidates");
		return PATC_EXIT_ENV;
	}
	qsort(ord, (size_t)nord, sizeof *ord, cmp_order);
	if (nord && !s->measure)
		out->best = ord[0].i; /* the best ranked (exploring varies only what is measured) */
	/* exploration: the last explore * topk places go to candidates drawn
	 * at random (seeded) from the ranked rest, so that the log also holds
	 * what the model ranks low */
	const int exploit = s->topk - (int)llround(s->explore * s->topk);
	uint64_t draw = mix(s->seed + 0x9e3779b97f4a7c15ULL);
	for (int j = exploit; j < nord - 1 && j < s->topk; j++) {
		draw = mix(draw + 1);
		int pick = j + (int)(draw % (uint64_t)(nord - j));
		Order t = ord[j];
		ord[j] = ord[pick], ord[pick] = t;
	}
	out->c = pool.c;
	out->n = pool.n;
	free(pool.spec);
	if (s->measure && nord) {
		float *x = util_alloc_measured((size_t)(K * N) * sizeof *x);
		if (!x) {
			free(ord);
			search_result_free(out);
			snprintf(err, 256, "out of memory for the %lld x %lld input X its kernels are measured on", (long long)K,
			         (long long)N);
			return PATC_EXIT_ENV;
		}
		if (op->layout == PAT_LAYOUT_KN)
			synth_weights(x, K, N, 2, SYNTH_PLAIN, 1);
		else
			synth_weights(x, N, K, 2, SYNTH_PLAIN, 1);
		Bench b = {.p = {.op = op, .w = w, .imp = imp, .x = x, .M = M, .K = K, .N = N, .threads = threads, .which = -1},
		           .s = s,
		           .r = out,
		           .pr = {.f = progress}};
		b.p.sm = s->gpu ? s->sm : NULL;
		b.p.cpu = s->gpu ? NULL : s->cpu;
		b.p.emulate = s->gpu && s->emulate;
		b.pr.tty = progress && isatty(fileno(progress));
		for (int i = s->nlogged - 1; i >= 0 && out->dense_us < 0; i--)
			if (s->logged[i].dense_us > 0)
				out->dense_us = s->logged[i].dense_us; /* --resume: the baseline as logged */
		if (out->dense_us < 0) {
			Measured dm = measure(&b.p, NULL, s->timeout_s);
			out->dense_us = dm.ok ? dm.us : -1;
			if (!dm.ok && progress)
				fprintf(progress, "search: warning: the dense baseline's measurement failed (%s): no speedups\n",
				        dm.why);
		}
		const int top = nord < s->topk ? nord : s->topk;
		if (out->dense_us < 0)
			progress_line(&b.pr, "search: measuring the %d best ranked", top);
		else if (s->gpu && s->emulate)
			progress_line(&b.pr, "search: the dense kernel %.1f us on the host emulator (not a GPU's time); "
			                     "measuring the %d best ranked", out->dense_us, top);
		else if (s->gpu)
			progress_line(&b.pr, "search: dense cuBLAS %.1f us on %s; measuring the %d best ranked", out->dense_us,
			              s->sm, top);
		else
			progress_line(&b.pr, "search: dense OpenBLAS sgemm %.1f us (%d thread%s); measuring the %d best ranked",
			              out->dense_us, threads, threads == 1 ? "" : "s", top);
		b.pr.total = top;
		for (int j = 0; j < top; j++) {
			if (s->shards > 1 && j % s->shards != s->shard)
				continue; /* another shard's */
			b.p.which = j;
			bench_one(&b, ord[j].i, "");
		}
		/* the reference points: every one, so that they can be drawn (shard 0's job) */
		b.pr.done = 0, b.pr.total = 0;
		for (int i = 0; i < out->n; i++)
			b.pr.total += out->c[i].ref[0] != 0;
		for (int i = 0; i < out->n && (s->shards < 2 || s->shard == 0); i++) {
			SearchCandidate *c = &out->c[i];
			if (!c->ref[0])
				continue;
			b.p.which = -1;
			int same = -1; /* a searched candidate with the same nest, measured already (a hopeless one too) */
			for (int k = 0; k < out->n && same < 0; k++)
				if (!out->c[k].ref[0] && kernel_schedule_is_default(&out->c[k].sched) &&
				    (out->c[k].status == SEARCH_MEASURED || out->c[k].status == SEARCH_FAILED) &&
				    pir_equal(&out->c[k].ir, &c->ir))
					same = k;
			if (same >= 0) {
				const SearchCandidate *o = &out->c[same];
				Measured m = {.us = o->measured_us, .rel_err = o->rel_err, .ok = o->status == SEARCH_MEASURED,
				              .early = o->early};
				snprintf(m.why, sizeof m.why, "%.119s", o->why);
				record(c, &m);
				consider_fastest(&b, i);
			} else
				bench_one(&b, i, "reference ");
		}
		progress_line(&b.pr, "search: %d references measured", b.pr.done);
		choose_best(out, s);
		if (tune_schedules(&b) < 0) {
			free(x);
			free(ord);
			search_result_free(out);
			snprintf(err, 256, "out of memory listing schedules");
			return PATC_EXIT_ENV;
		}
		free(x);
		choose_best(out, s);
		mark_pareto(out);
	}
	free(ord);
	out->seconds = util_now() - t0;
	return PATC_EXIT_OK;
}

void search_result_free(SearchResult *r)
{
	free(r->c);
	memset(r, 0, sizeof *r);
}
