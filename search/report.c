/* SPDX-License-Identifier: MIT */
/* report.c - a search's reports: report.json and report.csv (every
 * candidate: its PatternIR, density, metrics, predicted and measured
 * latency, the dense baseline's latency, the speedup, the Pareto set
 * marked) and pareto.svg.  The tuning log is tunelog.c's. */
#define _POSIX_C_SOURCE 200809L
#include "search.h"
#include "../backend_ptx/ptx.h"
#include "../support/outfile.h"
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
	          (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N, spt);
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
	if (!outfile_write(path, text, strlen(text))) {
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

/* report.json's settings: the search's, as it ran. */
static void settings_json(cJSON *root, const OpResult *op, const SearchSettings *s)
{
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
}

/* report.json's OpenBLAS kernel sets: blas_core, the one dense_us is of;
 * dense_baselines, each set timed for it (where this search measured it:
 * the one in use, and the strongest this CPU runs where that is stronger);
 * blas_note, why the stronger one is missing. */
static void blas_json(cJSON *root, const SearchResult *r)
{
	if (r->dense_us > 0 && r->blas_core[0])
		cJSON_AddStringToObject(root, "blas_core", r->blas_core);
	if (!r->blas.text[0] || r->blas.in_use_us <= 0)
		return;
	cJSON *arr = cJSON_AddArrayToObject(root, "dense_baselines");
	const struct {
		const char *core;
		double us;
		bool in_use;
	} timed[2] = {{r->blas.in_use, r->blas.in_use_us, true}, {r->blas.stronger, r->blas.stronger_us, false}};
	for (int i = 0; i < 2; i++) {
		if (timed[i].us <= 0)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "blas_core", timed[i].core);
		cJSON_AddNumberToObject(o, "dense_us", timed[i].us);
		cJSON_AddBoolToObject(o, "in_use", timed[i].in_use);
		cJSON_AddItemToArray(arr, o);
	}
	if (r->blas.stronger[0] && r->blas.stronger_us <= 0 && r->blas.why[0]) {
		char note[320];
		snprintf(note, sizeof note, "%s kernels not timed: %s", r->blas.stronger, r->blas.why);
		cJSON_AddStringToObject(root, "blas_note", note);
	}
}

/* report.json's cost_model: which one ranked, and how its ranks agree
 * with the measured latencies. */
static void cost_model_json(cJSON *root, const SearchSettings *s, const SearchResult *r)
{
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
}

/* report.csv: a row a candidate, in the report's order. */
static bool write_csv(const char *dir, const SearchResult *r, const int *order, char err[256])
{
	StrBuf csv;
	sb_init(&csv);
	sb_puts(&csv, "rank,pattern,reference,schedule,status,density,magnitude_loss,unstructured_loss,loss_over_bound,"
	              "predicted_us,latency_us,dense_us,speedup,pareto,why\n");
	for (int i = 0; i < r->n; i++) {
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
	const bool ok = write_text(dir, "report.csv", csv.data, err);
	sb_free(&csv);
	return ok;
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
	cJSON_AddStringToObject(root, "source", util_utf8_text(source, text, sizeof text));
	cJSON_AddStringToObject(root, "op", op->name);
	cJSON_AddStringToObject(root, "target", target);
	/* where it measured (a GPU's name, the host emulator), as the log says */
	cJSON_AddStringToObject(root, "device", s->log_info && s->log_info->device ? s->log_info->device : cpu);
	cJSON_AddNumberToObject(root, "M", (double)op->shape.M);
	cJSON_AddNumberToObject(root, "K", (double)op->shape.K);
	cJSON_AddNumberToObject(root, "N", (double)op->shape.N);
	settings_json(root, op, s);
	cJSON_AddNumberToObject(root, "patterns_considered", (double)r->patterns);
	cJSON_AddNumberToObject(root, "distinct_masks", (double)r->masks);
	cJSON_AddNumberToObject(root, "within_budget", (double)r->within);
	cJSON_AddNumberToObject(root, "seconds", r->seconds);
	if (r->dense_us > 0)
		cJSON_AddNumberToObject(root, "dense_us", r->dense_us);
	blas_json(root, r);
	cost_model_json(root, s, r);
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
	ok = ok && write_csv(dir, r, order, err);
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
