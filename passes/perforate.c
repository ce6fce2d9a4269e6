/* perforate.c - `perforate L keep C` / `perforate L keep P%`.
 *
 * L then iterates over C kept indices in every selection region (every
 * combination of the loops outside it).  Which indices are kept is decided
 * later, by the pruner, from real importance scores; this pass fixes only
 * the count.  A percentage is rounded to the nearest count (halves up), with
 * a warning when that changes the density.
 */
#include "passes.h"

#include <math.h>

bool pass_perforate(Pir *ir, const PirPrim *p, PirReason *why)
{
	const char *name = p->u.perforate.loop;
	int li = pass_loop(ir, name, why);
	if (li < 0)
		return false;
	PirLoop *l = &ir->loops[li];
	if (pir_loop_is_perforated(l))
		return pass_refuse(why, "loop '%s' is already perforated (keeps %lld of %lld)", name,
		                   (long long)l->nnz, (long long)l->len);
	int64_t keep;
	if (p->u.perforate.is_percent) {
		double pct = p->u.perforate.percent;
		if (!(pct > 0 && pct <= 100))
			return pass_refuse(why, "cannot keep %g%% of loop '%s': a percentage must be above 0 "
			                        "and at most 100", pct, name);
		double exact = (double)l->len * pct / 100.0;
		keep = (int64_t)floor(exact + 0.5);
		if (keep < 1) {
			pass_hint(why, "keep at least 1 iteration (%.4g%% of %lld)", 100.0 / (double)l->len,
			          (long long)l->len);
			return pass_refuse(why, "keeping %g%% of the %lld iterations of loop '%s' keeps none",
			                   pct, (long long)l->len, name);
		}
		if (fabs(exact - (double)keep) > 1e-9)
			pass_warn(why, "keep %g%% of %lld iterations of '%s' rounds to %lld (%.6g%%)", pct,
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
