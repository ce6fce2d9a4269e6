/* report.c - a search's reports: report.json and report.csv (every
 * candidate: its PatternIR, density, metrics, predicted and measured
 * latency, the dense baseline's latency, the speedup, the Pareto set
 * marked), pareto.svg, and the lines of the tuning log (tune.jsonl). */
#define _POSIX_C_SOURCE 200809L
#include "search.h"
#include "../support/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void search_device_name(char *buf, size_t len)
{
	snprintf(buf, len, "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "model name", 10)) {
			char *v = strchr(line, ':');
			if (v) {
				v += 1 + (v[1] == ' ');
				v[strcspn(v, "\n")] = 0;
				snprintf(buf, len, "%s", v);
			}
			break;
		}
	fclose(f);
}

static cJSON *candidate_json(const SearchCandidate *c, double dense_us, int rank)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "rank", rank);
	cJSON_AddStringToObject(j, "pattern", c->notation);
	char *text = pir_print_text(&c->ir);
	cJSON_AddStringToObject(j, "pir", text ? text : "");
	free(text);
	cJSON_AddStringToObject(j, "mask_key", c->key);
	cJSON_AddStringToObject(j, "status", search_status_names[c->status]);
	if (c->status != SEARCH_RANKED || c->metrics.nreal) {
		cJSON_AddNumberToObject(j, "density", c->metrics.density);
		cJSON_AddNumberToObject(j, "magnitude_loss", c->metrics.loss);
		cJSON_AddNumberToObject(j, "unstructured_loss", c->metrics.bound_loss);
		cJSON_AddNumberToObject(j, "loss_over_bound", c->metrics.loss_over_bound);
		cJSON_AddNumberToObject(j, "log_mask_diversity", c->metrics.log_diversity);
	}
	if (c->status != SEARCH_REJECTED)
		cJSON_AddNumberToObject(j, "predicted_us", c->predicted_us);
	if (c->status == SEARCH_MEASURED) {
		cJSON_AddNumberToObject(j, "latency_us", c->measured_us);
		cJSON_AddNumberToObject(j, "relative_error", c->rel_err);
		if (dense_us > 0) {
			cJSON_AddNumberToObject(j, "dense_us", dense_us);
			cJSON_AddNumberToObject(j, "speedup", dense_us / c->measured_us);
		}
		cJSON_AddBoolToObject(j, "pareto", c->pareto);
	}
	if (c->why[0])
		cJSON_AddStringToObject(j, "why", c->why);
	return j;
}

/* The candidates in report order: measured by latency, then ranked by
 * prediction, then failed, then rejected by loss. */
static int report_class(const SearchCandidate *c)
{
	switch (c->status) {
	case SEARCH_MEASURED: return 0;
	case SEARCH_RANKED: return 1;
	case SEARCH_FAILED: return 2;
	default: return 3;
	}
}

static const SearchCandidate *sort_base;

static int cmp_report(const void *a, const void *b)
{
	const SearchCandidate *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
	int cx = report_class(x), cy = report_class(y);
	if (cx != cy)
		return cx - cy;
	double kx = cx == 0 ? x->measured_us : cx == 3 ? x->metrics.loss : x->predicted_us;
	double ky = cy == 0 ? y->measured_us : cy == 3 ? y->metrics.loss : y->predicted_us;
	if (kx != ky)
		return kx < ky ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

static bool write_text(const char *dir, const char *name, const char *text, char err[256])
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!util_write_file_atomic(path, text, strlen(text))) {
		snprintf(err, 256, "cannot write '%.200s': %s", path, strerror(errno));
		return false;
	}
	return true;
}

static void csv_field(StrBuf *b, const char *s)
{
	sb_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"')
			sb_putc(b, '"');
		sb_putc(b, *s);
	}
	sb_putc(b, '"');
}

bool search_write_reports(const char *dir, const char *version, const char *source, const OpResult *op,
                          const SearchSettings *s, const SearchResult *r, const char *target, char err[256])
{
	int *order = malloc((size_t)(r->n ? r->n : 1) * sizeof *order);
	if (!order) {
		snprintf(err, 256, "out of memory writing the report");
		return false;
	}
	for (int i = 0; i < r->n; i++)
		order[i] = i;
	sort_base = r->c;
	qsort(order, (size_t)r->n, sizeof *order, cmp_report);
	char cpu[256];
	search_device_name(cpu, sizeof cpu);
	/* report.json */
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "patc", version);
	cJSON_AddStringToObject(root, "source", source);
	cJSON_AddStringToObject(root, "op", op->name);
	cJSON_AddStringToObject(root, "target", target);
	cJSON_AddStringToObject(root, "device", cpu);
	cJSON_AddNumberToObject(root, "M", (double)op->M);
	cJSON_AddNumberToObject(root, "K", (double)op->K);
	cJSON_AddNumberToObject(root, "N", (double)op->N);
	cJSON *set = cJSON_AddObjectToObject(root, "settings");
	cJSON_AddNumberToObject(set, "sparsity", s->sparsity);
	cJSON_AddNumberToObject(set, "tolerance", s->tolerance);
	cJSON_AddNumberToObject(set, "budget", s->budget);
	cJSON_AddNumberToObject(set, "max_depth", s->max_depth);
	cJSON_AddNumberToObject(set, "min_length", s->min_length);
	cJSON_AddNumberToObject(set, "max_pattern", s->max_pattern);
	cJSON_AddNumberToObject(set, "topk", s->topk);
	cJSON_AddNumberToObject(set, "seed", (double)s->seed);
	cJSON_AddBoolToObject(set, "measured", s->measure);
	cJSON_AddNumberToObject(root, "patterns_considered", (double)r->patterns);
	cJSON_AddNumberToObject(root, "distinct_masks", (double)r->masks);
	cJSON_AddNumberToObject(root, "within_budget", (double)r->within);
	cJSON_AddNumberToObject(root, "seconds", r->seconds);
	if (r->dense_us > 0)
		cJSON_AddNumberToObject(root, "dense_us", r->dense_us);
	if (r->best >= 0)
		cJSON_AddItemToObject(root, "best", candidate_json(&r->c[r->best], r->dense_us, 1));
	cJSON *arr = cJSON_AddArrayToObject(root, "candidates");
	for (int i = 0; i < r->n; i++)
		cJSON_AddItemToArray(arr, candidate_json(&r->c[order[i]], r->dense_us, i + 1));
	char *json = cJSON_Print(root);
	cJSON_Delete(root);
	bool ok = json && write_text(dir, "report.json", json, err);
	free(json);
	/* report.csv */
	StrBuf csv;
	sb_init(&csv);
	sb_puts(&csv, "rank,pattern,status,density,magnitude_loss,unstructured_loss,loss_over_bound,predicted_us,"
	              "latency_us,dense_us,speedup,pareto,why\n");
	for (int i = 0; ok && i < r->n; i++) {
		const SearchCandidate *c = &r->c[order[i]];
		sb_printf(&csv, "%d,", i + 1);
		csv_field(&csv, c->notation);
		sb_printf(&csv, ",%s,%.6f,%.6f,%.6f,%.6f,", search_status_names[c->status], c->metrics.density,
		          c->metrics.loss, c->metrics.bound_loss, c->metrics.loss_over_bound);
		if (c->status != SEARCH_REJECTED)
			sb_printf(&csv, "%.2f", c->predicted_us);
		sb_putc(&csv, ',');
		if (c->status == SEARCH_MEASURED)
			sb_printf(&csv, "%.2f", c->measured_us);
		sb_putc(&csv, ',');
		if (r->dense_us > 0)
			sb_printf(&csv, "%.2f", r->dense_us);
		sb_putc(&csv, ',');
		if (c->status == SEARCH_MEASURED && r->dense_us > 0)
			sb_printf(&csv, "%.4f", r->dense_us / c->measured_us);
		sb_printf(&csv, ",%d,", c->pareto);
		csv_field(&csv, c->why);
		sb_putc(&csv, '\n');
	}
	ok = ok && write_text(dir, "report.csv", csv.data, err);
	sb_free(&csv);
	free(order);
	return ok;
}

char *search_log_line(const SearchLogInfo *info, const SearchCandidate *c, double dense_us)
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
	cJSON_AddStringToObject(j, "source", info->source);
	cJSON_AddStringToObject(j, "op", info->op);
	cJSON_AddNumberToObject(j, "M", (double)c->ir.len[PIR_AXIS_M]);
	cJSON_AddNumberToObject(j, "K", (double)c->ir.len[PIR_AXIS_K]);
	cJSON_AddNumberToObject(j, "N", (double)info->N);
	cJSON_AddNumberToObject(j, "threads", info->threads);
	cJSON_AddStringToObject(j, "pattern", c->notation);
	char *text = pir_print_text(&c->ir);
	cJSON_AddStringToObject(j, "pir", text ? text : "");
	free(text);
	cJSON_AddNumberToObject(j, "density", c->metrics.density);
	cJSON_AddNumberToObject(j, "magnitude_loss", c->metrics.loss);
	cJSON_AddNumberToObject(j, "predicted_us", c->predicted_us);
	if (c->status == SEARCH_MEASURED) {
		cJSON_AddNumberToObject(j, "latency_us", c->measured_us);
		cJSON_AddNumberToObject(j, "relative_error", c->rel_err);
	} else
		cJSON_AddStringToObject(j, "failed", c->why);
	if (dense_us > 0)
		cJSON_AddNumberToObject(j, "dense_us", dense_us);
	char *line = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return line;
}

/* The logged measurements that a search with this info can take over. */
bool search_log_load(const char *path, const SearchLogInfo *info, SearchLogged **out, int *n, char err[256])
{
	*out = NULL;
	*n = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return true; /* nothing logged yet */
		snprintf(err, 256, "cannot read '%.200s': %s", path, strerror(errno));
		return false;
	}
	int cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	bool ok = true;
	while ((len = getline(&line, &lcap, f)) > 0) {
		cJSON *j = cJSON_Parse(line);
		const cJSON *pir = cJSON_GetObjectItemCaseSensitive(j, "pir");
		const cJSON *tg = cJSON_GetObjectItemCaseSensitive(j, "target");
		const cJSON *dev = cJSON_GetObjectItemCaseSensitive(j, "device");
		const cJSON *nn = cJSON_GetObjectItemCaseSensitive(j, "N");
		const cJSON *th = cJSON_GetObjectItemCaseSensitive(j, "threads");
		const cJSON *lat = cJSON_GetObjectItemCaseSensitive(j, "latency_us");
		const cJSON *fl = cJSON_GetObjectItemCaseSensitive(j, "failed");
		const cJSON *dn = cJSON_GetObjectItemCaseSensitive(j, "dense_us");
		const cJSON *re = cJSON_GetObjectItemCaseSensitive(j, "relative_error");
		/* a line of another target, device, token count or thread count is not this search's */
		bool mine = cJSON_IsString(pir) && cJSON_IsString(tg) && cJSON_IsString(dev) && cJSON_IsNumber(nn) &&
		            cJSON_IsNumber(th) && !strcmp(tg->valuestring, info->target) &&
		            !strcmp(dev->valuestring, info->device) && nn->valuedouble == (double)info->N &&
		            th->valuedouble == (double)info->threads && (cJSON_IsNumber(lat) || cJSON_IsString(fl));
		/* a line that is not JSON (cut short by a killed search) is skipped:
		 * its candidate is measured again */
		if (mine) {
			if (*n == cap) {
				cap = cap ? 2 * cap : 64;
				SearchLogged *nl = realloc(*out, (size_t)cap * sizeof *nl);
				if (!nl) {
					cJSON_Delete(j);
					snprintf(err, 256, "out of memory reading '%.200s'", path);
					ok = false;
					break;
				}
				*out = nl;
			}
			SearchLogged *e = &(*out)[(*n)++];
			memset(e, 0, sizeof *e);
			e->pir = strdup(pir->valuestring);
			e->latency_us = cJSON_IsNumber(lat) ? lat->valuedouble : -1;
			e->dense_us = cJSON_IsNumber(dn) ? dn->valuedouble : -1;
			e->rel_err = cJSON_IsNumber(re) ? re->valuedouble : 0;
			snprintf(e->why, sizeof e->why, "%s", cJSON_IsString(fl) ? fl->valuestring : "");
			if (!e->pir) {
				(*n)--;
				ok = false;
				snprintf(err, 256, "out of memory reading '%.200s'", path);
			}
		}
		cJSON_Delete(j);
		if (!ok)
			break;
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
