/* SPDX-License-Identifier: MIT */
/* explain.c - the --explain report.
 *
 * For every op: its shape and binding, the starting nest, then each applied
 * primitive (with where it came from) and the nest after it, and finally the
 * packed storage: value shape and flattened strides, one index array per
 * perforated loop, bytes.  Metric definitions are in ir/pir_metrics.c.
 */
#include "explain.h"

#include <math.h>
#include <string.h>

static const int dtype_bytes[PAT_NDTYPES] = {4, 2, 2};

void explain_summary(StrBuf *out, const Pir *ir, const PruneMetrics *pm)
{
	char paper[PIR_PAPER_MAX];
	PirMetrics m;
	pir_metrics(ir, &m);
	pir_print_paper(ir, paper, sizeof paper);
	/* With padding the real weights keep more than the pattern's density:
	 * the summary gives the real figure, and the pattern's beside it. */
	if (pm && fabs(pm->density - m.density) >= 5e-5)
		sb_printf(out, "%s: %s  (density %.2f%%, the pattern's %.2f%% over the padded nest", ir->op, paper,
		          100.0 * pm->density, 100.0 * m.density);
	else
		sb_printf(out, "%s: %s  (density %.2f%%", ir->op, paper, 100.0 * (pm ? pm->density : m.density));
	if (pm)
		sb_printf(out, ", retained %.2f%%, unstructured bound %.2f%%", 100.0 * pm->retained,
		          100.0 * pm->bound_retained);
	sb_puts(out, ")\n");
}

void explain_metrics(StrBuf *out, const PruneMetrics *pm, const char *ind)
{
	sb_printf(out, "%skept %lld of %lld weights (density %.4g%%)\n", ind, (long long)pm->nkept,
	          (long long)pm->nreal, 100.0 * pm->density);
	sb_printf(out, "%sretained importance %.4f%%, loss rate %.4f%%\n", ind,
	          100.0 * pm->retained, 100.0 * pm->loss);
	sb_printf(out, "%sunstructured bound at that density: retained %.4f%%, loss %.4f%%\n", ind,
	          100.0 * pm->bound_retained, 100.0 * pm->bound_loss);
	if (isinf(pm->loss_ratio))
		sb_printf(out, "%sloss beyond the bound %.4f points (the bound loses nothing)\n", ind,
		          100.0 * pm->loss_over_bound);
	else
		sb_printf(out, "%sloss beyond the bound %.4f points (%.3fx the bound's loss)\n", ind,
		          100.0 * pm->loss_over_bound, pm->loss_ratio);
	sb_printf(out, "%slog mask diversity %.2f\n", ind, pm->log_diversity);
	if (pm->has_output_error)
		sb_printf(out, "%srelative output error ||WX - W_sX|| / ||WX|| = %.6f\n", ind,
		          pm->output_error);
}

void explain_nest(StrBuf *out, const Pir *ir, const char *ind)
{
	PirMetrics m;
	pir_metrics(ir, &m);
	char paper[PIR_PAPER_MAX];
	pir_print_paper(ir, paper, sizeof paper);
	sb_printf(out, "%s%s\n", ind, paper);
	sb_printf(out, "%s  %-10s %-22s %8s %8s %10s %10s %10s %9s %10s\n", ind, "loop", "axis[ext]*stride",
	          "len", "keep", "val.stride", "W", "Q", "regions", "ln(div)");
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		const PirLoopMetrics *lm = &m.loop[i];
		char comps[128] = "";
		size_t o = 0;
		for (int c = 0; c < l->ncomp && o < sizeof comps; c++) {
			int w = snprintf(comps + o, sizeof comps - o, "%s%s[%lld]*%lld", c ? "." : "",
			                 pir_axis_names[l->comp[c].axis], (long long)l->comp[c].extent,
			                 (long long)l->comp[c].stride);
			if (w < 0)
				break;
			o += (size_t)w;
		}
		bool perf = pir_loop_is_perforated(l);
		char keep[24] = "-", div[24] = "-";
		if (perf) {
			snprintf(keep, sizeof keep, "%lld", (long long)l->nnz);
			snprintf(div, sizeof div, "%.2f", lm->log_diversity);
		}
		sb_printf(out, "%s  %-10s %-22s %8lld %8s %10lld %10lld %10lld %9lld %10s%s\n", ind, l->name,
		          comps, (long long)l->len, keep, (long long)lm->value_stride, (long long)lm->W,
		          (long long)lm->Q, (long long)lm->regions, div, l->condensed ? "  condensed" : "");
	}
	sb_printf(out, "%s  density %.4g%%, log mask diversity %.2f", ind, 100.0 * m.density,
	          m.log_diversity);
	for (int a = 0; a < PIR_NAXES; a++)
		if (m.pad[a])
			sb_printf(out, ", padding %s %lld -> %lld (+%lld)", pir_axis_names[a],
			          (long long)ir->len[a], (long long)ir->ext[a], (long long)m.pad[a]);
	sb_putc(out, '\n');
}

static void explain_storage(StrBuf *out, const OpResult *op)
{
	const Pir *ir = op->ir;
	PirMetrics m;
	pir_metrics(ir, &m);
	sb_puts(out, "  storage (Fractal-ELL):\n    values [");
	for (int i = 0; i < ir->nloops; i++)
		sb_printf(out, "%s%lld", i ? ", " : "", (long long)m.loop[i].extent);
	sb_puts(out, "], flattened strides [");
	for (int i = 0; i < ir->nloops; i++)
		sb_printf(out, "%s%lld", i ? ", " : "", (long long)m.loop[i].value_stride);
	double vbytes = (double)m.values * dtype_bytes[op->shape.dtype]; /* can pass 2^63 */
	sb_printf(out, "]\n    %lld values (%s, %.0f bytes) of %lld dense weights", (long long)m.values,
	          pat_dtype_names[op->shape.dtype], vbytes, (long long)(op->shape.M * op->shape.K));
	if (m.pad[PIR_AXIS_M] || m.pad[PIR_AXIS_K])
		sb_printf(out, " (%lld with padding)", (long long)m.dense_padded);
	sb_putc(out, '\n');
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		if (!pir_loop_is_perforated(l))
			continue;
		sb_printf(out, "    index %s [%lld, %lld] = %lld entries in 0..%lld\n", l->name,
		          (long long)m.loop[i].regions, (long long)l->nnz, (long long)m.loop[i].index_len,
		          (long long)l->len - 1);
	}
	sb_printf(out, "    density %.4g%% (sparsity %.4g%%), log mask diversity %.2f\n",
	          100.0 * m.density, 100.0 * (1 - m.density), m.log_diversity);
}

static void explain_binding(StrBuf *out, const char *what, const WeightBinding *w)
{
	switch (w->kind) {
	case WEIGHTS_NONE: sb_printf(out, "  %s: not set\n", what); break;
	case WEIGHTS_RANDOM:
		sb_printf(out, "  %s: random(seed = %lld, kind = %s", what, (long long)w->seed,
		          synth_kind_names[w->synth]);
		if (w->synth == SYNTH_HEADS)
			sb_printf(out, ", group = %lld", (long long)w->group);
		sb_puts(out, ")\n");
		break;
	case WEIGHTS_NPY: sb_printf(out, "  %s: npy(\"%s\")\n", what, w->path); break;
	case WEIGHTS_SAFETENSORS:
		sb_printf(out, "  %s: safetensors(\"%s\", \"%s\")\n", what, w->path, w->tensor);
		break;
	}
}

void explain_op(StrBuf *out, const OpResult *op, const Diag *diag, const PruneOp *pruned)
{
	sb_printf(out, "op %s: spmm M=%lld K=%lld N=%lld dtype=%s layout=%s\n", op->name,
	          (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N, pat_dtype_names[op->shape.dtype],
	          pat_layout_names[op->shape.layout]);
	explain_binding(out, "weights", &op->weights);
	if (op->calibration.kind != WEIGHTS_NONE)
		explain_binding(out, "calibration", &op->calibration);
	if (op->importance == PAT_IMP_TENSOR)
		explain_binding(out, "importance scores", &op->scores);
	else
		sb_printf(out, "  importance: %s\n", pat_importance_names[op->importance]);
	sb_printf(out, "  rank: %s\n", pat_rank_names[op->rank]);
	if (op->search.given) {
		const OpSearch *q = &op->search;
		sb_puts(out, "  search:");
		const char *sep = " ";
		if (q->sparsity >= 0)
			sb_printf(out, "%ssparsity %.4g%%", sep, 100 * q->sparsity), sep = ", ";
		if (q->tolerance >= 0)
			sb_printf(out, "%stolerance %.4g%%", sep, 100 * q->tolerance), sep = ", ";
		if (q->budget >= 0)
			sb_printf(out, "%sbudget %.4g%%", sep, 100 * q->budget), sep = ", ";
		if (q->max_sparsity >= 0)
			sb_printf(out, "%smax_sparsity %.4g%%", sep, 100 * q->max_sparsity), sep = ", ";
		const int iv[] = {q->max_depth, q->min_length, q->max_pattern, q->topk};
		static const char *const in[] = {"max_depth", "min_length", "max_pattern", "topk"};
		for (int i = 0; i < 4; i++)
			if (iv[i] >= 0)
				sb_printf(out, "%s%s %d", sep, in[i], iv[i]), sep = ", ";
		sb_puts(out, strcmp(sep, " ") ? "\n" : " (defaults)\n");
	}
	if (!op->ir)
		return;
	Pir start;
	pir_init(&start, op->name, op->shape.M, op->shape.K);
	sb_puts(out, "  start:\n");
	explain_nest(out, &start, "    ");
	for (int i = 0; i < op->ntrace; i++) {
		const TraceStep *t = &op->trace[i];
		char text[PIR_PRIM_TEXT_MAX];
		pir_prim_format(&t->prim, text, sizeof text);
		const char *file = t->loc.file > 0 && t->loc.file < diag->nfiles
		                       ? diag->files[t->loc.file].path : "?";
		sb_printf(out, "  step %d: %s    (%s:%d", i + 1, text, file, t->loc.line);
		if (t->pattern)
			sb_printf(out, ", pattern %s", t->pattern);
		sb_puts(out, ")\n");
		Pir ir;
		trace_step_ir(t, &ir);
		explain_nest(out, &ir, "    ");
	}
	explain_storage(out, op);
	if (pruned) {
		sb_puts(out, "  pruned:\n");
		explain_metrics(out, &pruned->metrics, "    ");
	}
}
