/* SPDX-License-Identifier: MIT */
/* fuzz_log.c - libFuzzer target over the readers of the tuning log
 * (tune.jsonl), whose lines may be cut short, corrupted or edited by hand.
 *
 * The input is the text of a log, one or more lines.  Every reader of it
 * runs on it, as a library function (nothing forks, nothing is measured):
 *   search_log_entry  each line as the readers split it (at '\n', as far as
 *                     a NUL) and cJSON parses it.  What it accepts is a
 *                     measurement: one PatternIR that reads; every field
 *                     there of the type patc writes (a relative error of 0
 *                     only where the line has none, not for a string or
 *                     null); a failure (latency -1), or a latency from
 *                     SEARCH_MIN_US to SEARCH_MAX_US with a relative error
 *                     in [0, SEARCH_MAX_REL_ERR); a dense time of -1 or
 *                     one from SEARCH_MIN_US to SEARCH_MAX_US; a schedule
 *                     in the ranges of lower.h and ptx.h.
 *   search_log_load   (--resume), with the first line's fields as the
 *                     search's (so that lines like it are taken over):
 *                     it takes exactly the measurements of this search
 *                     (patc, target, device, shape, layout, dtype,
 *                     threads), in order, as search_log_entry reads them.
 *   search_merge      (patc merge) into a file: exit 1 only where no line
 *                     is a measurement; otherwise each kernel (PatternIR,
 *                     schedule, target, device, shape, layout, dtype,
 *                     threads, patc) once, its newest line in its first's
 *                     place, none lost; merged again, the same bytes.
 *   cost_train        (patc train-cost-model), reading only: asked for
 *                     more folds than a log can have searches, it never
 *                     trains.  Beside it the same reading is done here
 *                     (costmodel.c read_log is static): every sample it
 *                     takes has a PatternIR that reads, finite features
 *                     and, where it keeps a weight, a target of magnitude
 *                     <= GBT_MAX_ABS_Y (what gbt_train accepts), and both
 *                     count the same kernels and searches.
 * Any violated property aborts (its message on stderr first), which
 * libFuzzer reports as a crash.  The log is written once an input to a
 * directory in /dev/shm (no fsync cost for merge's atomic writes), removed
 * after it.  merge's own messages (stdout, stderr) are sent to /dev/null
 * while it runs; the sanitizers report to a copy of stderr made at the
 * start.
 */
#define _POSIX_C_SOURCE 200809L
#include "backend_ptx/ptx.h"
#include "driver/search_cli.h"
#include "search/costmodel.h"
#include "search/search.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sanitizer/common_interface_defs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], log_path[96], merged_path[96], merged2_path[96], model_path[96];
static int devnull = -1;

/* A violated property: its message, then abort (a crash to libFuzzer). */
static _Noreturn void fail(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_log.c:%d: ", line);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}
#define need(cond, ...) ((cond) ? (void)0 : fail(__LINE__, __VA_ARGS__))

/* The directory of this input's files, made afresh and removed after it. */
static void make_dir(void)
{
	snprintf(dir, sizeof dir, "%s/fuzz_log.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz_log: mkdtemp");
		abort();
	}
	snprintf(log_path, sizeof log_path, "%s/tune.jsonl", dir);
	snprintf(merged_path, sizeof merged_path, "%s/merged.jsonl", dir);
	snprintf(merged2_path, sizeof merged2_path, "%s/merged2.jsonl", dir);
	snprintf(model_path, sizeof model_path, "%s/cost.model", dir);
}

static void remove_dir(void)
{
	unlink(log_path);
	unlink(merged_path);
	unlink(merged2_path);
	unlink(model_path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	devnull = open("/dev/null", O_WRONLY);
	const int report = dup(2);
	if (devnull < 0 || report < 0)
		abort();
	__sanitizer_set_report_fd((void *)(intptr_t)report);
	return 0;
}

/* ---- the input's lines, as getline and cJSON see them ---- */

typedef struct Line {
	char *text;     /* up to the '\n' (not included) or a NUL */
	bool blank;     /* only spaces, tabs and CRs (merge skips it) */
	cJSON *json;    /* NULL: not JSON */
	bool accepted;  /* search_log_entry */
	SearchLogEntry e;
	const char *time; /* merge's: "" where absent */
	int first;      /* merge: the first accepted line with its identity */
} Line;

static const char *or_empty(const char *s) { return s ? s : ""; }

static bool same_number(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* What makes two lines one kernel for merge (search_cli.h: the PatternIR
 * and schedule on the same target, device, shape, layout, dtype, threads
 * and patc version). */
static bool same_kernel(const SearchLogEntry *a, const SearchLogEntry *b)
{
	return !strcmp(a->pir, b->pir) && kernel_schedule_equal(&a->sched, &b->sched) &&
	       !strcmp(or_empty(a->target), or_empty(b->target)) &&
	       !strcmp(or_empty(a->device), or_empty(b->device)) && same_number(a->M, b->M) &&
	       same_number(a->K, b->K) && same_number(a->N, b->N) && same_number(a->threads, b->threads) &&
	       !strcmp(a->layout ? a->layout : "kn", b->layout ? b->layout : "kn") &&
	       !strcmp(or_empty(a->dtype), or_empty(b->dtype)) && !strcmp(or_empty(a->version), or_empty(b->version));
}

static void check_schedule(const KernelSchedule *s)
{
	need(s->vector_width >= 0 && s->vector_width <= 64 && s->col_tiles >= 0 && s->col_tiles <= 64,
	     "schedule: vector width %d, col tiles %d", s->vector_width, s->col_tiles);
	need(s->chunk >= -1 && s->chunk <= 1000000000, "schedule: chunk %lld", (long long)s->chunk);
	need(s->stage >= -1 && s->stage <= 1 && s->threads >= 0 && s->threads <= 4096, "schedule: stage %d, threads %d",
	     s->stage, s->threads);
	need((s->wg == 0 || s->wg == 1) && (s->wsum == 0 || s->wsum == 1), "schedule: wg %d, wsum %d", s->wg, s->wsum);
	need(s->tcs == 0 || (s->tcs >= 2 && s->tcs <= PTX_TC_MAX_STAGES), "schedule: tcs %d", s->tcs);
	need(s->tcw == 0 || (s->tcw >= 1 && s->tcw <= PTX_TC_MAX_WARPS), "schedule: tcw %d", s->tcw);
	if (!s->bx && !s->by && !s->v && !s->r && !s->ksplit)
		return;
	need(s->bx >= 1 && s->bx <= 1024 && ptx_bx_legal(s->bx) && s->by >= 1 && s->by <= 1024 && s->v >= 1 &&
	             s->v <= 64 && s->r >= 1 && s->r <= 1024 && s->ksplit >= 1 && s->ksplit <= 4096 &&
	             (int64_t)s->bx * s->by <= 1024,
	     "GPU schedule %d %d %d %d %d", s->bx, s->by, s->v, s->r, s->ksplit);
}

/* An accepted line is a measurement (search.h, SearchLogEntry). */
static void check_entry(const cJSON *line, const SearchLogEntry *e)
{
	/* every field there of its type (a relative error is 0 where absent, and only there) */
	static const char *const strings[] = {"pir", "target", "device", "source", "op", "patc", "layout", "dtype",
	                                      "failed", "blas_core"};
	static const char *const numbers[] = {"M",          "K",          "N",       "threads",       "density",
	                                      "latency_us", "dense_us", "relative_error"};
	for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, strings[i]);
		need(!v || cJSON_IsString(v), "a measurement whose %s is no string", strings[i]);
	}
	for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, numbers[i]);
		need(!v || cJSON_IsNumber(v), "a measurement whose %s is no number", numbers[i]);
	}
	const cJSON *early = cJSON_GetObjectItemCaseSensitive(line, "early");
	need(!early || cJSON_IsBool(early), "a measurement whose early is no true or false");
	need(e->pir, "accepted without a PatternIR");
	Pir ir[2];
	char perr[256];
	need(pir_read_text(e->pir, ir, 2, perr, sizeof perr) == 1, "accepted a PatternIR that does not read: %s", perr);
	const char *strs[] = {e->pir,    e->target,  e->device, e->source, e->op,
	                      e->layout, e->version, e->dtype,  e->failed, e->blas_core};
	size_t total = 0;
	for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
		total += strs[i] ? strlen(strs[i]) : 0; /* readable (ASan) */
	(void)total;
	if (e->failed)
		need(e->latency_us == -1, "a failure with latency %g", e->latency_us);
	else
		need(e->latency_us >= SEARCH_MIN_US && e->latency_us <= SEARCH_MAX_US && e->rel_err >= 0 &&
		             e->rel_err < SEARCH_MAX_REL_ERR,
		     "a measurement of %g us, relative error %g", e->latency_us, e->rel_err);
	need(e->dense_us == -1 || (e->dense_us >= SEARCH_MIN_US && e->dense_us <= SEARCH_MAX_US), "dense %g us",
	     e->dense_us);
	check_schedule(&e->sched);
}

static int split_lines(char *buf, size_t size, Line **out)
{
	int n = 0, cap = 0;
	Line *l = NULL;
	for (size_t start = 0; start < size;) {
		const char *nl = memchr(buf + start, '\n', size - start);
		const size_t end = nl ? (size_t)(nl - buf) : size;
		buf[end] = 0; /* (buf has a byte past size) */
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			l = realloc(l, (size_t)cap * sizeof *l);
			if (!l)
				abort();
		}
		Line *x = &l[n++];
		memset(x, 0, sizeof *x);
		x->text = buf + start; /* a C string: as far as the first NUL */
		/* a line holding a NUL is neither blank nor JSON (search_log_parse) */
		const bool nul = strlen(x->text) != end - start;
		x->blank = !nul && !x->text[strspn(x->text, " \t\r")];
		x->json = search_log_parse(x->text, end - start);
		x->accepted = x->json && search_log_entry(x->json, &x->e);
		if (x->accepted) {
			check_entry(x->json, &x->e);
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(x->json, "time");
			x->time = cJSON_IsString(t) ? t->valuestring : "";
		}
		start = end + 1;
	}
	*out = l;
	return n;
}

/* ---- search_log_load (--resume) ---- */

static int64_t to_i64(double v) { return isfinite(v) && fabs(v) < 9e18 ? (int64_t)v : 0; }

static const char *str_of(const cJSON *j, const char *key, const char *absent)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, key));
	return s ? s : absent;
}

static double num_of(const cJSON *j, const char *key, double absent)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	return cJSON_IsNumber(v) ? v->valuedouble : absent;
}

/* The search's info: the first JSON line's fields (defaults where absent). */
static void info_of(const Line *l, int n, SearchLogInfo *info)
{
	const cJSON *j = NULL;
	for (int i = 0; i < n && !j; i++)
		if (cJSON_IsObject(l[i].json))
			j = l[i].json;
	const double threads = num_of(j, "threads", 1);
	*info = (SearchLogInfo){str_of(j, "patc", "0.1.0"), str_of(j, "target", "x86-64"),
	                        str_of(j, "device", "AMD EPYC"), str_of(j, "source", "fuzz.pat"), str_of(j, "op", "w"),
	                        to_i64(num_of(j, "M", 64)), to_i64(num_of(j, "K", 64)), to_i64(num_of(j, "N", 32)),
	                        str_of(j, "layout", NULL), str_of(j, "dtype", NULL),
	                        isfinite(threads) && fabs(threads) < 1e9 ? (int)threads : 0, 0};
}

/* Whether s is well-formed UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF). */
static bool valid_utf8(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		const int n = *p < 0x80 ? 1 : *p >= 0xc2 && *p < 0xe0 ? 2 : (*p & 0xf0) == 0xe0 ? 3
		              : *p >= 0xf0 && *p <= 0xf4                ? 4
		                                                        : 0;
		if (!n)
			return false;
		for (int i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		if ((n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))) ||
		    (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))))
			return false;
		p += n;
	}
	return true;
}

/* Whether the search with info takes line e over (tunelog.c, search_log_load). */
static bool mine(const SearchLogEntry *e, const SearchLogInfo *info)
{
	return e->target && e->device && e->version && !strcmp(e->version, info->version) &&
	       !strcmp(e->target, info->target) && !strcmp(e->device, info->device) && e->M == (double)info->M &&
	       e->K == (double)info->K && e->N == (double)info->N &&
	       !strcmp(e->layout ? e->layout : "kn", info->layout ? info->layout : "kn") && e->dtype &&
	       !strcmp(e->dtype, info->dtype ? info->dtype : "f32") && e->threads == (double)info->threads;
}

static void check_load(const Line *l, int n)
{
	SearchLogInfo info;
	info_of(l, n, &info);
	SearchLogged *got = NULL;
	int ngot = -1;
	char err[256] = "";
	need(search_log_load(log_path, &info, &got, &ngot, err), "search_log_load: %s", err);
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!l[i].accepted || !mine(&l[i].e, &info))
			continue;
		need(k < ngot, "search_log_load took %d lines, line %d is the search's too", ngot, i + 1);
		const SearchLogged *g = &got[k++];
		const SearchLogEntry *e = &l[i].e;
		/* the failure's text (an early stop's reason) as valid UTF-8 in at
		 * most 119 bytes: the same where it is printable ASCII that fits,
		 * else valid UTF-8 */
		const char *failed = e->failed           ? e->failed
		                     : !e->early         ? ""
		                     : e->early_why      ? e->early_why
		                                         : "stopped early (the log gives no reason)";
		bool ascii = strlen(failed) < 116;
		for (const char *c = failed; ascii && *c; c++)
			ascii = *c >= 0x20 && *c < 0x7f;
		need(g->pir && !strcmp(g->pir, e->pir) && same_number(g->latency_us, e->latency_us) &&
		             same_number(g->dense_us, e->dense_us) && same_number(g->rel_err, e->rel_err) &&
		             kernel_schedule_equal(&g->sched, &e->sched) && g->early == e->early &&
		             (ascii ? !strcmp(g->why, failed) : valid_utf8(g->why) && strlen(g->why) < 120),
		     "search_log_load's entry %d is not line %d as read", k, i + 1);
		need(valid_utf8(g->blas_core) && strlen(g->blas_core) < sizeof g->blas_core && (e->blas_core || !g->blas_core[0]),
		     "search_log_load's blas_core of line %d is no valid text of at most 31 bytes", i + 1);
		need(g->latency_us < 0 ? g->latency_us == -1
		                       : g->latency_us >= SEARCH_MIN_US && isfinite(g->latency_us) && g->rel_err >= 0 &&
		                                 g->rel_err < SEARCH_MAX_REL_ERR,
		     "taken over: %g us, relative error %g", g->latency_us, g->rel_err);
	}
	need(k == ngot, "search_log_load took %d lines, %d are the search's", ngot, k);
	search_log_free(got, ngot);
}

/* ---- search_merge (patc merge) ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	need(f, "cannot read %s", path);
	StrBuf b;
	sb_init(&b);
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
		sb_append(&b, chunk, got);
	fclose(f);
	*len = b.len;
	char *s = sb_take(&b);
	return s ? s : calloc(1, 1);
}

static int merge_quietly(const char *in, const char *out)
{
	fflush(stdout);
	fflush(stderr);
	const int o = dup(1), e = dup(2);
	dup2(devnull, 1);
	dup2(devnull, 2);
	const char *paths[1] = {in};
	const int rc = search_merge(1, paths, out);
	fflush(stdout);
	fflush(stderr);
	dup2(o, 1);
	dup2(e, 2);
	close(o);
	close(e);
	return rc;
}

static void check_merge(Line *l, int n)
{
	int lines = 0, measurements = 0;
	StrBuf want;
	sb_init(&want);
	for (int i = 0; i < n; i++) {
		lines += !l[i].blank;
		if (!l[i].accepted)
			continue;
		measurements++;
		l[i].first = i;
		for (int j = 0; j < i; j++)
			if (l[j].accepted && same_kernel(&l[j].e, &l[i].e)) {
				l[i].first = l[j].first;
				break;
			}
	}
	for (int i = 0; i < n; i++) {
		if (!l[i].accepted || l[i].first != i)
			continue;
		int newest = i; /* by time; the later line where they tie */
		for (int j = i + 1; j < n; j++)
			if (l[j].accepted && l[j].first == i && strcmp(l[j].time, l[newest].time) >= 0)
				newest = j;
		sb_printf(&want, "%s\n", l[newest].text);
	}
	const int rc = merge_quietly(log_path, merged_path);
	if (lines && !measurements) {
		need(rc == PATC_EXIT_INPUT, "merge of a log with no measurement: exit %d", rc);
	} else {
		need(rc == PATC_EXIT_OK, "merge of a log with %d measurements: exit %d", measurements, rc);
		size_t len, len2;
		char *got = slurp(merged_path, &len);
		const char *w = want.data ? want.data : "";
		if (len != want.len || memcmp(got, w, len) != 0) {
			fprintf(stderr, "fuzz_log.c: merge wrote (%zu bytes):\n%s\n", len, got);
			fprintf(stderr, "where each kernel's newest line is (%zu bytes):\n%s\n", want.len, w);
			abort();
		}
		need(merge_quietly(merged_path, merged2_path) == PATC_EXIT_OK, "merge of merge's output failed");
		char *again = slurp(merged2_path, &len2);
		need(len2 == len && !memcmp(again, got, len), "merging merge's output changed it");
		free(again);
		free(got);
	}
	sb_free(&want);
}

/* ---- cost_train (patc train-cost-model) ---- */

typedef struct Kernel {
	int group;
	uint64_t kern;
} Kernel;

static void check_train(const Line *l, int n)
{
	const char *target = "x86-64";
	for (int i = 0; i < n; i++)
		if (l[i].accepted && l[i].e.target) {
			target = l[i].e.target;
			break;
		}
	/* the reading of costmodel.c's read_log, each sample checked */
	char(*groups)[512] = NULL;
	Kernel *kernels = NULL;
	int ngroups = 0, nkernels = 0, cap = 0;
	for (int i = 0; i < n; i++) {
		const SearchLogEntry *e = &l[i].e;
		const bool usable = l[i].accepted && e->target && !strcmp(e->target, target) && e->latency_us > 0 &&
		                    isfinite(e->latency_us) && e->N >= 1 && e->N <= 1e7 && e->threads >= 1 &&
		                    e->threads <= 4096 && e->density > 0 && e->density <= 1 &&
		                    kernel_schedule_is_default(&e->sched);
		if (!usable)
			continue;
		Pir ir;
		char perr[256];
		need(pir_read_text(e->pir, &ir, 1, perr, sizeof perr) == 1, "line %d: accepted, its PatternIR does not read",
		     i + 1);
		const double nkept = e->density * (double)(ir.len[PIR_AXIS_M] * ir.len[PIR_AXIS_K]);
		if (!(nkept >= 1)) /* no kept weight (a density of 5e-324): skipped */
			continue;
		char why[256];
		need(pir_verify(&ir, why, sizeof why), "line %d: its PatternIR reads, does not verify: %s", i + 1, why);
		char key[512];
		snprintf(key, sizeof key, "%.200s|%.60s|%lldx%lldx%.0f|%.4s|%.0f", e->source ? e->source : "",
		         e->op ? e->op : "", (long long)ir.len[PIR_AXIS_M], (long long)ir.len[PIR_AXIS_K], e->N,
		         e->layout ? e->layout : "kn", e->threads);
		const PatLayout layout = e->layout && !strcmp(e->layout, "nk") ? PAT_LAYOUT_NK : PAT_LAYOUT_KN;
		CostQuery q = {&ir, (int64_t)e->N, layout, (int)e->threads, nkept, e->sched, 0};
		double f[COST_NFEAT];
		cost_features(&q, f);
		for (int k = 0; k < COST_NFEAT; k++)
			need(isfinite(f[k]), "line %d: feature %s is %g", i + 1, cost_feature_names[k], f[k]);
		const double y = log(e->latency_us * q.threads / (q.nkept * (double)q.N));
		need(isfinite(y) && fabs(y) <= GBT_MAX_ABS_Y,
		     "line %d: the training target log(%g us * %d threads / (%g kept * %lld columns)) is %g: "
		     "gbt_train refuses every log for it",
		     i + 1, e->latency_us, q.threads, q.nkept, (long long)q.N, y);
		if (nkernels == cap) {
			cap = cap ? 2 * cap : 16;
			groups = realloc(groups, (size_t)cap * sizeof *groups);
			kernels = realloc(kernels, (size_t)cap * sizeof *kernels);
			if (!groups || !kernels)
				abort();
		}
		int g = 0;
		while (g < ngroups && strcmp(groups[g], key))
			g++;
		if (g == ngroups)
			memcpy(groups[ngroups++], key, sizeof key);
		const uint64_t h = util_hash_text(e->pir);
		int k = 0;
		while (k < nkernels && !(kernels[k].group == g && kernels[k].kern == h))
			k++;
		if (k == nkernels)
			kernels[nkernels++] = (Kernel){g, h};
	}
	free(groups);
	free(kernels);
	/* cost_train itself: too many folds to ever train */
	const char *logs[1] = {log_path};
	CostTrainOptions o = {logs, 1, target, model_path, INT_MAX, 1};
	char err[256] = "";
	need(cost_train(&o, NULL, err) != PATC_EXIT_OK, "cost_train trained with %d folds", INT_MAX);
	int got_kernels = -1, got_groups = -1;
	need(sscanf(err, "%d measurements of %d searches", &got_kernels, &got_groups) == 2, "cost_train: %s", err);
	need(got_kernels == nkernels && got_groups == ngroups,
	     "cost_train read %d kernels of %d searches, the log has %d of %d", got_kernels, got_groups, nkernels,
	     ngroups);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	make_dir();
	const int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	need(fd >= 0 && write(fd, data, size) == (ssize_t)size && close(fd) == 0, "cannot write %s", log_path);
	char *buf = malloc(size + 1);
	if (!buf)
		abort();
	memcpy(buf, data, size);
	buf[size] = 0;
	Line *l = NULL;
	const int n = split_lines(buf, size, &l);
	check_load(l, n);
	check_merge(l, n);
	check_train(l, n);
	for (int i = 0; i < n; i++)
		cJSON_Delete(l[i].json);
	free(l);
	free(buf);
	remove_dir();
	return 0;
}
