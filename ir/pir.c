/* SPDX-License-Identifier: MIT */
/* pir.c - PatternIR construction, lookup and structural equality. */
#include "pir.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *const pir_axis_names[PIR_NAXES] = {"m", "k"};

const char *const pir_prim_names[PIR_NPRIMS] = {
#define X(e, name, fn) name,
#include "primitives.def"
#undef X
};

void pir_name_copy(char dst[PIR_NAME_MAX], const char *src)
{
	size_t n = strlen(src);
	if (n >= PIR_NAME_MAX)
		n = PIR_NAME_MAX - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

static void loop_init(PirLoop *l, const char *name, PirAxis axis, int64_t len)
{
	memset(l, 0, sizeof *l);
	pir_name_copy(l->name, name);
	l->ncomp = 1;
	l->comp[0] = (PirComp){axis, len, 1};
	l->len = l->nnz = len;
}

void pir_init(Pir *ir, const char *op, int64_t m, int64_t k)
{
	memset(ir, 0, sizeof *ir);
	pir_name_copy(ir->op, op);
	ir->len[PIR_AXIS_M] = ir->ext[PIR_AXIS_M] = m;
	ir->len[PIR_AXIS_K] = ir->ext[PIR_AXIS_K] = k;
	ir->nloops = 2;
	loop_init(&ir->loops[0], "m", PIR_AXIS_M, m);
	loop_init(&ir->loops[1], "k", PIR_AXIS_K, k);
}

int pir_find(const Pir *ir, const char *name)
{
	for (int i = 0; i < ir->nloops; i++)
		if (strcmp(ir->loops[i].name, name) == 0)
			return i;
	return -1;
}

bool pir_loop_has_axis(const PirLoop *l, PirAxis a)
{
	for (int c = 0; c < l->ncomp; c++)
		if (l->comp[c].axis == a)
			return true;
	return false;
}

bool pir_loop_spans_axis(const PirLoop *l, PirAxis a)
{
	for (int c = 0; c < l->ncomp; c++)
		if (l->comp[c].axis == a && l->comp[c].extent > 1)
			return true;
	return false;
}

bool pir_loop_is_perforated(const PirLoop *l) { return l->nnz < l->len; }

bool pir_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= PIR_NAME_MAX)
		return false;
	if (!isalpha((unsigned char)name[0]) && name[0] != '_')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return false;
	return true;
}

/* Source locations are diagnostics, not structure: they are ignored. */
static bool loop_equal(const PirLoop *a, const PirLoop *b)
{
	if (strcmp(a->name, b->name) || a->ncomp != b->ncomp || a->len != b->len ||
	    a->nnz != b->nnz || a->condensed != b->condensed)
		return false;
	for (int c = 0; c < a->ncomp; c++)
		if (a->comp[c].axis != b->comp[c].axis ||
		    a->comp[c].extent != b->comp[c].extent ||
		    a->comp[c].stride != b->comp[c].stride)
			return false;
	return true;
}

static bool rel_equal(const PirRel *a, const PirRel *b)
{
	if (a->kind != b->kind || a->nfrom != b->nfrom || a->nto != b->nto || a->pad != b->pad)
		return false;
	for (int i = 0; i < a->nfrom; i++)
		if (strcmp(a->from[i], b->from[i]))
			return false;
	for (int i = 0; i < a->nto; i++)
		if (strcmp(a->to[i], b->to[i]) ||
		    (a->kind == PIR_REL_SPLIT && a->factor[i] != b->factor[i]))
			return false;
	return true;
}

bool pir_equal(const Pir *a, const Pir *b)
{
	if (strcmp(a->op, b->op) || a->nloops != b->nloops || a->nrels != b->nrels)
		return false;
	for (int x = 0; x < PIR_NAXES; x++)
		if (a->len[x] != b->len[x] || a->ext[x] != b->ext[x])
			return false;
	for (int i = 0; i < a->nloops; i++)
		if (!loop_equal(&a->loops[i], &b->loops[i]))
			return false;
	for (int i = 0; i < a->nrels; i++)
		if (!rel_equal(&a->rels[i], &b->rels[i]))
			return false;
	return true;
}
