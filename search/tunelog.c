/* SPDX-License-Identifier: MIT */
/* tunelog.c - the tuning log (tune.jsonl): a line written per measured
 * kernel, and the one reader of its lines, for --resume, patc merge and
 * train-cost-model. */
#define _POSIX_C_SOURCE 200809L
#include "search.h"
#include "../backend_ptx/ptx.h"
#include "../support/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A message into err[256] (util_say). */
#define say(err, ...) util_say(err, 256, __VA_ARGS__)

char *search_log_line(const SearchLogInfo *info, const SearchCandidate *c, double dense_us, const char *blas_core)
{
	time_t now = time(NULL);
	char when[32];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "time", when);
	cJSON_AddStringToObject(j, "patc", info->version);
	cJSON_AddStringToObject(j, "target", info->target);
	cJSON_AddStringToObject(j, "device", info->device);
	cJSON_AddNumberToObject(j, "seed", (double)info->seed);
	char name[4096];
	cJSON_AddStringToObject(j, "source", util_utf8_text(info->source, name, sizeof name));
	cJSON_AddStringToObject(j, "op", info->op);
	cJSON_AddNumberToObject(j, "M", (double)c->ir.len[PIR_AXIS_M]);
	cJSON_AddNumberToObject(j, "K", (double)c->ir.len[PIR_AXIS_K]);
	cJSON_AddNumberToObject(j, "N", (double)info->N);
	cJSON_AddStringToObject(j, "layout", info->layout ? info->layout : "kn");
	cJSON_AddStringToObject(j, "dtype", info->dtype ? info->dtype : "f32");
	cJSON_AddNumberToObject(j, "threads", info->threads);
	cJSON_AddStringToObject(j, "pattern", c->notation);
	char *text = pir_print_text(&c->ir);
	cJSON_AddStringToObject(j, "pir", text ? text : "");
	free(text);
	cJSON_AddItemToObject(j, "schedule", kernel_schedule_to_json(&c->sched));
	cJSON_AddNumberToObject(j, "density", c->metrics.density);
	cJSON_AddNumberToObject(j, "magnitude_loss", c->metrics.loss);
	cJSON_AddNumberToObject(j, "predicted_us", c->predicted_us);
	if (c->status == SEARCH_MEASURED) {
		cJSON_AddNumberToObject(j, "latency_us", c->measured_us);
		cJSON_AddNumberToObject(j, "relative_error", c->rel_err);
		if (c->early) {
			cJSON_AddBoolToObject(j, "early", true);
			cJSON_AddStringToObject(j, "early_why", c->why);
		}
	} else
		cJSON_AddStringToObject(j, "failed", c->why);
	if (dense_us > 0)
		cJSON_AddNumberToObject(j, "dense_us", dense_us);
	if (dense_us > 0 && blas_core && blas_core[0])
		cJSON_AddStringToObject(j, "blas_core", blas_core);
	char *line = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return line;
}

/* A log line's schedule (none: the backend's own); false where it is
 * malformed, or its GPU mapping is none that the backend takes. */
static bool log_schedule(const cJSON *line, KernelSchedule *s)
{
	*s = kernel_schedule_default;
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(line, "schedule");
	if (!o)
		return true; /* logs before schedules: the backend's own */
	return kernel_schedule_from_json(o, s) && (!s->bx || ptx_bx_legal(s->bx)) && (int64_t)s->bx * s->by <= 1024;
}

/* A log line's field: NULL or absent where it is not there; *bad where it
 * is there but of another type (a line edited or corrupted: not taken). */
static const char *log_string(const cJSON *j, const char *key, bool *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	*bad |= v && !cJSON_IsString(v);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double log_number(const cJSON *j, const char *key, double absent, bool *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	*bad |= v && !cJSON_IsNumber(v);
	return cJSON_IsNumber(v) ? v->valuedouble : absent;
}

/* Whether text is one PatternIR that reads (and so verifies). */
static bool log_pir_reads(const char *text)
{
	Pir *ir = malloc(2 * sizeof *ir);
	if (!ir)
		util_oom();
	char err[128];
	const bool ok = pir_read_text(text, ir, 2, err, sizeof err) == 1;
	free(ir);
	return ok;
}

/* Whether a JSON text escapes a NUL (\u0000) in one of its strings: cJSON
 * ends the C string there, so "x86-64\u0000 and more" would read as
 * another valid value, "x86-64". */
static bool json_escapes_nul(const char *s, size_t len)
{
	bool in = false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"')
			in = !in;
		else if (in && s[i] == '\\') {
			if (i + 5 < len && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4))
				return true;
			i++; /* the escaped character */
		}
	}
	return false;
}

cJSON *search_log_parse(const char *line, size_t len)
{
	/* (a raw NUL byte, or an escaped one: not a line patc wrote) */
	return strlen(line) == len && !json_escapes_nul(line, len) ? cJSON_ParseWithOpts(line, NULL, 1) : NULL;
}

bool search_log_entry(const cJSON *line, SearchLogEntry *e)
{
	memset(e, 0, sizeof *e);
	if (!cJSON_IsObject(line) || !log_schedule(line, &e->sched))
		return false;
	bool bad = false;
	e->pir = log_string(line, "pir", &bad);
	e->target = log_string(line, "target", &bad);
	e->device = log_string(line, "device", &bad);
	e->source = log_string(line, "source", &bad);
	e->op = log_string(line, "op", &bad);
	e->version = log_string(line, "patc", &bad);
	e->layout = log_string(line, "layout", &bad);
	e->dtype = log_string(line, "dtype", &bad);
	if (!e->dtype && e->target && (!strncmp(e->target, "x86", 3) || !strcmp(e->target, "native")))
		e->dtype = "f32";
	e->failed = log_string(line, "failed", &bad);
	e->M = log_number(line, "M", 0, &bad);
	e->K = log_number(line, "K", 0, &bad);
	e->N = log_number(line, "N", 0, &bad);
	e->threads = log_number(line, "threads", 0, &bad);
	e->density = log_number(line, "density", 0, &bad);
	e->latency_us = log_number(line, "latency_us", -1, &bad);
	e->dense_us = log_number(line, "dense_us", -1, &bad);
	if (!(e->dense_us >= SEARCH_MIN_US && e->dense_us <= SEARCH_MAX_US))
		e->dense_us = -1;
	e->rel_err = log_number(line, "relative_error", 0, &bad);
	e->blas_core = log_string(line, "blas_core", &bad); /* (absent in older logs) */
	const cJSON *early = cJSON_GetObjectItemCaseSensitive(line, "early");
	bad |= early && !cJSON_IsBool(early);
	e->early = cJSON_IsTrue(early);
	e->early_why = e->early ? log_string(line, "early_why", &bad) : NULL;
	if (e->failed)
		e->latency_us = -1;
	return !bad && e->pir &&
	       (e->failed || (e->latency_us >= SEARCH_MIN_US && e->latency_us <= SEARCH_MAX_US && e->rel_err >= 0 &&
	                      e->rel_err < SEARCH_MAX_REL_ERR)) &&
	       log_pir_reads(e->pir);
}

/* The logged measurements that a search with this info can take over. */
bool search_log_load(const char *path, const SearchLogInfo *info, SearchLogged **out, int *n, char err[256])
{
	*out = NULL;
	*n = 0;
	char q[UTIL_QUOTE_BUF];
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return true; /* nothing logged yet */
		say(err, "cannot read '%s': %s", util_quote(path, q), strerror(errno));
		return false;
	}
	int cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	bool ok = true;
	int lineno = 0;
	while ((len = util_getline_max(&line, &lcap, f, SEARCH_LOG_LINE_MAX)) > 0) {
		lineno++;
		cJSON *j = search_log_parse(line, (size_t)len);
		SearchLogEntry le;
		/* a line of another patc (whose kernels may differ), target,
		 * device, shape, layout, dtype (or of a GPU target, written before
		 * the dtype was logged) or thread count is not this search's; a
		 * line that is not JSON (cut short by a killed search) is skipped:
		 * its candidate is measured again */
		const bool mine = j && search_log_entry(j, &le) && le.target && le.device && le.version &&
		                  !strcmp(le.version, info->version) &&
		                  !strcmp(le.target, info->target) && !strcmp(le.device, info->device) &&
		                  le.M == (double)info->M && le.K == (double)info->K && le.N == (double)info->N &&
		                  !strcmp(le.layout ? le.layout : "kn", info->layout ? info->layout : "kn") &&
		                  le.dtype && !strcmp(le.dtype, info->dtype ? info->dtype : "f32") &&
		                  le.threads == (double)info->threads;
		if (mine) {
			if (*n == cap) {
				cap = cap ? 2 * cap : 64;
				SearchLogged *nl = realloc(*out, (size_t)cap * sizeof *nl);
				if (!nl) {
					cJSON_Delete(j);
					say(err, "out of memory reading '%s'", util_quote(path, q));
					ok = false;
					break;
				}
				*out = nl;
			}
			SearchLogged *e = &(*out)[(*n)++];
			memset(e, 0, sizeof *e);
			e->pir = strdup(le.pir);
			e->latency_us = le.latency_us;
			e->dense_us = le.dense_us;
			/* (whole characters of valid UTF-8, as why below) */
			util_utf8_text(le.blas_core ? le.blas_core : "", e->blas_core, sizeof e->blas_core);
			e->rel_err = le.rel_err;
			e->sched = le.sched;
			e->early = le.early;
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "time");
			snprintf(e->time, sizeof e->time, "%s", cJSON_IsString(t) ? t->valuestring : "");
			/* (whole characters of valid UTF-8 that a Measured's why holds:
			 * a log edited by hand is no reason for an invalid report) */
			util_utf8_text(le.failed ? le.failed : le.early_why ? le.early_why : "", e->why, 120);
			if (le.early && !le.early_why && !le.failed) /* (an older patc's log) */
				snprintf(e->why, sizeof e->why, "stopped early (the log gives no reason)");
			if (!e->pir) {
				(*n)--;
				ok = false;
				say(err, "out of memory reading '%s'", util_quote(path, q));
			}
		}
		cJSON_Delete(j);
		if (!ok)
			break;
	}
	if (ok && len < 0 && errno == EFBIG) {
		say(err, "'%s' is not a tuning log: line %d is longer than %zu MiB", util_quote(path, q),
		         lineno + 1, SEARCH_LOG_LINE_MAX >> 20);
		ok = false;
	} else if (ok && ferror(f)) { /* a directory, or a read error */
		say(err, "cannot read '%s': %s", util_quote(path, q), strerror(errno));
		ok = false;
	}
	free(line);
	fclose(f);
	if (!ok) {
		search_log_free(*out, *n);
		*out = NULL, *n = 0;
	}
	return ok;
}

void search_log_free(SearchLogged *l, int n)
{
	for (int i = 0; i < n; i++)
		free(l[i].pir);
	free(l);
}
