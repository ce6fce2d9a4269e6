/* SPDX-License-Identifier: MIT */
/* pir_verify.c - the PatternIR verifier.
 *
 * Checks every invariant stated in pir.h.  Runs after every pass (pir_apply
 * does it in the front end and the tests) and after reading the text form.
 * A failure after a pass is a patc bug; after reading text it is bad input.
 */
#include "pir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fail(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(char *why, size_t n, const char *fmt, ...)
{
	if (why && n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return false;
}

typedef struct CompRef {
	int64_t stride, extent;
	int loop;
} CompRef;

static int cmp_stride(const void *a, const void *b)
{
	const CompRef *x = a, *y = b;
	return (x->stride > y->stride) - (x->stride < y->stride);
}

bool pir_verify(const Pir *ir, char *why, size_t n)
{
	if (!pir_name_valid(ir->op))
		return fail(why, n, "op name '%s' is not an identifier", ir->op);
	if (ir->nloops < 1 || ir->nloops > PIR_MAX_LOOPS)
		return fail(why, n, "%d loops (1..%d allowed)", ir->nloops, PIR_MAX_LOOPS);
	if (ir->nrels < 0 || ir->nrels > PIR_MAX_RELS)
		return fail(why, n, "%d relations", ir->nrels);
	for (int a = 0; a < PIR_NAXES; a++)
		if (ir->len[a] < 1 || ir->len[a] > PIR_MAX_EXTENT || ir->ext[a] > PIR_MAX_EXTENT)
			return fail(why, n, "axis %s: length %lld, padded extent %lld (1 to 2^31 allowed)",
			            pir_axis_names[a], (long long)ir->len[a], (long long)ir->ext[a]);

	CompRef comps[PIR_NAXES][PIR_MAX_LOOPS * PIR_MAX_COMPS];
	int ncomps[PIR_NAXES] = {0};
	bool covered[PIR_NAXES] = {false};
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		if (!pir_name_valid(l->name))
			return fail(why, n, "loop %d: bad name '%.*s'", i, PIR_NAME_MAX - 1, l->name);
		for (int j = 0; j < i; j++)
			if (strcmp(ir->loops[j].name, l->name) == 0)
				return fail(why, n, "loop name '%s' used twice", l->name);
		if (l->ncomp < 1 || l->ncomp > PIR_MAX_COMPS)
			return fail(why, n, "loop '%s': %d components", l->name, l->ncomp);
		int64_t len = 1;
		for (int c = 0; c < l->ncomp; c++) {
			const PirComp *pc = &l->comp[c];
			if ((unsigned)pc->axis >= PIR_NAXES)
				return fail(why, n, "loop '%s': bad axis", l->name);
			if (pc->extent < 1 || pc->stride < 1)
				return fail(why, n, "loop '%s': component extent %lld stride %lld",
				            l->name, (long long)pc->extent, (long long)pc->stride);
			if (__builtin_mul_overflow(len, pc->extent, &len))
				return fail(why, n, "loop '%s': length overflows", l->name);
			covered[pc->axis] = true;
			/* A unit component's digit is always 0: it takes no place. */
			if (pc->extent > 1)
				comps[pc->axis][ncomps[pc->axis]++] = (CompRef){pc->stride, pc->extent, i};
		}
		if (len != l->len)
			return fail(why, n, "loop '%s': length %lld but components multiply to %lld",
			            l->name, (long long)l->len, (long long)len);
		if (l->nnz < 1 || l->nnz > l->len)
			return fail(why, n, "loop '%s': keeps %lld of %lld iterations", l->name,
			            (long long)l->nnz, (long long)l->len);
		if (l->condensed && (!pir_loop_is_perforated(l) || !pir_loop_has_axis(l, PIR_AXIS_K)))
			return fail(why, n, "loop '%s': condensed but not a perforated k loop", l->name);
	}
	for (int a = 0; a < PIR_NAXES; a++) {
		if (!covered[a] && ir->len[a] != 1) /* a length-1 axis needs no loop */
			return fail(why, n, "no loop covers axis %s", pir_axis_names[a]);
		if (ir->ext[a] < ir->len[a])
			return fail(why, n, "axis %s: length %lld, padded extent %lld",
			            pir_axis_names[a], (long long)ir->len[a], (long long)ir->ext[a]);
		qsort(comps[a], (size_t)ncomps[a], sizeof(CompRef), cmp_stride);
		int64_t expect = 1;
		for (int c = 0; c < ncomps[a]; c++) {
			const CompRef *r = &comps[a][c];
			if (r->stride != expect)
				return fail(why, n,
				            "axis %s: loop '%s' has stride %lld where %lld is needed "
				            "(loops must tile the axis exactly)",
				            pir_axis_names[a], ir->loops[r->loop].name,
				            (long long)r->stride, (long long)expect);
			if (__builtin_mul_overflow(expect, r->extent, &expect))
				return fail(why, n, "axis %s: extent overflows", pir_axis_names[a]);
		}
		if (expect != ir->ext[a])
			return fail(why, n, "axis %s: loops cover %lld but the padded extent is %lld",
			            pir_axis_names[a], (long long)expect, (long long)ir->ext[a]);
	}
	for (int r = 0; r < ir->nrels; r++) {
		const PirRel *rel = &ir->rels[r];
		if (rel->nfrom < 1 || rel->nfrom > PIR_MAX_SPLIT || rel->nto < 1 || rel->nto > PIR_MAX_SPLIT)
			return fail(why, n, "relation %d: bad arity", r);
		if (rel->kind == PIR_REL_SPLIT && (rel->nfrom != 1 || rel->nto < 2))
			return fail(why, n, "relation %d: a split has one parent and 2+ children", r);
		if (rel->kind == PIR_REL_JOIN && (rel->nto != 1 || rel->nfrom < 2))
			return fail(why, n, "relation %d: a join has 2+ parents and one child", r);
	}
	return true;
}
