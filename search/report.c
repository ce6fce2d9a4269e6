/* report.c - a search's reports: report.json and report.csv (every
 * candidate: its PatternIR, density, metrics, predicted and measured
 * latency, the dense baseline's latency, the speedup, the Pareto set
 * marked), pareto.svg, and the lines of the tuning log (tune.jsonl). */
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

void search_sparsity_text(const SearchSettings *s, char *buf, size_t len)
{
	if (s->max_sparsity > s->sparsity)
		snprintf(buf, len, "%.4g%%..%.4g%%", 100 * s->sparsity, 100 * s->max_sparsity);
	else
		snprintf(buf, len, "%.4g%%", 100 * s->sparsity);
}

/* The tcs and tcw a log line may hold (schedule.def) are what the backend takes. */
_Static_assert(SCHED_TC_MAX_STAGES == PTX_TC_MAX_STAGES && SCHED_TC_MAX_WARPS == PTX_TC_MAX_WARPS,
               "schedule.h's tensor-core ranges are ptx.h's");

/* The schedule as a JSON object (zero fields: the backend's own). */
static void add_schedule(cJSON *j, const KernelSchedule *s)
{
	cJSON_AddItemToObject(j, "schedule", kernel_schedule_to_json(s));
}

static cJSON *candidate_json(const SearchCandidate *c, double dense_us, double budget, int rank)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "rank", rank);
	cJSON_AddStringToObject(j, "pattern", c->notation);
	if (c->ref[0])
		cJSON_AddStringToObject(j, "reference", c->ref);
	cJSON_AddBoolToObject(j, "within_budget", c->metrics.nreal && c->metrics.loss_over_bound <= budget);
	cJSON_AddBoolToObject(j, "within_tolerance", c->metrics.nreal && !c->off_target);
	char *text = pir_print_text(&c->ir);
	cJSON_AddStringToObject(j, "pir", text ? text : "");
	free(text);
	cJSON_AddStringToObject(j, "mask_key", c->key);
	char sched[128];
	kernel_schedule_text(&c->sched, sched, sizeof sched);
	cJSON_AddStringToObject(j, "schedule_text", sched);
	add_schedule(j, &c->sched);
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
		if (c->early)
			cJSON_AddBoolToObject(j, "stopped_early", true);
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

/* s as valid UTF-8 for JSON (a file name may be any bytes): each byte that
 * does not start or continue a well-formed sequence becomes U+FFFD; in buf. */
static const char *utf8_text(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < len;) {
		const int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 2 : (*p & 0xf0) == 0xe0 ? 3
		              : (*p & 0xf8) == 0xf0 && *p <= 0xf4                ? 4
		                                                                  : 0;
		bool ok = n > 0;
		for (int i = 1; ok && i < n; i++)
			ok = (p[i] & 0xc0) == 0x80;
		/* (overlong three- and four-byte forms, surrogates and past U+10FFFF) */
		if (ok && n == 3)
			ok = !(p[0] == 0xe0 && p[1] < 0xa0) && !(p[0] == 0xed && p[1] >= 0xa0);
		if (ok && n == 4)
			ok = !(p[0] == 0xf0 && p[1] < 0x90) && !(p[0] == 0xf4 && p[1] >= 0x90);
		if (ok) {
			memcpy(buf + o, p, (size_t)n);
			o += (size_t)n, p += n;
		} else {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3, p++;
		}
	}
	buf[o] = 0;
	return buf;
}

/* Candidate i's rank: its place (from 1) in order, the report's list (best,
 * fastest and best_reference are entries of it, named again). */
static int rank_of(const int *order, int n, int i)
{
	for (int k = 0; k < n; k++)
		if (order[k] == i)
			return k + 1;
	return 0;
}

/* Text for SVG: the XML specials escaped. */
static void svg_text(StrBuf *b, const char *t)
{
	for (; *t; t++)
		switch (*t) {
		case '<': sb_puts(b, "&lt;"); break;
		case '>': sb_puts(b, "&gt;"); break;
		case '&': sb_puts(b, "&amp;"); break;
		case '"': sb_puts(b, "&quot;"); break;
		default: sb_putc(b, *t);
		}
}

/* pareto.svg: speedup over dense against magnitude loss, every measured
 * candidate a dot, the Pareto front joined, the reference patterns as
 * labelled squares, hollow where the budget or the target's density rules
 * them out; the budget's limit as a dashed line where there is one (a
 * range's depends on the density). */
static void pareto_svg(StrBuf *b, const OpResult *op, const SearchSettings *s, const SearchResult *r)
{
	const double W = 720, H = 480, L = 70, R = 20, T = 40, B = 60;
	double x0 = 1e300, x1 = -1e300, y1 = 0, limit = -1;
	int n = 0;
	for (int i = 0; i < r->n; i++) {
		const SearchCandidate *c = &r->c[i];
		if (limit < 0 && c->metrics.nreal && !(s->max_sparsity > s->sparsity))
			limit = c->metrics.bound_loss + s->budget;
		if (c->status != SEARCH_MEASURED || r->dense_us <= 0)
			continue;
		double sp = r->dense_us / c->measured_us;
		x0 = c->metrics.loss < x0 ? c->metrics.loss : x0;
		x1 = c->metrics.loss > x1 ? c->metrics.loss : x1;
		y1 = sp > y1 ? sp : y1;
		n++;
	}
	if (limit >= 0) {
		x0 = limit < x0 ? limit : x0;
		x1 = limit > x1 ? limit : x1;
	}
	if (!n || x1 <= x0) {
		x0 = x0 < 1e300 ? x0 - 0.01 : 0;
		x1 = x0 + 0.02;
	}
	double pad = 0.05 * (x1 - x0);
	x0 -= pad, x1 += pad;
	y1 = y1 > 0 ? 1.1 * y1 : 1;
#define PX(v) (L + ((v) - x0) / (x1 - x0) * (W - L - R))
#define PY(v) (H - B - (v) / y1 * (H - T - B))
	sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
	             "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
	sb_puts(b, "<text x=\"10\" y=\"20\" font-size=\"13\">patc --search: op ");
	svg_text(b, op->name);
	char spt[48];
	search_sparsity_text(s, spt, sizeof spt);
	sb_printf(b, ", %lldx%lldx%lld, %s sparsity: speedup over dense against magnitude loss</text>\n",
	          (long long)op->M, (long long)op->K, (long long)op->N, spt);
	/* axes and ticks */
	sb_printf(b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
	sb_printf(b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", L, T, L, H - B);
	for (int i = 0; i <= 5; i++) {
		double xv = x0 + (x1 - x0) * i / 5, yv = y1 * i / 5;
		sb_printf(b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%.3f</text>\n", PX(xv), H - B + 16, xv);
		sb_printf(b, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.2fx</text>\n", L - 6, PY(yv) + 4, yv);
	}
	sb_printf(b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">magnitude loss (1 - retained importance)</text>\n",
	          (L + W - R) / 2, H - 20);
	sb_printf(b, "<text x=\"16\" y=\"%g\" transform=\"rotate(-90 16 %g)\" text-anchor=\"middle\">speedup over "
	             "dense</text>\n",
	          (T + H - B) / 2, (T + H - B) / 2);
	if (limit >= 0)
		sb_printf(b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"gray\" stroke-dasharray=\"4 3\"/>"
		             "<text x=\"%g\" y=\"%g\" fill=\"gray\">budget</text>\n",
		          PX(limit), T, PX(limit), H - B, PX(limit) + 3, T + 10);
	/* the Pareto front, by loss */
	int *front = malloc((size_t)(r->n ? r->n : 1) * sizeof *front), nf = 0;
	for (int i = 0; front && i < r->n; i++)
		if (r->c[i].pareto && r->c[i].status == SEARCH_MEASURED && r->dense_us > 0)
			front[nf++] = i;
	for (int i = 1; i < nf; i++)
		for (int j = i; j > 0 && r->c[front[j]].metrics.loss < r->c[front[j - 1]].metrics.loss; j--) {
			int t = front[j];
			front[j] = front[j - 1], front[j - 1] = t;
		}
	if (nf > 1) {
		sb_puts(b, "<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"");
		for (int i = 0; i < nf; i++) {
			const SearchCandidate *c = &r->c[front[i]];
			sb_printf(b, "%g,%g ", PX(c->metrics.loss), PY(r->dense_us / c->measured_us));
		}
		sb_puts(b, "\"/>\n");
	}
	free(front);
	for (int i = 0; i < r->n; i++) {
		const SearchCandidate *c = &r->c[i];
		if (c->status != SEARCH_MEASURED || r->dense_us <= 0)
			continue;
		double x = PX(c->metrics.loss), y = PY(r->dense_us / c->measured_us);
		const char *color = c->ref[0] ? "#ff7f0e" : "#1f77b4";
		const bool out = c->off_target || c->metrics.loss_over_bound > s->budget;
		if (c->ref[0]) {
			sb_printf(b, "<rect x=\"%g\" y=\"%g\" width=\"8\" height=\"8\" fill=\"%s\" stroke=\"%s\"><title>",
			          x - 4, y - 4, out ? "white" : color, color);
			svg_text(b, c->ref);
			sb_printf(b, "</title></rect><text x=\"%g\" y=\"%g\" fill=\"%s\">", x + 6, y + 4, color);
			svg_text(b, c->ref);
			sb_puts(b, "</text>\n");
		} else {
			sb_printf(b, "<circle cx=\"%g\" cy=\"%g\" r=\"%s\" fill=\"%s\" stroke=\"%s\"><title>", x, y,
			          i == r->best ? "6" : "4", out ? "white" : color, color);
			svg_text(b, c->notation);
			sb_puts(b, "</title></circle>\n");
		}
		if (i == r->best) {
			sb_printf(b, "<text x=\"%g\" y=\"%g\" fill=\"%s\">best: ", x + 8, y - 6, color);
			svg_text(b, c->ref[0] ? c->ref : c->notation);
			sb_puts(b, "</text>\n");
		}
	}
	sb_printf(b, "<text x=\"%g\" y=\"%g\" fill=\"#1f77b4\">&#9679; searched (line: Pareto front)</text>"
	             "<text x=\"%g\" y=\"%g\" fill=\"#ff7f0e\">&#9632; standard library</text>"
	             "<text x=\"%g\" y=\"%g\" fill=\"gray\">hollow: over the budget or off the target density</text>\n",
	          W - R - 330, T + 4, W - R - 130, T + 4, W - R - 330, T + 18);
	sb_puts(b, "</svg>\n");
#undef PX
#undef PY
}

static bool write_text(const char *dir, const char *name, const char *text, char err[256])
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!util_write_file_atomic(path, text, strlen(text))) {
		const int e = errno;
		char q[UTIL_QUOTE_BUF];
		say(err, "cannot write '%s': %s", util_quote(path, q), strerror(e));
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

/* What the cost model ranked and the search measured in full: its own
 * candidates with the backend's schedule. */
static bool ranked_by_model(const SearchCandidate *c)
{
	return c->status == SEARCH_MEASURED && !c->early && !c->ref[0] && kernel_schedule_is_default(&c->sched);
}

/* Spearman's rank correlation of the cost model's predictions with the
 * measured latencies of the searched candidates; 2 (none) under 3 of them. */
double search_spearman(const SearchResult *r, int *n_out)
{
	int n = 0;
	for (int i = 0; i < r->n; i++)
		n += ranked_by_model(&r->c[i]);
	*n_out = n;
	if (n < 3)
		return 2;
	double *p = malloc((size_t)n * 2 * sizeof *p);
	if (!p)
		return 2;
	double *m = p + n;
	int k = 0;
	for (int i = 0; i < r->n; i++)
		if (ranked_by_model(&r->c[i]))
			p[k] = r->c[i].predicted_us, m[k++] = r->c[i].measured_us;
	double rho = cost_spearman(p, m, n);
	free(p);
	return rho;
}

bool search_write_reports(const char *dir, const char *version, const char *source, const OpResult *op,
                          const SearchSettings *s, const SearchResult *r, const char *target,
                          const char *const *kernel, char err[256])
{
	int *order = malloc((size_t)(r->n ? r->n : 1) * sizeof *order);
	if (!order) {
		say(err, "out of memory writing the report");
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
	char text[4096];
	cJSON_AddStringToObject(root, "source", utf8_text(source, text, sizeof text));
	cJSON_AddStringToObject(root, "op", op->name);
	cJSON_AddStringToObject(root, "target", target);
	/* where it measured (a GPU's name, the host emulator), as the log says */
	cJSON_AddStringToObject(root, "device", s->log_info && s->log_info->device ? s->log_info->device : cpu);
	cJSON_AddNumberToObject(root, "M", (double)op->M);
	cJSON_AddNumberToObject(root, "K", (double)op->K);
	cJSON_AddNumberToObject(root, "N", (double)op->N);
	cJSON *set = cJSON_AddObjectToObject(root, "settings");
	cJSON_AddNumberToObject(set, "sparsity", s->sparsity);
	if (s->max_sparsity > s->sparsity)
		cJSON_AddNumberToObject(set, "max_sparsity", s->max_sparsity);
	cJSON_AddNumberToObject(set, "tolerance", s->tolerance);
	cJSON_AddStringToObject(set, "importance", pat_importance_names[op->importance]);
	cJSON_AddNumberToObject(set, "budget", s->budget);
	cJSON_AddNumberToObject(set, "max_depth", s->max_depth);
	cJSON_AddNumberToObject(set, "min_length", s->min_length);
	cJSON_AddNumberToObject(set, "max_pattern", s->max_pattern);
	cJSON_AddNumberToObject(set, "topk", s->topk);
	cJSON_AddNumberToObject(set, "explore", s->explore);
	cJSON_AddNumberToObject(set, "tune", s->tune);
	cJSON_AddNumberToObject(set, "stop_ratio", s->stop_ratio);
	cJSON_AddNumberToObject(set, "tie", s->tie);
	cJSON_AddNumberToObject(set, "seed", (double)s->seed);
	cJSON_AddBoolToObject(set, "measured", s->measure);
	cJSON_AddNumberToObject(root, "patterns_considered", (double)r->patterns);
	cJSON_AddNumberToObject(root, "distinct_masks", (double)r->masks);
	cJSON_AddNumberToObject(root, "within_budget", (double)r->within);
	cJSON_AddNumberToObject(root, "seconds", r->seconds);
	if (r->dense_us > 0)
		cJSON_AddNumberToObject(root, "dense_us", r->dense_us);
	int nsp;
	double rho = search_spearman(r, &nsp);
	cJSON *cm = cJSON_AddObjectToObject(root, "cost_model");
	if (s->model && s->model->gbt) {
		cJSON_AddStringToObject(cm, "kind", "learned (gradient-boosted trees)");
		cJSON_AddStringToObject(cm, "trained_on", s->model->device);
		cJSON_AddNumberToObject(cm, "training_measurements", s->model->samples);
		if (!isnan(s->model->spearman)) /* (absent: not measured when it was trained) */
			cJSON_AddNumberToObject(cm, "held_out_spearman", s->model->spearman);
		if (!isnan(s->model->recall))
			cJSON_AddNumberToObject(cm, "held_out_top10_recall", s->model->recall);
		if (!isnan(s->model->recall_tied))
			cJSON_AddNumberToObject(cm, "held_out_top10_recall_within_2pct", s->model->recall_tied);
	} else
		cJSON_AddStringToObject(cm, "kind", "analytic (x86)");
	cJSON_AddNumberToObject(cm, "measured", nsp);
	if (rho <= 1)
		cJSON_AddNumberToObject(cm, "spearman", rho);
	if (r->best >= 0)
		cJSON_AddItemToObject(root, "best",
		                      candidate_json(&r->c[r->best], r->dense_us, s->budget, rank_of(order, r->n, r->best)));
	if (kernel) { /* (a later search into dir removes those it does not write again) */
		cJSON *files = cJSON_AddArrayToObject(root, "kernel");
		for (int i = 0; kernel[i]; i++)
			cJSON_AddItemToArray(files, cJSON_CreateString(kernel[i]));
	}
	if (r->fastest >= 0 && r->fastest != r->best)
		cJSON_AddItemToObject(root, "fastest", candidate_json(&r->c[r->fastest], r->dense_us, s->budget,
		                                                      rank_of(order, r->n, r->fastest)));
	if (r->best >= 0 && r->c[r->best].status == SEARCH_MEASURED)
		cJSON_AddNumberToObject(root, "tied_with_fastest", r->tied);
	if (r->best_ref >= 0)
		cJSON_AddItemToObject(root, "best_reference",
		                      candidate_json(&r->c[r->best_ref], r->dense_us, s->budget,
		                                     rank_of(order, r->n, r->best_ref)));
	cJSON *arr = cJSON_AddArrayToObject(root, "candidates");
	for (int i = 0; i < r->n; i++)
		cJSON_AddItemToArray(arr, candidate_json(&r->c[order[i]], r->dense_us, s->budget, i + 1));
	char *json = cJSON_Print(root);
	cJSON_Delete(root);
	bool ok = json && write_text(dir, "report.json", json, err);
	free(json);
	/* report.csv */
	StrBuf csv;
	sb_init(&csv);
	sb_puts(&csv, "rank,pattern,reference,schedule,status,density,magnitude_loss,unstructured_loss,loss_over_bound,"
	              "predicted_us,latency_us,dense_us,speedup,pareto,why\n");
	for (int i = 0; ok && i < r->n; i++) {
		const SearchCandidate *c = &r->c[order[i]];
		sb_printf(&csv, "%d,", i + 1);
		csv_field(&csv, c->notation);
		sb_putc(&csv, ',');
		csv_field(&csv, c->ref);
		char sched[128];
		kernel_schedule_text(&c->sched, sched, sizeof sched);
		sb_putc(&csv, ',');
		csv_field(&csv, sched);
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
	if (ok) {
		StrBuf svg;
		sb_init(&svg);
		pareto_svg(&svg, op, s, r);
		ok = write_text(dir, "pareto.svg", svg.data, err);
		sb_free(&svg);
	}
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
	char name[4096];
	cJSON_AddStringToObject(j, "source", utf8_text(info->source, name, sizeof name));
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
	add_schedule(j, &c->sched);
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
	if (!e->dtype && e->target && !strncmp(e->target, "x86", 3))
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
			e->rel_err = le.rel_err;
			e->sched = le.sched;
			e->early = le.early;
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "time");
			snprintf(e->time, sizeof e->time, "%s", cJSON_IsString(t) ? t->valuestring : "");
			/* (whole characters of valid UTF-8 that a Measured's why holds:
			 * a log edited by hand is no reason for an invalid report) */
			utf8_text(le.failed ? le.failed : le.early_why ? le.early_why : "", e->why, 120);
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
