/* SPDX-License-Identifier: MIT */
/* emit_weights.c - `--emit=weights -o FILE.safetensors`: the packed
 * Fractal-ELL tensors of every op, readable by any safetensors reader.
 *
 * For op OP: `OP.values` (the op's dtype, shape = the loop list with each
 * perforated loop's length replaced by its nnz), `OP.index.LOOP` (I32,
 * [regions, nnz], positions in 0..len-1 relative to the parent tile) for
 * every perforated loop, `OP.bias` (F32, [M]) where the op has one, and
 * with --mask `OP.mask` (U8, [M, K]).  String metadata: the PatternIR text
 * form and paper notation, shapes, dtype, the epilogue (activation,
 * accumulate), importance and rank, and every metric, each key prefixed
 * with `OP.`, plus `patc.version`.
 */
#include "emit_weights.h"
#include "../support/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { META_PER_OP = 24 };

_Static_assert((int)PIR_MAX_LOOPS <= (int)TENSOR_MAX_RANK, "the values tensor has a dimension a loop");

typedef struct Meta {
	int n, cap;
	const char **key, **value;
	Arena *arena;
} Meta;

static void meta(Meta *m, const char *op, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void meta(Meta *m, const char *op, const char *key, const char *fmt, ...)
{
	PATC_ASSERT(m->n < m->cap);
	va_list ap;
	va_start(ap, fmt);
	m->value[m->n] = arena_vprintf(m->arena, fmt, ap); /* (a PatternIR's text may run to tens of KB) */
	va_end(ap);
	m->key[m->n] = op ? arena_printf(m->arena, "%s.%s", op, key) : key;
	m->n++;
}

static void shape_json(char *buf, size_t len, const int64_t *shape, int rank)
{
	size_t o = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < rank && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

/* The op's metadata: its PatternIR, pattern, shapes, settings and metrics
 * (values_shape: the packed values' shape, of rank vrank). */
static void op_meta(Meta *m, const OpResult *op, const PruneOp *p, const int64_t *values_shape, int vrank)
{
	const Pir *ir = op->ir;
	char *text = pir_print_text(ir), paper[PIR_PAPER_MAX], buf[PIR_MAX_LOOPS * 24];
	pir_print_paper(ir, paper, sizeof paper);
	meta(m, op->name, "pir", "%s", text);
	free(text);
	meta(m, op->name, "pattern", "%s", paper);
	int64_t shape[2] = {op->shape.M, op->shape.K};
	shape_json(buf, sizeof buf, shape, 2);
	meta(m, op->name, "shape", "%s", buf);
	shape_json(buf, sizeof buf, values_shape, vrank);
	meta(m, op->name, "values_shape", "%s", buf);
	meta(m, op->name, "dtype", "%s", pat_dtype_names[op->shape.dtype]);
	meta(m, op->name, "layout", "%s", pat_layout_names[op->shape.layout]);
	meta(m, op->name, "activation", "%s", pat_act_names[op->shape.act]);
	meta(m, op->name, "accumulate", "%s", op->shape.accumulate ? "true" : "false");
	meta(m, op->name, "importance", "%s", pat_importance_names[op->importance]);
	meta(m, op->name, "rank", "%s", pat_rank_names[op->rank]);
	const PruneMetrics *pr = &p->metrics;
	meta(m, op->name, "density", "%.9g", pr->density);
	meta(m, op->name, "retained", "%.9g", pr->retained);
	meta(m, op->name, "loss", "%.9g", pr->loss);
	meta(m, op->name, "bound_retained", "%.9g", pr->bound_retained);
	meta(m, op->name, "bound_loss", "%.9g", pr->bound_loss);
	meta(m, op->name, "loss_over_bound", "%.9g", pr->loss_over_bound);
	meta(m, op->name, "loss_ratio", "%.9g", pr->loss_ratio);
	meta(m, op->name, "log_diversity", "%.9g", pr->log_diversity);
	if (pr->has_output_error)
		meta(m, op->name, "output_error", "%.9g", pr->output_error);
}

bool emit_weights(const char *path, const Program *prog, const PruneOp *pruned, bool with_mask,
                  const char *version, char err[TENSOR_ERR_MAX])
{
	Arena arena;
	arena_init(&arena);
	Meta *m = calloc(1, sizeof *m);
	int cap = prog->nops * (PIR_MAX_LOOPS + 3) + 1, nt = 0;
	StWrite *t = calloc((size_t)cap, sizeof *t);
	void **owned = calloc((size_t)cap, sizeof *owned);
	if (!m || !t || !owned)
		util_oom();
	m->arena = &arena;
	m->cap = 1 + prog->nops * META_PER_OP;
	m->key = arena_alloc(&arena, (size_t)m->cap * sizeof *m->key);
	m->value = arena_alloc(&arena, (size_t)m->cap * sizeof *m->value);
	meta(m, NULL, "patc.version", "%s", version);
	for (int i = 0; i < prog->nops; i++) {
		const OpResult *op = &prog->ops[i];
		const PruneOp *p = &pruned[i];
		const Pir *ir = op->ir;
		PirMetrics pm;
		pir_metrics(ir, &pm);
		/* values, in the op's dtype */
		StWrite *v = &t[nt];
		v->name = arena_printf(&arena, "%s.values", op->name);
		v->rank = ir->nloops;
		for (int l = 0; l < ir->nloops; l++)
			v->shape[l] = ir->loops[l].nnz;
		const float *vals = p->values;
		if (op->shape.dtype == PAT_F32) {
			v->dtype = DT_F32;
			v->data = vals;
		} else {
			uint16_t *h = malloc((size_t)(pm.values > 0 ? pm.values : 1) * sizeof(uint16_t));
			if (!h)
				util_oom();
			for (int64_t j = 0; j < pm.values; j++)
				h[j] = op->shape.dtype == PAT_F16 ? f32_to_fp16(vals[j]) : f32_to_bf16(vals[j]);
			v->dtype = op->shape.dtype == PAT_F16 ? DT_F16 : DT_BF16;
			v->data = owned[nt] = h;
		}
		nt++;
		/* one index tensor per perforated loop */
		for (int l = 0; l < ir->nloops; l++) {
			if (!p->mask.index[l])
				continue;
			StWrite *x = &t[nt++];
			x->name = arena_printf(&arena, "%s.index.%s", op->name, ir->loops[l].name);
			x->dtype = DT_I32;
			x->rank = 2;
			x->shape[0] = p->mask.rows[l];
			x->shape[1] = ir->loops[l].nnz;
			x->data = p->mask.index[l];
		}
		if (p->bias) {
			StWrite *x = &t[nt++];
			x->name = arena_printf(&arena, "%s.bias", op->name);
			x->dtype = DT_F32;
			x->rank = 1;
			x->shape[0] = op->shape.M;
			x->data = p->bias;
		}
		if (with_mask) {
			uint8_t *mk = malloc((size_t)(op->shape.M * op->shape.K));
			if (!mk)
				util_oom();
			prune_dense_mask(ir, &p->mask, op->shape.M, op->shape.K, mk);
			StWrite *x = &t[nt];
			x->name = arena_printf(&arena, "%s.mask", op->name);
			x->dtype = DT_U8;
			x->rank = 2;
			x->shape[0] = op->shape.M;
			x->shape[1] = op->shape.K;
			x->data = owned[nt] = mk;
			nt++;
		}
		op_meta(m, op, p, v->shape, v->rank);
	}
	bool ok = st_write_file(path, t, nt, m->key, m->value, m->n, err);
	for (int i = 0; i < cap; i++)
		free(owned[i]);
	free(owned);
	free(t);
	free(m);
	arena_free(&arena);
	return ok;
}
