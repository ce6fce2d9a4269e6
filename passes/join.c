/* SPDX-License-Identifier: MIT */
/* join.c - `join A, B, ... -> AB`: merge adjacent loops into one.
 *
 * The inverse of split: the loops must be adjacent in the nest and listed in
 * nest order; the joined loop's components are theirs, most significant
 * first, and neighbouring components that are contiguous on one axis merge
 * into one (so split followed by join gives back the original loop).  Only
 * dense loops can be joined: a perforation is decided per loop.
 */
#include "passes.h"
#include "../support/util.h"

#include <stdio.h>
#include <string.h>

bool pass_join(Pir *ir, const PirPrim *p, PirReason *why)
{
	int n = p->u.join.n, first = -1;
	if (n < 2)
		return pass_refuse(why, "join needs at least two loops");
	for (int i = 0; i < n; i++) {
		const char *name = p->u.join.loops[i];
		int at = pass_loop(ir, name, why);
		if (at < 0)
			return false;
		for (int j = 0; j < i; j++)
			if (strcmp(p->u.join.loops[j], name) == 0)
				return pass_refuse(why, "join lists loop '%s' twice", name);
		pir_name_copy(why->subject, name);
		if (i == 0)
			first = at;
		else if (at != first + i) {
			int prev = pir_find(ir, p->u.join.loops[i - 1]);
			if (at == prev - 1)
				return pass_refuse(why,
				                   "cannot join '%s' and '%s': list them in nest order "
				                   "('%s' encloses '%s')",
				                   p->u.join.loops[i - 1], name, name, p->u.join.loops[i - 1]);
			pass_hint(why, "reorder them next to each other first");
			return pass_refuse(why, "cannot join '%s' and '%s': they are not adjacent in the nest",
			                   p->u.join.loops[i - 1], name);
		}
		if (pir_loop_is_perforated(&ir->loops[at])) {
			pass_hint(why, "join before perforating");
			return pass_refuse(why, "cannot join loop '%s': it is perforated", name);
		}
	}
	why->subject[0] = 0;
	if (!pass_fresh_name(ir, p->u.join.name, why))
		return false;
	PirLoop j;
	memset(&j, 0, sizeof j);
	pir_name_copy(j.name, p->u.join.name);
	j.len = 1;
	for (int i = 0; i < n; i++) {
		const PirLoop *l = &ir->loops[first + i];
		if (!util_mul_ok(j.len, l->len, &j.len))
			return pass_refuse(why, "joined loop '%s' is too long", p->u.join.name);
		for (int c = 0; c < l->ncomp; c++) {
			PirComp cc = l->comp[c];
			if (cc.extent == 1)
				continue; /* a length-1 digit: no place in the index */
			PirComp *last = j.ncomp ? &j.comp[j.ncomp - 1] : NULL;
			if (last && last->axis == cc.axis && last->stride == cc.stride * cc.extent) {
				last->extent *= cc.extent; /* contiguous: one digit */
				last->stride = cc.stride;
				continue;
			}
			if (j.ncomp == PIR_MAX_COMPS)
				return pass_refuse(why, "joined loop '%s' would have more than %d parts",
				                   p->u.join.name, PIR_MAX_COMPS);
			j.comp[j.ncomp++] = cc;
		}
	}
	if (j.ncomp == 0) /* all loops had length 1 */
		j.comp[j.ncomp++] = (PirComp){ir->loops[first].comp[0].axis, 1, 1};
	j.nnz = j.len;
	j.made = p->loc;
	if (ir->nrels == PIR_MAX_RELS)
		return pass_refuse(why, "too many splits and joins (at most %d)", PIR_MAX_RELS);
	PirRel *rel = &ir->rels[ir->nrels++];
	memset(rel, 0, sizeof *rel);
	rel->kind = PIR_REL_JOIN;
	rel->nfrom = n;
	rel->nto = 1;
	for (int i = 0; i < n; i++)
		pir_name_copy(rel->from[i], p->u.join.loops[i]);
	pir_name_copy(rel->to[0], j.name);

	ir->loops[first] = j;
	memmove(&ir->loops[first + 1], &ir->loops[first + n],
	        (size_t)(ir->nloops - first - n) * sizeof(PirLoop));
	ir->nloops -= n - 1;
	return true;
}
