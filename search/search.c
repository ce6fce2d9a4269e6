/* search.c - the pattern and schedule search; see search.h. */
#define _POSIX_C_SOURCE 200809L
#include "search.h"
#include "../backend_x86/x86.h"
#include "../support/util.h"
#include "../weights/tensor.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const SearchSettings search_defaults = {
	.sparsity = 0.75, .tolerance = 0.02, .budget = 0.05, .max_depth = 3, .min_length = 4, .max_pattern = 64,
	.topk = 8, .threads = 0, .timeout_s = 60, .seed = 0, .measure = true,
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
static bool spec_ir(const Spec *sp, int64_t M, int64_t K, Pir *ir)
{
	pir_init(ir, "w", M, K);
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
static void spec_key(const Spec *sp, char key[128])
{
	int64_t sub[PIR_NAXES] = {1, 1};
	const int pa = sp->pa, pb = 1 - pa;
	for (int l = sp->pi + 1; l < sp->t[pa].depth; l++)
		sub[pa] *= sp->t[pa].f[l];
	for (int l = sp->cut; l < sp->t[pb].depth; l++)
		sub[pb] *= sp->t[pb].f[l];
	if (sp->cut == 0)
		sub[pb] = sp->t[pb].ext;
	snprintf(key, 128, "%c%lld^%lld/%lldx%lld/%lldx%lld%s%lld", pa == PIR_AXIS_M ? 'm' : 'k',
	         (long long)sp->t[pa].f[sp->pi], (long long)sp->nnz, (long long)sub[PIR_AXIS_M],
	         (long long)sub[PIR_AXIS_K], (long long)sp->t[PIR_AXIS_M].ext, (long long)sp->t[PIR_AXIS_K].ext,
	         sp->nm_n ? "/nm" : "", (long long)(sp->nm_n ? sp->nm_n * 100 + sp->t[PIR_AXIS_K].f[sp->t[PIR_AXIS_K].depth - 1] : 0));
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

/* Every candidate pattern (one per key), its IR built. */
static bool enumerate(int64_t M, int64_t K, const SearchSettings *s, Pool *pool, int64_t *considered)
{
	Tiling tm[64], tk[64];
	int nm = axis_tilings(M, s, tm, 64), nk = axis_tilings(K, s, tk, 64);
	const double d = 1 - s->sparsity;
	static const int64_t nm_shapes[][2] = {{2, 4}, {1, 4}, {2, 8}, {1, 8}};
	for (int im = 0; im < nm; im++)
		for (int ik = 0; ik < nk; ik++)
			for (int pa = 0; pa < PIR_NAXES; pa++) {
				Spec sp = {.t = {tm[im], tk[ik]}, .pa = pa};
				const int pb = 1 - pa;
				for (sp.pi = 0; sp.pi < sp.t[pa].depth; sp.pi++)
					for (sp.cut = 0; sp.cut <= sp.t[pb].depth; sp.cut++)
						for (int v = -1; v < (int)(sizeof nm_shapes / sizeof *nm_shapes); v++) {
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
							if (!spec_ir(&sp, M, K, &c.ir) || (s->gpu && pir_check_gpu(&c.ir, NULL, 0)))
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

/* ---- the cost model ----
 *
 * An analytic model of the x86 kernels (backend_x86): every kept weight
 * costs one FMA per column, at a rate that grows with the rows sharing each
 * X vector (a dense m loop right outside a dense run along k: the m runs,
 * up to 4 rows) and with the length of the contiguous runs along k (index
 * loads and loop overhead per run), plus streaming X and C once.  Rates
 * measured on this machine's kernels (bench/RESULTS.md): 32 x 32 blocks
 * about 1.7 vector FMAs a cycle, element-wise about 0.7. */
static double predict_us(const Pir *ir, int64_t N, int threads, const PruneMetrics *pm)
{
	const int n = ir->nloops;
	/* the innermost run along k and the rows sharing it */
	int64_t run = 1;
	int i = n - 1;
	while (i >= 0 && !pir_loop_has_axis(&ir->loops[i], PIR_AXIS_M)) {
		run *= ir->loops[i].nnz;
		if (pir_loop_is_perforated(&ir->loops[i])) {
			i--;
			break;
		}
		i--;
	}
	int64_t rows = 1;
	if (i >= 0 && !pir_loop_is_perforated(&ir->loops[i]) && ir->loops[i].ncomp == 1 && i + 1 < n &&
	    !pir_loop_is_perforated(&ir->loops[i + 1]))
		rows = ir->loops[i].len < 4 ? ir->loops[i].len : 4;
	if (ir->loops[n - 1].ncomp == 1 && ir->loops[n - 1].comp[0].axis == PIR_AXIS_M &&
	    !pir_loop_is_perforated(&ir->loops[n - 1]))
		rows = ir->loops[n - 1].len < 4 ? ir->loops[n - 1].len : 4; /* an m loop innermost */
	const double vec_per_cycle = 0.5 + 0.3 * (double)rows, ghz = 3.2, lanes = 16;
	const double run_eff = (double)run / ((double)run + 1.0);
	double fmas = (double)pm->nkept * (double)N;
	double t = fmas / (lanes * vec_per_cycle * run_eff * ghz * 1e3);
	/* X and C streamed once, at about 20 GB/s a core */
	double bytes = 4.0 * ((double)ir->len[PIR_AXIS_K] + (double)ir->len[PIR_AXIS_M]) * (double)N;
	t += bytes / (20e3);
	return t / (threads > 0 ? threads : 1);
}

/* ---- measurement in a child process ---- */

typedef struct Measured {
	double us, rel_err;
	int ok; /* 1: checked and timed */
	char why[120];
} Measured;

typedef struct KernelRun {
	const X86Kernel *k;
	const float *x, *values;
	float *c;
	const int32_t *const *index;
	int threads;
} KernelRun;

static void kernel_call(void *arg)
{
	const KernelRun *r = arg;
	x86_run(r->k, r->x, r->c, r->values, r->index, r->threads);
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
} Problem;

/* For the tests: $PATC_SEARCH_INJECT = crash, hang or wrong makes the
 * first candidate's measuring process crash, hang or return a wrong C. */
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

/* The child's work: the candidate's kernel (ir) checked and timed, or (ir
 * NULL) the dense sgemm timed. */
static Measured child_measure(const Problem *p, const Pir *ir)
{
	Measured m = {0};
	const int64_t M = p->M, K = p->K, N = p->N;
	float *c = util_alloc_timed((size_t)(M * N) * sizeof *c);
	if (!c) {
		snprintf(m.why, sizeof m.why, "out of memory");
		return m;
	}
	if (!ir) {
		openblas_set_num_threads(p->threads);
		DenseRun d = {p->w, p->x, c, M, K, N, p->op->layout == PAT_LAYOUT_KN};
		m.us = util_time_us(dense_call, &d, 3);
		m.ok = 1;
		return m;
	}
	PruneMask pm;
	char err[PRUNE_ERR_MAX];
	if (!prune_mask_build(ir, p->imp, M, K, p->op->rank, &pm, err)) {
		snprintf(m.why, sizeof m.why, "mask: %.100s", err);
		return m;
	}
	float *dense = malloc((size_t)(M * K) * sizeof *dense);
	float *values = dense ? prune_pack_new(ir, &pm, p->w, M, K, NULL, dense) : NULL;
	if (!values) {
		snprintf(m.why, sizeof m.why, "out of memory");
		return m;
	}
	const bool kn = p->op->layout == PAT_LAYOUT_KN;
	LowerKernel lk = {ir, M, K, N, p->op->layout, "search_kernel", 0, PAT_F32};
	X86Kernel kern;
	char xerr[X86_ERR_MAX];
	if (!x86_jit(&lk, NULL, NULL, &kern, xerr)) {
		snprintf(m.why, sizeof m.why, "compile: %.100s", xerr);
		return m;
	}
	const int32_t *const *index = (const int32_t *const *)pm.index;
	x86_run(&kern, p->x, c, values, index, p->threads);
	inject(p->which, c, M * N);
	/* check against float64 on up to 64 columns */
	double num = 0, den = 0;
	const int64_t cols = N < 64 ? N : 64;
	for (int64_t s = 0; s < cols; s++) {
		int64_t n = cols == N ? s : s * (N - 1) / (cols - 1);
		for (int64_t i = 0; i < M; i++) {
			double ref = 0;
			for (int64_t k = 0; k < K; k++)
				ref += (double)dense[i * K + k] * (kn ? p->x[k * N + n] : p->x[n * K + k]);
			double e = (double)(kn ? c[i * N + n] : c[n * M + i]) - ref;
			num += e * e, den += ref * ref;
		}
	}
	m.rel_err = sqrt(num / (den > 0 ? den : 1));
	if (!(m.rel_err < 1e-4)) {
		snprintf(m.why, sizeof m.why, "wrong result: relative error %.3g against float64", m.rel_err);
		return m;
	}
	KernelRun r = {&kern, p->x, values, c, index, p->threads};
	m.us = util_time_us(kernel_call, &r, 3);
	m.ok = 1;
	return m;
}

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
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]), close(fd[1]);
		snprintf(m.why, sizeof m.why, "fork: %s", strerror(errno));
		return m;
	}
	if (pid == 0) {
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
	if (ready == 0)
		snprintf(m.why, sizeof m.why, "timed out after %g s", timeout_s);
	else if (WIFSIGNALED(st))
		snprintf(m.why, sizeof m.why, "crashed (signal %d)", WTERMSIG(st));
	else
		snprintf(m.why, sizeof m.why, "the measuring process exited with status %d", WEXITSTATUS(st));
	return m;
}

/* ---- the tuning log ---- */

/* --resume: c's measurement as logged, if it is. */
static bool taken_over(const SearchSettings *s, const SearchCandidate *c, Measured *m)
{
	if (!s->nlogged)
		return false;
	char *text = pir_print_text(&c->ir);
	bool found = false;
	for (int i = 0; text && i < s->nlogged && !found; i++) {
		const SearchLogged *e = &s->logged[i];
		if (strcmp(e->pir, text))
			continue;
		found = true;
		*m = (Measured){.us = e->latency_us, .rel_err = e->rel_err, .ok = e->latency_us >= 0};
		snprintf(m->why, sizeof m->why, "%.119s", e->why);
	}
	free(text);
	return found;
}

/* Appends c's measurement to the log at once, so that a search killed
 * later keeps it. */
static void log_measurement(const SearchSettings *s, const SearchCandidate *c, Measured m, double dense_us,
                            FILE *progress)
{
	if (!s->log_path || !s->log_info)
		return;
	SearchCandidate logged = *c;
	logged.status = m.ok ? SEARCH_MEASURED : SEARCH_FAILED;
	logged.measured_us = m.us;
	logged.rel_err = m.rel_err;
	snprintf(logged.why, sizeof logged.why, "%s", m.why);
	char *line = search_log_line(s->log_info, &logged, dense_us);
	FILE *f = line ? fopen(s->log_path, "a") : NULL;
	bool ok = f && fprintf(f, "%s\n", line) > 0;
	if (f)
		ok = fclose(f) == 0 && ok;
	if (!ok && progress)
		fprintf(progress, "search: warning: cannot append to '%s': %s\n", s->log_path, strerror(errno));
	free(line);
}

/* A measurement's outcome into its candidate. */
static void record(SearchCandidate *c, const Measured *m)
{
	if (m->ok) {
		c->status = SEARCH_MEASURED;
		c->measured_us = m->us;
		c->rel_err = m->rel_err;
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

bool search_run(const OpResult *op, const float *w, const float *imp, const SearchSettings *s,
                FILE *progress, SearchResult *out, char err[256])
{
	memset(out, 0, sizeof *out);
	out->best = -1;
	out->best_ref = -1;
	out->dense_us = -1;
	const double t0 = util_now();
	const int64_t M = op->M, K = op->K, N = op->N;
	Pool pool = {0};
	if (!enumerate(M, K, s, &pool, &out->patterns)) {
		free(pool.c), free(pool.spec);
		snprintf(err, 256, "out of memory listing candidates");
		return false;
	}
	if (!pool.n) {
		free(pool.c), free(pool.spec);
		snprintf(err, 256, "no pattern of at most %d levels per axis reaches %.4g%% sparsity within %.4g%%",
		         s->max_depth, 100 * s->sparsity, 100 * s->tolerance);
		return false;
	}
	const int nown = pool.n;
	for (int i = 0; i < s->nrefs; i++) { /* the reference points */
		SearchCandidate c = {.status = SEARCH_RANKED, .measured_us = -1, .ir = s->refs[i]};
		Spec none = {0};
		snprintf(c.ref, sizeof c.ref, "%s", s->ref_names[i]);
		snprintf(c.key, sizeof c.key, "reference %.100s", s->ref_names[i]);
		pir_print_paper(&c.ir, c.notation, sizeof c.notation);
		if (!pool_add(&pool, &c, &none)) {
			free(pool.c), free(pool.spec);
			snprintf(err, 256, "out of memory listing candidates");
			return false;
		}
	}
	if (progress)
		fprintf(progress, "search: %d patterns (of %lld tilings and perforations) for %s, %lldx%lld at %.4g%% "
		                  "sparsity\n",
		        nown, (long long)out->patterns, op->name, (long long)M, (long long)K, 100 * s->sparsity);
	/* the accuracy filter, one bound and one workspace for all */
	PruneBound bound;
	prune_bound_init(&bound, imp, M * K);
	PruneWorkspace ws = {0};
	for (int i = 0; i < pool.n; i++) {
		SearchCandidate *c = &pool.c[i];
		PruneMask pm;
		char perr[PRUNE_ERR_MAX];
		if (!prune_mask_build_ws(&c->ir, imp, M, K, op->rank, &ws, &pm, perr)) {
			c->status = SEARCH_REJECTED;
			snprintf(c->why, sizeof c->why, "%.150s", perr);
			continue;
		}
		prune_metrics(&c->ir, &pm, imp, &bound, w, NULL, 0, M, K, &c->metrics);
		prune_mask_free(&pm);
		if (c->metrics.loss_over_bound > s->budget) {
			c->status = SEARCH_REJECTED;
			snprintf(c->why, sizeof c->why, "loss %.4f is %.4f over the unstructured bound (budget %.4f)",
			         c->metrics.loss, c->metrics.loss_over_bound, s->budget);
		} else if (!c->ref[0])
			out->within++;
	}
	prune_workspace_free(&ws);
	prune_bound_free(&bound);
	if (progress)
		fprintf(progress, "search: %lld within the accuracy budget (loss at most %.4g over the unstructured "
		                  "bound)\n",
		        (long long)out->within, s->budget);
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
		if (!spec_ir(&sp, M, K, &c.ir) || pir_equal(&c.ir, &pool.c[i].ir) || (s->gpu && pir_check_gpu(&c.ir, NULL, 0)))
			continue;
		pir_print_paper(&c.ir, c.notation, sizeof c.notation);
		if (!pool_add(&pool, &c, &sp)) {
			free(pool.c), free(pool.spec);
			snprintf(err, 256, "out of memory listing schedules");
			return false;
		}
	}
	int threads = s->threads > 0 ? s->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (threads < 1)
		threads = 1;
	Order *ord = malloc((size_t)(pool.n > 0 ? pool.n : 1) * sizeof *ord);
	int nord = 0;
	for (int i = 0; ord && i < pool.n; i++) {
		SearchCandidate *c = &pool.c[i];
		c->predicted_us = predict_us(&c->ir, N, threads, &c->metrics);
		if (c->status == SEARCH_REJECTED || c->ref[0])
			continue;
		ord[nord++] = (Order){c->predicted_us, mix(s->seed ^ mix((uint64_t)i + 1)), i};
	}
	if (!ord) {
		free(pool.c), free(pool.spec);
		snprintf(err, 256, "out of memory ranking candidates");
		return false;
	}
	qsort(ord, (size_t)nord, sizeof *ord, cmp_order);
	out->c = pool.c;
	out->n = pool.n;
	free(pool.spec);
	if (nord && !s->measure)
		out->best = ord[0].i;
	if (s->measure && nord) {
		float *x = util_alloc_timed((size_t)(K * N) * sizeof *x);
		if (!x) {
			free(ord);
			search_result_free(out);
			snprintf(err, 256, "out of memory for X");
			return false;
		}
		if (op->layout == PAT_LAYOUT_KN)
			synth_weights(x, K, N, 2, SYNTH_PLAIN, 1);
		else
			synth_weights(x, N, K, 2, SYNTH_PLAIN, 1);
		Problem p = {op, w, imp, x, M, K, N, threads, -1};
		for (int i = 0; i < s->nlogged && out->dense_us < 0; i++)
			if (s->logged[i].dense_us > 0)
				out->dense_us = s->logged[i].dense_us; /* --resume: the baseline as logged */
		if (out->dense_us < 0) {
			Measured dm = measure(&p, NULL, s->timeout_s);
			out->dense_us = dm.ok ? dm.us : -1;
		}
		if (progress)
			fprintf(progress, "search: dense OpenBLAS sgemm %.1f us (%d thread%s); measuring the %d best ranked\n",
			        out->dense_us, threads, threads == 1 ? "" : "s", nord < s->topk ? nord : s->topk);
		for (int j = 0; j < nord && j < s->topk; j++) {
			SearchCandidate *c = &out->c[ord[j].i];
			if (s->shards > 1 && j % s->shards != s->shard)
				continue; /* another shard's */
			p.which = j;
			Measured m;
			if (taken_over(s, c, &m))
				out->resumed++;
			else {
				m = measure(&p, &c->ir, s->timeout_s);
				log_measurement(s, c, m, out->dense_us, progress);
			}
			record(c, &m);
			if (m.ok && (out->best < 0 || m.us < out->c[out->best].measured_us))
				out->best = ord[j].i;
			if (progress && m.ok)
				fprintf(progress, "search: [%d/%d] %-40s predicted %9.1f us, measured %9.1f us\n", j + 1,
				        nord < s->topk ? nord : s->topk, c->notation, c->predicted_us, m.us);
			else if (progress)
				fprintf(progress, "search: [%d/%d] %-40s predicted %9.1f us, FAILED: %s\n", j + 1,
				        nord < s->topk ? nord : s->topk, c->notation, c->predicted_us, m.why);
		}
		/* the reference points: every one, so that they can be drawn (shard 0's job) */
		for (int i = 0; i < out->n && (s->shards < 2 || s->shard == 0); i++) {
			SearchCandidate *c = &out->c[i];
			if (!c->ref[0])
				continue;
			p.which = -1;
			Measured m;
			int same = -1; /* a searched candidate with the same nest, measured already */
			for (int k = 0; k < out->n && same < 0; k++)
				if (!out->c[k].ref[0] && (out->c[k].status == SEARCH_MEASURED || out->c[k].status == SEARCH_FAILED) &&
				    pir_equal(&out->c[k].ir, &c->ir))
					same = k;
			if (same >= 0) {
				const SearchCandidate *o = &out->c[same];
				m = (Measured){.us = o->measured_us, .rel_err = o->rel_err, .ok = o->status == SEARCH_MEASURED};
				snprintf(m.why, sizeof m.why, "%.119s", o->why);
			} else if (taken_over(s, c, &m))
				out->resumed++;
			else {
				m = measure(&p, &c->ir, s->timeout_s);
				log_measurement(s, c, m, out->dense_us, progress);
			}
			record(c, &m);
			if (m.ok && c->metrics.loss_over_bound <= s->budget &&
			    (out->best_ref < 0 || m.us < out->c[out->best_ref].measured_us))
				out->best_ref = i;
			if (progress)
				fprintf(progress, "search: reference %-28s %-30s %s %9.1f us\n", c->ref, c->notation,
				        m.ok ? "measured" : "FAILED", m.ok ? m.us : 0.0);
		}
		free(x);
		mark_pareto(out);
	}
	free(ord);
	out->seconds = util_now() - t0;
	return true;
}

void search_result_free(SearchResult *r)
{
	free(r->c);
	memset(r, 0, sizeof *r);
}
