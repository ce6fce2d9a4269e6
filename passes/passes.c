/* SPDX-License-Identifier: MIT */
/* passes.c - the pass table and pir_apply, the one entry point for running a
 * primitive on a PatternIR.  Guarantees: a refused primitive leaves the IR
 * byte-for-byte untouched, and an accepted one leaves a verified IR (a
 * failing verification after a successful pass is an internal error). */
#include "passes.h"
#include "../support/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const PirPassFn pir_passes[PIR_NPRIMS] = {
#define X(e, name, fn) fn,
#include "../ir/primitives.def"
#undef X
};

bool pir_apply(Pir *ir, const PirPrim *p, PirReason *why)
{
	memset(why, 0, sizeof *why);
	PATC_ASSERT((unsigned)p->kind < PIR_NPRIMS);
	Pir *scratch = malloc(sizeof *scratch);
	if (!scratch)
		util_oom();
	*scratch = *ir;
	bool ok = pir_passes[p->kind](scratch, p, why);
	if (ok) {
		char bad[256];
		if (!pir_verify(scratch, bad, sizeof bad))
			util_ice(__FILE__, __LINE__, "%s produced invalid PatternIR: %s",
			         pir_prim_names[p->kind], bad);
		*ir = *scratch;
	} else {
		PATC_ASSERT(why->error[0]);
	}
	free(scratch);
	return ok;
}

bool pass_refuse(PirReason *why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why->error, sizeof why->error, fmt, ap);
	va_end(ap);
	return false;
}

void pass_hint(PirReason *why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why->hint, sizeof why->hint, fmt, ap);
	va_end(ap);
}

void pass_warn(PirReason *why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why->warning, sizeof why->warning, fmt, ap);
	va_end(ap);
}

int pass_loop(const Pir *ir, const char *name, PirReason *why)
{
	int i = pir_find(ir, name);
	if (i >= 0)
		return i;
	char list[256] = "";
	size_t n = 0;
	for (int j = 0; j < ir->nloops && n < sizeof list; j++) {
		int w = snprintf(list + n, sizeof list - n, "%s%s", j ? ", " : "", ir->loops[j].name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
	pir_name_copy(why->subject, name);
	pass_refuse(why, "no loop named '%s'", name);
	pass_hint(why, "the loops here are: %s", list);
	return -1;
}

bool pass_fresh_name(const Pir *ir, const char *name, PirReason *why)
{
	pir_name_copy(why->subject, name);
	if (!pir_name_valid(name))
		return pass_refuse(why, "'%s' is not a valid loop name (at most %d characters)", name,
		                   PIR_NAME_MAX - 1);
	if (pir_find(ir, name) >= 0)
		return pass_refuse(why, "a loop named '%s' already exists", name);
	why->subject[0] = 0;
	return true;
}
