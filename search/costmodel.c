/* SPDX-License-Identifier: MIT */
/* costmodel.c - the analytic and the learned cost model; see costmodel.h. */
#define _POSIX_C_SOURCE 200809L
#include "costmodel.h"
#include "../backend_x86/x86.h"
#include "../lower/nest.h"
#include "../support/outfile.h"
#include "../support/util.h"
#include "search.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A message into err[256] (util_say). */
#define say(err, ...) util_say(err, 256, __VA_ARGS__)

/* ---- features ---- */

/* The innermost run along k (Nest.tail: loops after the last one with m,
 * up to and including a perforated one) and the rows sharing each of its X
 * vectors: the two things the x86 kernels' FMA rate depends on most. */
static void run_and_rows(const Nest *nest, int64_t *run_out, int64_t *rows_out)
{
	const Pir *ir = nest->ir;
	const int n = nest->nloops, i = nest->tail - 1;
	int64_t rows = 1;
	if (i >= 0 && !pir_loop_is_perforated(&ir->loops[i]) && ir->loops[i].ncomp == 1 && i + 1 < n &&
	    !pir_loop_is_perforated(&ir->loops[i + 1]))
		rows = ir->loops[i].len < 4 ? ir->loops[i].len : 4;
	if (nest->mloop == n - 1)
		rows = ir->loops[n - 1].len < 4 ? ir->loops[n - 1].len : 4; /* an m loop innermost */
	*run_out = nest_kept(nest, nest->tail, n), *rows_out = rows;
}

/* Rates measured on the x86 kernels (bench/RESULTS.md): 32 x 32 blocks
 * about 1.7 vector FMAs a cycle, element-wise about 0.7; X and C streamed
 * once at about 20 GB/s a core. */
double cost_analytic_us(const CostQuery *q)
{
	Nest nest;
	nest_of(q->ir, &nest);
	int64_t run, rows;
	run_and_rows(&nest, &run, &rows);
	const double vec_per_cycle = 0.5 + 0.3 * (double)rows, ghz = 3.2, lanes = 16;
	const double run_eff = (double)run / ((double)run + 1.0);
	const double fmas = q->nkept * (double)q->N;
	double t = fmas / (lanes * vec_per_cycle * run_eff * ghz * 1e3);
	const double bytes = 4.0 * ((double)q->ir->len[PIR_AXIS_K] + (double)q->ir->len[PIR_AXIS_M]) * (double)q->N;
	t += bytes / 20e3;
	return t / (q->threads > 0 ? q->threads : 1);
}

const char *const cost_feature_names[COST_NFEAT] = {
	"log2_M", "log2_K", "log2_N", "density", "log2_fmas", "log2_analytic_us", "layout_nk", "loops",
	"perforated_loops", "log2_k_run", "rows_sharing_x", "path", "log2_index_loads", "log2_kept_block",
	"log2_index_bytes", "log2_value_bytes", "padding", "innermost_perforated_depth", "vector_width",
	"col_tiles", "log2_chunk", "log2_x_reuse", "x_panel", "log2_chunk_columns", "x_rows_spread", "across",
	"stores_c",
	/* per loop, innermost first */
	"l0_log2_len", "l0_log2_nnz", "l0_axis", "l0_level", "l1_log2_len", "l1_log2_nnz", "l1_axis", "l1_level",
	"l2_log2_len", "l2_log2_nnz", "l2_axis", "l2_level", "l3_log2_len", "l3_log2_nnz", "l3_axis", "l3_level",
	"l4_log2_len", "l4_log2_nnz", "l4_axis", "l4_level", "l5_log2_len", "l5_log2_nnz", "l5_axis", "l5_level",
};

static double lg(double x) { return x > 0 ? log2(x) : -1; }

static int host_width_value = 16;
static void host_width_init(void)
{
	char err[X86_ERR_MAX];
	LLVMTargetMachineRef tm = x86_target_machine(NULL, NULL, false, err);
	if (tm) {
		host_width_value = x86_vector_width(tm);
		LLVMDisposeTargetMachine(tm);
	}
}

/* The host's floats per vector (16 where it cannot be told). */
static int host_width(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, host_width_init);
	return host_width_value;
}

void cost_features(const CostQuery *q, double f[COST_NFEAT])
{
	const Pir *ir = q->ir;
	const int n = ir->nloops;
	PirMetrics pm;
	pir_metrics(ir, &pm);
	Nest nest;
	nest_of(ir, &nest);
	int64_t run, rows;
	run_and_rows(&nest, &run, &rows);
	const int inner_perf = nest.last_perf, nperf = nest.nperf;
	double index_entries = 0, loads = 1, block = 1;
	for (int i = 0; i < n; i++) {
		index_entries += (double)pm.loop[i].index_len;
		if (i <= inner_perf)
			loads *= (double)pm.loop[i].extent; /* index reads: the nest down to the innermost perforation */
		else
			block *= (double)ir->loops[i].len;
	}
	const int host = q->vector_width > 0 ? q->vector_width : host_width();
	LowerKernel lk = {ir, {ir->len[PIR_AXIS_M], ir->len[PIR_AXIS_K], q->N, PAT_F32, q->layout, PAT_ACT_NONE, false}, "k", host, q->sched, false, 0};
	if (q->sched.vector_width > 0 && q->sched.vector_width < host)
		lk.vector_width = q->sched.vector_width;
	X86Traits tr;
	x86_kernel_traits(&lk, &tr);
	CostQuery one = *q;
	one.threads = 1;
	int k = 0;
	f[k++] = lg((double)ir->len[PIR_AXIS_M]);
	f[k++] = lg((double)ir->len[PIR_AXIS_K]);
	f[k++] = lg((double)q->N);
	f[k++] = pm.density;
	f[k++] = lg(q->nkept * (double)q->N);
	f[k++] = lg(cost_analytic_us(&one));
	f[k++] = q->layout == PAT_LAYOUT_NK;
	f[k++] = n;
	f[k++] = nperf;
	f[k++] = lg((double)run);
	f[k++] = (double)rows;
	f[k++] = tr.path;
	f[k++] = lg(loads);
	f[k++] = lg(block);
	f[k++] = lg(4 * index_entries + 1);
	f[k++] = lg(4 * q->nkept + 1);
	f[k++] = (double)(ir->ext[PIR_AXIS_M] * ir->ext[PIR_AXIS_K]) /
	         (double)(ir->len[PIR_AXIS_M] * ir->len[PIR_AXIS_K]);
	f[k++] = inner_perf < 0 ? -1 : n - 1 - inner_perf;
	f[k++] = q->sched.vector_width;
	f[k++] = q->sched.col_tiles;
	f[k++] = q->sched.chunk > 0 ? lg((double)q->sched.chunk) : (double)q->sched.chunk;
	f[k++] = lg(tr.x_reuse);
	f[k++] = tr.panel;
	f[k++] = lg((double)tr.chunk);
	f[k++] = tr.rows_spread;
	f[k++] = tr.across;
	f[k++] = tr.stores_c;
	for (int l = 0; l < COST_LOOPS; l++) {
		const int i = n - 1 - l;
		if (i < 0) {
			f[k++] = -1, f[k++] = -1, f[k++] = -1, f[k++] = -1;
			continue;
		}
		const PirLoop *lp = &ir->loops[i];
		f[k++] = lg((double)lp->len);
		f[k++] = lg((double)lp->nnz);
		f[k++] = lp->ncomp > 1 ? 2 : lp->comp[0].axis == PIR_AXIS_K;
		f[k++] = i;
	}
	if (k != COST_NFEAT)
		util_ice(__FILE__, __LINE__, "cost_features: %d features, not %d", k, (int)COST_NFEAT);
}

double cost_predict_us(const CostModel *m, const CostQuery *q)
{
	if (!m || !m->gbt)
		return cost_analytic_us(q);
	double f[COST_NFEAT];
	cost_features(q, f);
	const double per_fma = exp(gbt_predict(m->gbt, f)); /* us per kept FMA on one thread */
	return per_fma * q->nkept * (double)q->N / (q->threads > 0 ? q->threads : 1);
}

/* ---- model files ---- */

static const char MODEL_MAGIC[] = "patc-cost-model 1";

/* A header line's integer value: all of it. */
static bool header_int(const char *val, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(val, &end, 10);
	if (end == val || *end || errno || v < 0 || v > INT_MAX)
		return false;
	*out = (int)v;
	return true;
}

/* A header line's quality figure: a number in lo..1, or "none" (NAN: not
 * measured when the model was trained). */
static bool header_stat(const char *val, double lo, double *out)
{
	if (!strcmp(val, "none")) {
		*out = NAN;
		return true;
	}
	char *end;
	double v = strtod(val, &end);
	if (end == val || *end || !(v >= lo && v <= 1))
		return false;
	*out = v;
	return true;
}

/* Predictions, logs of microseconds a kept FMA, stay within
 * +-COST_LOG_MAX: exp() of them is finite and not 0. */
#define COST_LOG_MAX 300.0

/* A header line of a cost model: at most HEADER_MAX bytes, no NUL. */
enum { HEADER_MAX = 512 };

bool cost_model_load(const char *path, CostModel *m, char err[256])
{
	memset(m, 0, sizeof *m);
	char q[UTIL_QUOTE_BUF], qv[UTIL_QUOTE_BUF];
	util_quote(path, q);
	FILE *f = fopen(path, "r");
	if (!f) {
		say(err, "cannot read cost model '%s': %s", q, strerror(errno));
		return false;
	}
	char *line = NULL;
	size_t cap = 0;
	int nfeat = -1, lineno = 1;
	m->spearman = m->recall = m->recall_tied = NAN; /* (a header without them) */
	/* (a line read whole, up to HEADER_MAX bytes, and its NUL bytes seen:
	 * fgets would cut a long line into several and a NUL would end a value) */
	ssize_t len = util_getline_max(&line, &cap, f, HEADER_MAX);
	bool ok = len > 0 && strlen(line) == (size_t)len;
	if (ok)
		line[strcspn(line, "\r\n")] = 0;
	if (!ok && ferror(f)) /* (a directory) */
		say(err, "cannot read cost model '%s': %s", q, strerror(errno ? errno : EIO));
	else if (!ok || strcmp(line, MODEL_MAGIC)) {
		say(err, "'%s' is not a patc cost model (its first line is not '%s')", q, MODEL_MAGIC);
		ok = false;
	}
	/* key-value lines up to "trees" */
	bool trees = false;
	while (ok && !trees && (len = util_getline_max(&line, &cap, f, HEADER_MAX)) > 0) {
		lineno++;
		if (strlen(line) != (size_t)len) {
			say(err, "cost model '%s', line %d: a NUL byte", q, lineno);
			ok = false;
			break;
		}
		line[strcspn(line, "\r\n")] = 0;
		char key[32], val[160];
		if (!strcmp(line, "trees"))
			trees = true;
		else if (sscanf(line, "%31s %159[^\n]", key, val) != 2) {
			say(err, "cost model '%s', line %d: expected 'KEY VALUE'", q, lineno);
			ok = false;
		} else if (!strcmp(key, "target"))
			snprintf(m->target, sizeof m->target, "%.31s", val);
		else if (!strcmp(key, "device"))
			snprintf(m->device, sizeof m->device, "%.127s", val);
		else if ((!strcmp(key, "features") && !header_int(val, &nfeat)) ||
		         (!strcmp(key, "samples") && !header_int(val, &m->samples)) ||
		         (!strcmp(key, "groups") && !header_int(val, &m->groups))) {
			say(err, "cost model '%s', line %d: %s '%s' is not a count", q, lineno, key,
			         util_quote(val, qv));
			ok = false;
		} else if ((!strcmp(key, "spearman") && !header_stat(val, -1, &m->spearman)) ||
		           (!strcmp(key, "recall") && !header_stat(val, 0, &m->recall)) ||
		           (!strcmp(key, "recall_tied") && !header_stat(val, 0, &m->recall_tied))) {
			say(err, "cost model '%s', line %d: %s '%s' is neither 'none' nor a number in %d..1", q,
			         lineno, key, util_quote(val, qv), !strcmp(key, "spearman") ? -1 : 0);
			ok = false;
		}
		/* other keys (documentation) are skipped */
	}
	if (ok && len < 0 && errno == EFBIG) {
		say(err, "cost model '%s', line %d: longer than %d bytes", q, lineno + 1, HEADER_MAX);
		ok = false;
	} else if (ok && len < 0 && ferror(f)) {
		say(err, "cannot read cost model '%s': %s", q, strerror(errno ? errno : EIO));
		ok = false;
	} else if (ok && !trees) {
		say(err, "cost model '%s' ends before its 'trees' line (line %d)", q, lineno + 1);
		ok = false;
	} else if (ok && !m->target[0]) {
		say(err, "cost model '%s' names no target (a 'target' line before 'trees')", q);
		ok = false;
	} else if (ok && nfeat != COST_NFEAT) {
		say(err, "cost model '%s' has %d features where this patc computes %d: retrain it "
		                   "(patc train-cost-model)",
		         q, nfeat, COST_NFEAT);
		ok = false;
	}
	free(line);
	if (ok) {
		char gerr[GBT_ERR_MAX];
		double lo, hi;
		m->gbt = gbt_read(f, lineno + 1, gerr);
		if (!m->gbt) {
			say(err, "cost model '%s': %.120s", q, gerr);
			ok = false;
		} else if (gbt_nfeat(m->gbt) != COST_NFEAT) {
			say(err, "cost model '%s': its trees take %d features, not %d", q, gbt_nfeat(m->gbt),
			         COST_NFEAT);
			ok = false;
		} else if (gbt_range(m->gbt, &lo, &hi), lo < -COST_LOG_MAX || hi > COST_LOG_MAX) { /* (exp: inf, 0) */
			say(err, "cost model '%s': its predictions reach e^%.3g us a kept FMA (at most e^%g)", q,
			         fabs(lo) > fabs(hi) ? lo : hi, COST_LOG_MAX);
			ok = false;
		}
	}
	fclose(f);
	if (!ok)
		cost_model_free(m);
	return ok;
}

void cost_model_free(CostModel *m)
{
	gbt_free(m->gbt);
	memset(m, 0, sizeof *m);
}

/* ---- training ---- */

typedef struct Sample {
	double f[COST_NFEAT];
	double y;      /* log(us * threads / FMAs) */
	double us;     /* the fastest of its measurements */
	double m[2];   /* its first two (m[1] 0: measured once) */
	uint64_t kern; /* a hash of its PatternIR: one kernel (the backend's own schedule) */
	uint64_t line; /* a hash of its log line: a line read twice (a log given twice) is one measurement */
	int group;     /* one search: source, op, shape, N, layout, threads */
} Sample;

typedef struct Samples {
	Sample *s;
	int n, cap;
	char **groups;
	int ngroups, gcap;
	int *slot;   /* open addressing by the key's hash: group + 1, 0 empty */
	size_t nslot; /* a power of two, at least twice gcap */
	char device[128];
} Samples;

/* The group of key, a new one where none has it; -1 when out of memory.
 * (A hash table: a log of many searches is read in linear time.) */
static int group_of(Samples *S, const char *key)
{
	if (S->nslot) {
		for (size_t h = util_hash_text(key) & (S->nslot - 1);; h = (h + 1) & (S->nslot - 1)) {
			const int g = S->slot[h] - 1;
			if (g < 0)
				break;
			if (!strcmp(S->groups[g], key))
				return g;
		}
	}
	if (S->ngroups == S->gcap) {
		int cap = S->gcap ? 2 * S->gcap : 32;
		char **ng = realloc(S->groups, (size_t)cap * sizeof *ng);
		int *slot = calloc((size_t)cap * 2, sizeof *slot);
		if (!ng || !slot) {
			if (ng)
				S->groups = ng;
			free(slot);
			return -1;
		}
		S->groups = ng, S->gcap = cap;
		free(S->slot);
		S->slot = slot, S->nslot = (size_t)cap * 2;
		for (int g = 0; g < S->ngroups; g++) {
			size_t h = util_hash_text(S->groups[g]) & (S->nslot - 1);
			while (S->slot[h])
				h = (h + 1) & (S->nslot - 1);
			S->slot[h] = g + 1;
		}
	}
	S->groups[S->ngroups] = strdup(key);
	if (!S->groups[S->ngroups])
		return -1;
	size_t h = util_hash_text(key) & (S->nslot - 1);
	while (S->slot[h])
		h = (h + 1) & (S->nslot - 1);
	S->slot[h] = S->ngroups + 1;
	return S->ngroups++;
}

/* The samples of each group, in their order: those of group g are
 * idx[start[g]] .. idx[start[g + 1] - 1] (start: ngroups + 1 entries, then
 * idx: n).  NULL when out of memory.  (One pass, where a scan of every
 * sample per group is quadratic in a log of many searches.) */
static int *group_members(const Samples *S)
{
	int *start = calloc((size_t)S->ngroups + 1 + (size_t)S->n, sizeof *start);
	if (!start)
		return NULL;
	int *idx = start + S->ngroups + 1;
	for (int i = 0; i < S->n; i++)
		start[S->s[i].group + 1]++;
	for (int g = 0; g < S->ngroups; g++)
		start[g + 1] += start[g];
	int *at = malloc((size_t)(S->ngroups ? S->ngroups : 1) * sizeof *at);
	if (!at) {
		free(start);
		return NULL;
	}
	memcpy(at, start, (size_t)S->ngroups * sizeof *at);
	for (int i = 0; i < S->n; i++)
		idx[at[S->s[i].group]++] = i;
	free(at);
	return start;
}

/* The measurements of one log for target; lines of other targets, failed
 * measurements and tuned schedules are skipped.  Early-stopped ones count:
 * their latency is the fastest of 3 runs instead of ~50 ms of them. */
static bool read_log(const char *path, const char *target, Samples *S, int *skipped, char err[256])
{
	char qp[UTIL_QUOTE_BUF];
	util_quote(path, qp);
	FILE *f = fopen(path, "r");
	if (!f) {
		say(err, "cannot read '%s': %s", qp, strerror(errno));
		return false;
	}
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0;
	bool ok = true;
	ssize_t len = 0;
	while (ok && (len = util_getline_max(&line, &cap, f, SEARCH_LOG_LINE_MAX)) > 0) {
		lineno++;
		cJSON *j = search_log_parse(line, (size_t)len);
		if (!j) { /* a line cut short by a killed search */
			(*skipped)++;
			continue;
		}
		SearchLogEntry e;
		const bool usable = search_log_entry(j, &e) && e.target && !strcmp(e.target, target) &&
		                    e.latency_us > 0 && isfinite(e.latency_us) && e.N >= 1 && e.N <= 1e7 &&
		                    e.threads >= 1 && e.threads <= 4096 && e.density > 0 && e.density <= 1 &&
		                    kernel_schedule_is_default(&e.sched);
		if (!usable) {
			(*skipped)++;
			cJSON_Delete(j);
			continue;
		}
		Pir ir;
		char perr[256];
		const double nkept = pir_read_text(e.pir, &ir, 1, perr, sizeof perr) == 1
		                             ? e.density * (double)(ir.len[PIR_AXIS_M] * ir.len[PIR_AXIS_K])
		                             : 0;
		/* the target, log(time per kept FMA), within what the trees take */
		const double y = nkept >= 1 ? log(e.latency_us * e.threads / (nkept * e.N)) : NAN;
		if (!(fabs(y) <= GBT_MAX_ABS_Y)) { /* no kept weight (a density of 5e-324): no sample */
			(*skipped)++;
			cJSON_Delete(j);
			continue;
		}
		char key[512];
		snprintf(key, sizeof key, "%.200s|%.60s|%lldx%lldx%.0f|%.4s|%.0f",
		         e.source ? e.source : "", e.op ? e.op : "", (long long)ir.len[PIR_AXIS_M],
		         (long long)ir.len[PIR_AXIS_K], e.N, e.layout ? e.layout : "kn", e.threads);
		if (!S->device[0] && e.device) {
			/* (a line of the model's header: a control character, a
			 * newline above all, would begin another) */
			snprintf(S->device, sizeof S->device, "%s", e.device);
			for (char *d = S->device; *d; d++)
				if ((unsigned char)*d < 0x20 || *d == 0x7f)
					*d = '?';
		}
		if (S->n == S->cap) {
			int ncap = S->cap ? 2 * S->cap : 256;
			Sample *ns = realloc(S->s, (size_t)ncap * sizeof *ns);
			if (!ns) {
				cJSON_Delete(j);
				say(err, "out of memory reading '%s'", qp);
				ok = false;
				break;
			}
			S->s = ns, S->cap = ncap;
		}
		Sample *s = &S->s[S->n];
		CostQuery q = {&ir, (int64_t)e.N, e.layout && !strcmp(e.layout, "nk") ? PAT_LAYOUT_NK : PAT_LAYOUT_KN,
		               (int)e.threads, nkept, e.sched, 0};
		cost_features(&q, s->f);
		s->us = s->m[0] = e.latency_us;
		s->m[1] = 0;
		s->kern = util_hash_text(e.pir);
		line[strcspn(line, "\r\n")] = 0;
		s->line = util_hash_text(line);
		s->y = y;
		s->group = group_of(S, key);
		cJSON_Delete(j);
		if (s->group < 0) {
			say(err, "out of memory reading '%s'", qp);
			ok = false;
			break;
		}
		S->n++;
	}
	if (ok && len < 0 && errno == EFBIG) {
		say(err, "'%s' is not a tuning log: line %d is longer than %zu MiB", qp, lineno + 1,
		         SEARCH_LOG_LINE_MAX >> 20);
		ok = false;
	} else if (ok && ferror(f)) { /* a directory, or a read error */
		say(err, "cannot read '%s': %s", qp, strerror(errno));
		ok = false;
	}
	free(line);
	fclose(f);
	return ok;
}

/* Ranks of v[0..n-1] (1-based, ties averaged). */
static void ranks(const double *v, int n, double *rank)
{
	for (int i = 0; i < n; i++) {
		int below = 0, equal = 0;
		for (int j = 0; j < n; j++)
			below += v[j] < v[i], equal += v[j] == v[i];
		rank[i] = below + (equal + 1) / 2.0;
	}
}

double cost_spearman(const double *a, const double *b, int n)
{
	if (n < 3)
		return 2;
	double *ra = malloc((size_t)n * 2 * sizeof *ra);
	if (!ra)
		return 2;
	double *rb = ra + n;
	ranks(a, n, ra);
	ranks(b, n, rb);
	const double ma = (n + 1) / 2.0, mb = ma; /* (exactly: the ranks, ties averaged, sum to n(n + 1)/2) */
	double sxy = 0, sxx = 0, syy = 0;
	for (int i = 0; i < n; i++)
		sxy += (ra[i] - ma) * (rb[i] - mb), sxx += (ra[i] - ma) * (ra[i] - ma), syy += (rb[i] - mb) * (rb[i] - mb);
	free(ra);
	return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 2; /* (constant: no ranking to compare) */
}

/* Of the `top` best predicted (n >= top), the share among the `top`
 * fastest measured; with tie > 0, also those measured within tie of the
 * top-th fastest. */
static double recall_at(const double *pred, const double *meas, int n, int top, double tie)
{
	UtilKeyed *a = malloc((size_t)n * 2 * sizeof *a);
	if (!a)
		return 0;
	UtilKeyed *b = a + n;
	for (int i = 0; i < n; i++)
		a[i] = (UtilKeyed){pred[i], i}, b[i] = (UtilKeyed){meas[i], i};
	qsort(a, (size_t)n, sizeof *a, util_keyed_cmp);
	qsort(b, (size_t)n, sizeof *b, util_keyed_cmp);
	const double limit = b[top - 1].v * (1 + tie);
	int hit = 0;
	for (int i = 0; i < top; i++)
		hit += meas[a[i].i] <= limit;
	free(a);
	return (double)hit / top;
}

typedef struct ByKernel {
	int group;
	uint64_t kern, line;
	int i;
} ByKernel;

static int cmp_line(const void *a, const void *b)
{
	const ByKernel *x = a, *y = b;
	if (x->group != y->group)
		return x->group - y->group;
	if (x->kern != y->kern)
		return x->kern < y->kern ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->i - y->i;
}

static int cmp_kernel(const void *a, const void *b)
{
	const ByKernel *x = a, *y = b;
	if (x->group != y->group)
		return x->group - y->group;
	if (x->kern != y->kern)
		return x->kern < y->kern ? -1 : 1;
	return x->i - y->i;
}

/* One sample per kernel of a search: where the logs measured it more than
 * once (the search run again), the fastest measurement, with the first two
 * kept to tell how well the measurements agree with themselves.  false when
 * out of memory. */
static bool merge_repeats(Samples *S, int *dups)
{
	*dups = 0;
	ByKernel *k = malloc((size_t)(S->n ? S->n : 1) * sizeof *k);
	Sample *ns = malloc((size_t)(S->n ? S->n : 1) * sizeof *ns);
	if (!k || !ns) {
		free(k);
		free(ns);
		return false;
	}
	/* the same line again (a log given twice): no second measurement; found
	 * by sorting on the line's hash too, not by looking back over the
	 * kernel's samples (quadratic in a log of one kernel measured often) */
	bool *again = calloc((size_t)(S->n ? S->n : 1), sizeof *again);
	if (!again) {
		free(k);
		free(ns);
		return false;
	}
	for (int i = 0; i < S->n; i++)
		k[i] = (ByKernel){S->s[i].group, S->s[i].kern, S->s[i].line, i};
	qsort(k, (size_t)S->n, sizeof *k, cmp_line);
	for (int i = 1; i < S->n; i++)
		again[k[i].i] = k[i].group == k[i - 1].group && k[i].kern == k[i - 1].kern && k[i].line == k[i - 1].line;
	qsort(k, (size_t)S->n, sizeof *k, cmp_kernel);
	int n = 0;
	for (int i = 0; i < S->n; i++) {
		const Sample *s = &S->s[k[i].i];
		if (i > 0 && k[i].group == k[i - 1].group && k[i].kern == k[i - 1].kern) {
			Sample *o = &ns[n - 1];
			if (again[k[i].i]) {
				(*dups)++;
				continue;
			}
			if (!o->m[1])
				o->m[1] = s->us;
			if (s->us < o->us) {
				o->y += log(s->us / o->us);
				o->us = s->us;
			}
		} else
			ns[n++] = *s;
	}
	free(again);
	free(k);
	free(S->s);
	S->s = ns, S->n = n, S->cap = n;
	return true;
}

/* How well repeated measurements agree with themselves: per search with at
 * least 20 kernels measured twice, Spearman and top-10 recall of the first
 * measurements against the second (and the other way round), averaged over
 * those searches into out[0..2] (Spearman, recall, recall with ties).
 * Returns the number of searches.  A model checked against measurements
 * can hardly agree with them better than they agree with themselves. */
static int repeat_agreement(const Samples *S, double out[3])
{
	int searches = 0;
	out[0] = out[1] = out[2] = 0;
	double *a = malloc((size_t)(S->n ? S->n : 1) * 2 * sizeof *a);
	if (!a)
		return 0;
	double *b = a + S->n;
	int *start = group_members(S);
	if (!start) {
		free(a);
		return 0;
	}
	const int *idx = start + S->ngroups + 1;
	for (int g = 0; g < S->ngroups; g++) {
		int n = 0;
		for (int j = start[g]; j < start[g + 1]; j++) {
			const int i = idx[j];
			if (S->s[i].m[1] > 0)
				a[n] = S->s[i].m[0], b[n++] = S->s[i].m[1];
		}
		if (n < 20)
			continue;
		const double rho = cost_spearman(a, b, n);
		if (rho > 1)
			continue; /* (every latency the same) */
		searches++;
		out[0] += rho;
		out[1] += (recall_at(a, b, n, 10, 0) + recall_at(b, a, n, 10, 0)) / 2;
		out[2] += (recall_at(a, b, n, 10, COST_RECALL_TIE) + recall_at(b, a, n, 10, COST_RECALL_TIE)) / 2;
	}
	free(start);
	free(a);
	for (int j = 0; searches && j < 3; j++)
		out[j] /= searches;
	return searches;
}

static Gbt *fit(const Samples *S, const bool *use, const GbtParams *gp, char err[256])
{
	int n = 0;
	for (int i = 0; i < S->n; i++)
		n += use[i];
	double *X = malloc((size_t)n * COST_NFEAT * sizeof *X), *y = malloc((size_t)n * sizeof *y);
	Gbt *g = NULL;
	if (X && y) {
		int k = 0;
		for (int i = 0; i < S->n; i++)
			if (use[i]) {
				memcpy(X + (size_t)k * COST_NFEAT, S->s[i].f, sizeof S->s[i].f);
				y[k++] = S->s[i].y;
			}
		g = gbt_train(X, y, n, COST_NFEAT, gp, err);
	} else
		say(err, "out of memory training the cost model");
	free(X);
	free(y);
	return g;
}

int cost_train(const CostTrainOptions *o, FILE *report, char err[256])
{
	bool unwritable = false;
	Samples S = {0};
	int skipped = 0;
	bool ok = true;
	for (int i = 0; ok && i < o->nlogs; i++)
		ok = read_log(o->logs[i], o->target, &S, &skipped, err);
	int measurements = S.n, dups = 0;
	if (ok && !merge_repeats(&S, &dups)) {
		say(err, "out of memory reading the logs");
		ok = false;
	}
	measurements -= dups;
	const int folds = o->folds > 1 ? o->folds : 5;
	if (ok && (S.n < 20 || S.ngroups < folds)) {
		say(err, "%d measurements of %d searches for target %s: at least 20 of %d searches are needed "
		                   "(a search's log holds its measurements: --topk, --explore)",
		         S.n, S.ngroups, o->target, folds);
		ok = false;
	}
	GbtParams gp = gbt_defaults;
	/* chosen by the cross-validation below on 2446 kernels of 36 searches
	 * (held-out Spearman 0.914 with 400 trees of depth 5, 0.917 with these) */
	gp.trees = 1000, gp.max_depth = 4, gp.learning_rate = 0.03, gp.min_leaf = 4, gp.subsample = 0.5;
	gp.seed = o->seed;
	bool *use = ok ? malloc((size_t)S.n * sizeof *use) : NULL;
	double *pred = ok ? malloc((size_t)S.n * sizeof *pred) : NULL;
	int *fold = ok ? malloc((size_t)S.ngroups * sizeof *fold) : NULL;
	if (ok && (!use || !pred || !fold)) {
		say(err, "out of memory training the cost model");
		ok = false;
	}
	/* k-fold cross-validation over whole searches: every prediction is made
	 * by a model that saw nothing of its search */
	for (int g = 0; ok && g < S.ngroups; g++) {
		uint64_t h = o->seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(g + 1);
		h ^= h >> 31, h *= 0xbf58476d1ce4e5b9ULL, h ^= h >> 29;
		fold[g] = g % folds;
		int swap = (int)(h % (uint64_t)(g + 1)); /* a seeded shuffle of the fold labels */
		int t = fold[g];
		fold[g] = fold[swap], fold[swap] = t;
	}
	for (int k = 0; ok && k < folds; k++) {
		int ntrain = 0;
		for (int i = 0; i < S.n; i++)
			ntrain += use[i] = fold[S.s[i].group] != k;
		if (ntrain < 20) { /* (one search holds nearly all the kernels) */
			say(err, "the cross-validation's fold %d of %d learns from %d kernel%s, the other searches': "
			                   "at least 20 are needed (logs of more searches, or fewer --folds)",
			         k + 1, folds, ntrain, ntrain == 1 ? "" : "s");
			ok = false;
			break;
		}
		Gbt *g = fit(&S, use, &gp, err);
		if (!g) {
			ok = false;
			break;
		}
		for (int i = 0; i < S.n; i++)
			if (!use[i])
				pred[i] = gbt_predict(g, S.s[i].f) + S.s[i].f[4] * log(2.0); /* log(latency * threads) */
		gbt_free(g);
	}
	double rho_sum = 0, rec_sum = 0, tied_sum = 0, ana_sum = 0;
	int rho_n = 0, rec_n = 0;
	if (ok) {
		double *a = malloc((size_t)S.n * 3 * sizeof *a);
		int *start = group_members(&S);
		if (!a || !start) {
			say(err, "out of memory evaluating the cost model");
			ok = false;
		}
		const int *idx = start ? start + S.ngroups + 1 : NULL;
		for (int g = 0; ok && g < S.ngroups; g++) {
			double *p = a, *m = a + S.n, *an = a + 2 * S.n;
			int n = 0;
			for (int j = start[g]; j < start[g + 1]; j++) {
				const int i = idx[j];
				p[n] = pred[i], m[n] = S.s[i].us, an[n++] = S.s[i].f[5];
			}
			if (n < 10)
				continue;
			char qg[UTIL_QUOTE_BUF]; /* (the name escaped: it holds the log's source and op) */
			util_quote(S.groups[g], qg);
			const double rho = cost_spearman(p, m, n), ana_rho = cost_spearman(an, m, n);
			const double ana = ana_rho <= 1 ? ana_rho : 0; /* (a constant analytic prediction ranks nothing) */
			if (rho > 1) { /* (every latency, or every prediction, the same: no ranking) */
				if (report)
					fprintf(report, "  %-60.60s %4d measured: no ranking (every latency or prediction the same)\n",
					        qg, n);
				continue;
			}
			rho_sum += rho, ana_sum += ana, rho_n++;
			double rec = -1, tied = -1;
			if (n >= 20) {
				rec = recall_at(p, m, n, 10, 0), tied = recall_at(p, m, n, 10, COST_RECALL_TIE);
				rec_sum += rec, tied_sum += tied, rec_n++;
			}
			if (report && rec >= 0)
				fprintf(report, "  %-60.60s %4d measured: Spearman %.3f (analytic %.3f), top-10 recall %.2f (%.2f)\n",
				        qg, n, rho, ana, rec, tied);
			else if (report)
				fprintf(report, "  %-60.60s %4d measured: Spearman %.3f (analytic %.3f)\n", qg, n, rho, ana);
		}
		free(start);
		free(a);
	}
	CostModel m = {0};
	if (ok) {
		for (int i = 0; i < S.n; i++)
			use[i] = true;
		m.gbt = fit(&S, use, &gp, err);
		ok = m.gbt != NULL;
	}
	if (ok) {
		m.spearman = rho_n ? rho_sum / rho_n : NAN;
		m.recall = rec_n ? rec_sum / rec_n : NAN;
		m.recall_tied = rec_n ? tied_sum / rec_n : NAN;
		double self[3];
		const int again = repeat_agreement(&S, self);
		if (report) {
			fprintf(report,
			        "cost model: %d measurements of %d kernels in %d searches (%d log lines skipped), %d-fold "
			        "cross-validation over searches:\n",
			        measurements, S.n, S.ngroups, skipped, folds);
			if (rho_n)
				fprintf(report, "  held-out Spearman %.3f per search (the analytic model: %.3f)", m.spearman,
				        ana_sum / rho_n);
			else
				fprintf(report, "  held-out Spearman: none (no search with 10 kernels ranked)");
			if (rec_n)
				fprintf(report, ", top-10 recall %.3f (%.3f counting kernels within %g%% of the 10th fastest as "
				        "tied)\n", m.recall, m.recall_tied, 100 * COST_RECALL_TIE);
			else
				fprintf(report, ", top-10 recall: none (no search with 20 kernels)\n");
			if (again)
				fprintf(report,
				        "  the measurements themselves, %d search%s measured twice: Spearman %.3f, top-10 recall %.3f "
				        "(%.3f) of one measurement against the other\n",
				        again, again == 1 ? "" : "es", self[0], self[1], self[2]);
		}
		/* the text in memory, then the file written whole (outfile_write) */
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		if (!f)
			util_oom_for("the cost model's text");
		char st[3][32];
		const double stat[3] = {m.spearman, m.recall, m.recall_tied};
		for (int i = 0; i < 3; i++)
			if (isnan(stat[i]))
				snprintf(st[i], sizeof st[i], "none");
			else
				snprintf(st[i], sizeof st[i], "%.4f", stat[i]);
		bool wrote = fprintf(f,
		                     "%s\ntarget %s\ndevice %s\nfeatures %d\nsamples %d\ngroups %d\nspearman %s\nrecall "
		                     "%s\nrecall_tied %s\npredicts log(us * threads / kept FMAs)\ntrees\n",
		                     MODEL_MAGIC, o->target, S.device[0] ? S.device : "unknown", COST_NFEAT, S.n,
		                     S.ngroups, st[0], st[1], st[2]) > 0;
		wrote = gbt_write(m.gbt, f) && wrote;
		if (fclose(f) != 0 || !wrote) /* (a memory stream fails for want of memory alone) */
			util_oom_for("the cost model's text");
		if (!outfile_write(o->out, text, len)) {
			const int e = errno;
			char qo[UTIL_QUOTE_BUF];
			say(err, "cannot write '%s': %s", util_quote(o->out, qo), strerror(e));
			ok = false, unwritable = true;
		}
		free(text);
	}
	cost_model_free(&m);
	free(use);
	free(pred);
	free(fold);
	for (int i = 0; i < S.ngroups; i++)
		free(S.groups[i]);
	free(S.groups);
	free(S.slot);
	free(S.s);
	return ok ? PATC_EXIT_OK : unwritable ? PATC_EXIT_ENV : PATC_EXIT_INPUT;
}
