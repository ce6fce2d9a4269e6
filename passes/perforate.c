/* perforate.c - `perforate L keep C` / `perforate L keep P%`.
 *
 * L then iterates over C kept indices in every selection region (every
 * combination of the loops outside it).  Which indices are kept is decided
 * later, by the pruner, from real importance scores; this pass fixes only
 * the count.  A percentage is rounded to the nearest count (halves up), with
 * a warning when that changes the density.
 */
#include "passes.h"


bool pass_perforate(Pir *ir, const PirPrim *p, PirReason *why)
{
	const char *name = p->u.perforate.loop;
	int li = pass_loop(ir, name, why);
	if (li < 0)
		return false;
	PirLoop *l = &ir->loops[li];
	if (pir_loop_is_perforated(l)) {
		pir_name_copy(why->subject, name);
		return pass_refuse(why, "loop '%s' is already perforated (keeps %lld of %lld)", name,
		                   (long long)l->nnz, (long long)l->len);
	}
	int64_t keep;
	if (p->u.perforate.is_percent) {
		PirPercent pc = p->u.perforate.percent;
		char pct[64];
		pir_percent_format(pc, pct, sizeof pct);
		int64_t hundred = 100; /* 100% in units of 10^-decimals percent */
		for (int i = 0; i < pc.decimals && i < PIR_PERCENT_DECIMALS; i++)
			hundred *= 10;
		if (pc.decimals < 0 || pc.decimals > PIR_PERCENT_DECIMALS || pc.num <= 0 ||
		    pc.num > hundred)
			return pass_refuse(why, "cannot keep %s%% of loop '%s': a percentage must be above 0 "
			                        "and at most 100", pct, name);
		/* round(len * num / hundred), halves up, in integers: len <= 2^31
		 * and num <= 10^8, so nothing overflows. */
		int64_t scaled = l->len * pc.num;
		keep = (2 * scaled + hundred) / (2 * hundred);
		if (keep < 1) {
			pass_hint(why, "keep at least 1 iteration (%.4g%% of %lld)", 100.0 / (double)l->len,
			          (long long)l->len);
			return pass_refuse(why, "keeping %s%% of the %lld iterations of loop '%s' keeps none",
			                   pct, (long long)l->len, name);
		}
		if (scaled % hundred != 0)
			pass_warn(why, "keep %s%% of %lld iterations of '%s' rounds to %lld (%.6g%%)", pct,
			          (long long)l->len, name, (long long)keep,
			          100.0 * (double)keep / (double)l->len);
	} else {
		keep = p->u.perforate.keep;
		if (keep < 1)
			return pass_refuse(why, "cannot keep %lld iterations of loop '%s': keep at least 1",
			                   (long long)keep, name);
		if (keep > l->len)
			return pass_refuse(why, "cannot keep %lld iterations of loop '%s': it has only %lld",
			                   (long long)keep, name, (long long)l->len);
	}
	if (keep == l->len)
		pass_warn(why, "perforating '%s' keeps all %lld iterations: the loop stays dense", name,
		          (long long)l->len);
	l->nnz = keep;
	l->perforated = p->loc;
	return true;
}
