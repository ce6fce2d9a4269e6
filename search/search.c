/* SPDX-License-Identifier: MIT */
/* search.c - the driver of the pattern and schedule search (see search.h):
 * the candidates listed (space.c) with the reference points, scored and
 * filtered by accuracy, given their other loop order, ranked by the cost
 * model with some drawn at random, then measured (bench.c, measure.c) in
 * rounds; the best chosen among the kernels as fast as the fastest, the
 * Pareto front marked, and the result freed. */
#define _POSIX_C_SOURCE 200809L
#include "search_impl.h"
#include "../backend_x86/x86.h"
#include "../support/blas_core.h"
#include "../support/util.h"
#include "../weights/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const SearchSettings search_defaults = {
	.sparsity = 0.75, .tolerance = 0.02, .budget = 0.05, .max_depth = 3, .min_length = 4, .max_pattern = 64,
	.topk = 8, .tune = 3, .stop_ratio = 2, .tie = 0.02, .threads = 0, .timeout_s = 60, .seed = 0, .measure = true,
};

const char *const search_status_names[] = {"rejected", "ranked", "measured", "failed"};

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
		if (r->c[i].ref[0] && search_eligible(&r->c[i], s) &&
		    (r->best_ref < 0 || r->c[i].measured_us < r->c[r->best_ref].measured_us))
			r->best_ref = i;
	if (r->fastest < 0)
		return;
	double limit = r->c[r->fastest].measured_us * (1 + s->tie), least = INFINITY;
	if (r->best_ref >= 0 && r->c[r->best_ref].measured_us < limit)
		limit = r->c[r->best_ref].measured_us;
	for (int i = 0; i < r->n; i++)
		if (search_eligible(&r->c[i], s) && r->c[i].measured_us <= limit) {
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
		if (search_eligible(c, s) && c->measured_us <= limit && c->metrics.loss <= near &&
		    (r->best < 0 || c->measured_us < r->c[r->best].measured_us))
			r->best = i;
	}
}

/* Step 1: the candidate patterns (search_enumerate) and then the reference
 * points, each nest once, into pool, of which the first *nown are the
 * search's own.  PATC_EXIT_OK, else with err (the caller frees pool). */
static int candidates_list(const OpResult *op, const SearchSettings *s, FILE *progress, Pool *pool, int *nown,
                           SearchResult *out, char err[256])
{
	const int64_t M = op->shape.M, K = op->shape.K;
	if (!search_enumerate(op->name, M, K, s, pool, &out->patterns)) {
		snprintf(err, 256, "out of memory listing candidates");
		return PATC_EXIT_ENV;
	}
	if (!pool->n) {
		char spt[48];
		search_sparsity_text(s, spt, sizeof spt);
		snprintf(err, 256, "no pattern of at most %d levels per axis reaches %s sparsity within %.4g%%",
		         s->max_depth, spt, 100 * s->tolerance);
		return PATC_EXIT_INPUT;
	}
	*nown = pool->n;
	for (int i = 0; i < s->nrefs; i++) { /* the reference points, each nest once */
		bool seen = false; /* (a range's two ends may round to one nest: block(8, 8, 26%) and 24%) */
		for (int k = *nown; k < pool->n && !seen; k++)
			seen = pir_equal(&pool->c[k].ir, &s->refs[i]);
		if (seen)
			continue;
		SearchCandidate c = {.status = SEARCH_RANKED, .measured_us = -1, .ir = s->refs[i]};
		Spec none = {0};
		snprintf(c.ref, sizeof c.ref, "%s", s->ref_names[i]);
		snprintf(c.key, sizeof c.key, "reference %.100s", s->ref_names[i]);
		pir_print_paper(&c.ir, c.notation, sizeof c.notation);
		if (!search_pool_add(pool, &c, &none)) {
			snprintf(err, 256, "out of memory listing candidates");
			return PATC_EXIT_ENV;
		}
	}
	if (progress) {
		char spt[48];
		search_sparsity_text(s, spt, sizeof spt);
		fprintf(progress, "search: %d patterns (of %lld tilings and perforations) for %s, %lldx%lld at %s sparsity\n",
		        *nown, (long long)out->patterns, op->name, (long long)M, (long long)K, spt);
	}
	return PATC_EXIT_OK;
}

/* Step 2: the accuracy filter: each candidate's mask built (on the cached
 * block sums where it can be) and scored; those off the target's density
 * or over the budget rejected. */
static void candidates_score(const OpResult *op, const float *w, const float *imp, const SearchSettings *s,
                             FILE *progress, Pool *pool, SearchResult *out)
{
	const int64_t M = op->shape.M, K = op->shape.K;
	/* the accuracy filter, one bound and one workspace for all */
	PruneBound bound;
	prune_bound_init(&bound, imp, M * K);
	PruneWorkspace ws = {0};
	RegionCache rc = {0};
	const char *env = getenv("PATC_SEARCH_REGIONS"); /* 0: every mask in full (the tests compare) */
	const bool shared = !env || strcmp(env, "0");
	for (int i = 0; i < pool->n; i++) {
		SearchCandidate *c = &pool->c[i];
		if (!shared || c->ref[0] ||
		    !search_score_reduced(&rc, &pool->spec[i], c, imp, M, K, op->rank, &ws, &bound)) {
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
	search_regions_free(&rc);
	if (progress)
		fprintf(progress, "search: %lld within the accuracy budget (loss at most %.4g over the unstructured "
		                  "bound); %lld scored on the cached sums of %d block shapes\n",
		        (long long)out->within, s->budget, (long long)out->region_hits, out->region_shapes);
}

/* Step 3: schedules: each survivor also with the loops inside its
 * perforated one in the other order.  false when out of memory. */
static bool candidates_reorder(const OpResult *op, const SearchSettings *s, Pool *pool)
{
	const int64_t M = op->shape.M, K = op->shape.K;
	const int nbase = pool->n;
	for (int i = 0; i < nbase; i++) {
		if (pool->c[i].status == SEARCH_REJECTED || pool->c[i].ref[0])
			continue;
		Spec sp = pool->spec[i];
		sp.inner_k_first = 1;
		SearchCandidate c = pool->c[i];
		if (!search_spec_ir(&sp, op->name, M, K, &c.ir) || pir_equal(&c.ir, &pool->c[i].ir) ||
		    (s->gpu && pir_check_gpu(&c.ir, NULL, 0)))
			continue;
		pir_print_paper(&c.ir, c.notation, sizeof c.notation);
		if (!search_pool_add(pool, &c, &sp))
			return false;
	}
	return true;
}

/* Step 4: every candidate's predicted time (the cost model, for kernels
 * of `threads` threads), and the order in which the search's own within
 * the budget are measured: by prediction, the last explore * topk places
 * of the topk drawn at random from the rest.  Unmeasured, the best is the
 * best ranked.  The order (*nord_out of it), or NULL when out of memory. */
static Order *candidates_rank(const OpResult *op, const SearchSettings *s, int threads, Pool *pool,
                              SearchResult *out, int *nord_out)
{
	const int64_t N = op->shape.N;
	int width = 0; /* the floats a vector the model assumes (0: the host's) */
	if (!s->gpu && s->cpu) {
		char terr[X86_ERR_MAX];
		LLVMTargetMachineRef tm = x86_target_machine(s->cpu, "", false, terr);
		if (tm)
			width = x86_vector_width(tm), LLVMDisposeTargetMachine(tm);
	}
	Order *ord = malloc((size_t)(pool->n > 0 ? pool->n : 1) * sizeof *ord);
	int nord = 0;
	for (int i = 0; ord && i < pool->n; i++) {
		SearchCandidate *c = &pool->c[i];
		CostQuery q = {&c->ir, N, op->shape.layout, threads, (double)c->metrics.nkept, c->sched, width};
		c->predicted_us = cost_predict_us(s->model, &q);
		if (c->status == SEARCH_REJECTED || c->ref[0])
			continue;
		ord[nord++] = (Order){c->predicted_us, mix(s->seed ^ mix((uint64_t)i + 1)), i};
	}
	if (!ord)
		return NULL;
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
	*nord_out = nord;
	return ord;
}

/* src into dst[32], its control characters as '?' (a log's, edited by
 * hand, goes into the summary's one line). */
static void core_copy(char dst[32], const char *src)
{
	snprintf(dst, 32, "%s", src);
	for (char *q = dst; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
}

/* The dense baseline's latency into b->r: as logged (--resume), else
 * measured (a failure said on progress: no speedups).  On x86 with
 * s->blas_exe, where OpenBLAS runs a kernel set weaker than the strongest
 * this CPU runs, the sgemm is timed again with that one in a fresh patc
 * process (the same way: support/blas_core.h), and the faster of the two
 * is the baseline; one that cannot be timed so is said, and the other
 * stays. */
static void baseline_measure(Bench *b, FILE *progress)
{
	const SearchSettings *s = b->s;
	SearchResult *out = b->r;
	out->blas.in_use_us = out->blas.stronger_us = -1;
	for (int i = s->nlogged - 1; i >= 0 && out->dense_us < 0; i--)
		if (s->logged[i].dense_us > 0) {
			out->dense_us = s->logged[i].dense_us; /* --resume: the baseline as logged */
			core_copy(out->blas_core, s->logged[i].blas_core);
		}
	if (out->dense_us >= 0)
		return;
	Measured dm = search_measure(&b->p, NULL, s->timeout_s);
	out->dense_us = dm.ok ? dm.us : -1;
	if (!dm.ok && progress)
		fprintf(progress, "search: warning: the dense baseline's measurement failed (%s): no speedups\n",
		        dm.why);
	if (s->gpu)
		return;
	BlasCoreInfo bc;
	blas_core_info(&bc); /* (the measuring child's: forked, not executed, it runs this process's OpenBLAS) */
	core_copy(out->blas.in_use, bc.in_use);
	core_copy(out->blas.stronger, bc.stronger ? bc.stronger : "");
	blas_core_text(&bc, out->blas.text, sizeof out->blas.text);
	out->blas.in_use_us = out->dense_us;
	if (dm.ok)
		core_copy(out->blas_core, bc.in_use);
	if (!bc.stronger || !s->blas_exe || !dm.ok)
		return;
	const Problem *p = &b->p;
	double us;
	if (!blas_core_time_fresh(s->blas_exe, bc.stronger, BLAS_TIMING_SEARCH, p->op->shape.layout == PAT_LAYOUT_KN,
	                          p->M, p->K, p->N, p->threads, s->timeout_s, &us, out->blas.why)) {
		if (progress)
			fprintf(progress, "search: warning: OpenBLAS runs its %s kernels, weaker than %s, and the dense sgemm "
			                  "with %s could not be timed (%s): the baseline is %s's\n",
			        bc.in_use, bc.stronger, bc.stronger, out->blas.why, bc.in_use);
		return;
	}
	out->blas.stronger_us = us;
	if (progress)
		fprintf(progress, "search: OpenBLAS runs its %s kernels, weaker than %s, the strongest this CPU runs: dense "
		                  "sgemm %.1f us with %s, %.1f us with %s (in a fresh process); the baseline is the faster\n",
		        bc.in_use, bc.stronger, out->dense_us, bc.in_use, us, bc.stronger);
	if (us < out->dense_us) {
		out->dense_us = us;
		core_copy(out->blas_core, bc.stronger);
	}
}

/* The `top` best ranked (this shard's), after a line with the dense
 * baseline's latency. */
static void ranked_measure(Bench *b, const Order *ord, int top, int threads)
{
	const SearchSettings *s = b->s;
	SearchResult *out = b->r;
	if (out->dense_us < 0)
		search_progress_line(&b->pr, "search: measuring the %d best ranked", top);
	else if (s->gpu && s->emulate)
		search_progress_line(&b->pr, "search: the dense kernel %.1f us on the host emulator (not a GPU's time); "
		                             "measuring the %d best ranked", out->dense_us, top);
	else if (s->gpu)
		search_progress_line(&b->pr, "search: dense cuBLAS %.1f us on %s; measuring the %d best ranked",
		                     out->dense_us, s->sm, top);
	else
		search_progress_line(&b->pr,
		                     "search: dense OpenBLAS sgemm %.1f us (%d thread%s, %s%s); measuring the %d best ranked",
		                     out->dense_us, threads, threads == 1 ? "" : "s",
		                     out->blas_core[0] ? out->blas_core : "the log does not say which kernel set",
		                     out->blas_core[0] ? " kernels" : "", top);
	b->pr.total = top;
	for (int j = 0; j < top; j++) {
		if (s->shards > 1 && j % s->shards != s->shard)
			continue; /* another shard's */
		b->p.which = j;
		search_bench_one(b, ord[j].i, "");
	}
}

/* The reference points, every one so that they can be drawn (shard 0's
 * job); one whose nest a searched candidate of the backend's schedule has
 * shares its measurement. */
static void references_measure(Bench *b)
{
	const SearchSettings *s = b->s;
	SearchResult *out = b->r;
	b->pr.done = 0, b->pr.total = 0;
	for (int i = 0; i < out->n; i++)
		b->pr.total += out->c[i].ref[0] != 0;
	for (int i = 0; i < out->n && (s->shards < 2 || s->shard == 0); i++) {
		SearchCandidate *c = &out->c[i];
		if (!c->ref[0])
			continue;
		b->p.which = -1;
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
			search_record(c, &m);
			search_consider_fastest(b, i);
		} else
			search_bench_one(b, i, "reference ");
	}
	search_progress_line(&b->pr, "search: %d references measured", b->pr.done);
}

/* Step 5: the kernels measured on one synthetic X: the dense baseline,
 * the best ranked, the reference points, then the schedules of the best
 * and the fastest tuned; the best chosen and the Pareto front marked.
 * PATC_EXIT_OK, else with err. */
static int candidates_measure(const OpResult *op, const float *w, const float *imp, const SearchSettings *s,
                              int threads, const Order *ord, int nord, FILE *progress, SearchResult *out,
                              char err[256])
{
	const int64_t M = op->shape.M, K = op->shape.K, N = op->shape.N;
	float *x = util_alloc_measured((size_t)(K * N) * sizeof *x);
	if (!x) {
		snprintf(err, 256, "out of memory for the %lld x %lld input X its kernels are measured on", (long long)K,
		         (long long)N);
		return PATC_EXIT_ENV;
	}
	if (op->shape.layout == PAT_LAYOUT_KN)
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
	baseline_measure(&b, progress);
	ranked_measure(&b, ord, nord < s->topk ? nord : s->topk, threads);
	references_measure(&b);
	choose_best(out, s);
	if (search_tune_schedules(&b) < 0) {
		free(x);
		snprintf(err, 256, "out of memory listing schedules");
		return PATC_EXIT_ENV;
	}
	free(x);
	choose_best(out, s);
	mark_pareto(out);
	return PATC_EXIT_OK;
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
	Pool pool = {0};
	int nown = 0;
	int rc = candidates_list(op, s, progress, &pool, &nown, out, err);
	if (rc != PATC_EXIT_OK) {
		free(pool.c), free(pool.spec);
		return rc;
	}
	candidates_score(op, w, imp, s, progress, &pool, out);
	out->masks = nown;
	if (!candidates_reorder(op, s, &pool)) {
		free(pool.c), free(pool.spec);
		snprintf(err, 256, "out of memory listing schedules");
		return PATC_EXIT_ENV;
	}
	int threads = s->threads > 0 ? s->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (threads < 1)
		threads = 1;
	int nord = 0;
	Order *ord = candidates_rank(op, s, threads, &pool, out, &nord);
	if (!ord) {
		free(pool.c), free(pool.spec);
		snprintf(err, 256, "out of memory ranking candidates");
		return PATC_EXIT_ENV;
	}
	out->c = pool.c;
	out->n = pool.n;
	free(pool.spec);
	if (s->measure && nord) {
		rc = candidates_measure(op, w, imp, s, threads, ord, nord, progress, out, err);
		if (rc != PATC_EXIT_OK) {
			free(ord);
			search_result_free(out);
			return rc;
		}
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
