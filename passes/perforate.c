/* SPDX-License-Identifier: MIT */
/* perforate.c - `perforate L keep C` / `perforate L keep P%`.
 *
 * L then iterates over C kept indices in every selection region (every
 * combination of the loops outside it).  Which indices are kept is decided
 * later, by the pruner, from real importance scores; this pass fixes only
 * the count.  A percentage is rounded to the nearest count (halves up), with
 * a warning when that changes the density.
 */
#include "passes.h"

#include <stdio.h>
#include <string.h>

/* Loop lengths reach 2^62 (a join of an m and a k loop of 2^31 each) and a
 * percentage's numerator 10^8 (100% with 6 decimals), so their product
 * needs 128 bits. */
__extension__ typedef unsigned __int128 u128;

/* round(len * num / hundred), halves up; at most len as num <= hundred.
 * *exact says whether no rounding was needed. */
static int64_t percent_count(int64_t len, int64_t num, int64_t hundred, bool *exact)
{
	u128 scaled = (u128)len * (u128)num;
	*exact = scaled % (u128)hundred == 0;
	return (int64_t)((2 * scaled + (u128)hundred) / (2 * (u128)hundred));
}

/* The exact percentage 100 * keep / len in decimal, to two digits past the
 * first that differs from the requested one (so a huge loop's rounding shows
 * where %g would print the request back), "..." where more digits follow. */
static void exact_percent(int64_t keep, int64_t len, PirPercent want, char *buf, size_t n)
{
	u128 num = (u128)keep * 100;
	int64_t whole = (int64_t)(num / (u128)len), scale = 1;
	u128 rem = num % (u128)len;
	for (int i = 0; i < want.decimals; i++)
		scale *= 10;
	const bool same = whole == want.num / scale;
	int64_t wfrac = want.num % scale;
	size_t o = (size_t)snprintf(buf, n, "%lld", (long long)whole);
	if (same && rem != 0 && o + 1 < n)
		buf[o++] = '.';
	int after = -1; /* digits written since the first that differs */
	for (int d = 0; same && rem != 0 && d < 48 && after < 2 && o + 1 < n; d++) {
		rem *= 10;
		int digit = (int)(rem / (u128)len);
		rem %= (u128)len;
		buf[o++] = (char)('0' + digit);
		scale /= 10;
		int wdigit = scale ? (int)(wfrac / scale % 10) : 0;
		if (after >= 0 || digit != wdigit)
			after++;
	}
	buf[o < n ? o : n - 1] = 0;
	if (rem != 0 && o + 4 <= n)
		snprintf(buf + o, n - o, "...");
}

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
		bool exact;
		keep = percent_count(l->len, pc.num, hundred, &exact);
		if (keep < 1) {
			pass_hint(why, "keep at least 1 iteration (%.4g%% of %lld)", 100.0 / (double)l->len,
			          (long long)l->len);
			return pass_refuse(why, "keeping %s%% of the %lld iterations of loop '%s' keeps none",
			                   pct, (long long)l->len, name);
		}
		if (!exact) {
			/* %.6g of the kept share, unless it reads as the request itself */
			char got[64], asked[64];
			snprintf(got, sizeof got, "%.6g", 100.0 * (double)keep / (double)l->len);
			snprintf(asked, sizeof asked, "%.6g", (double)pc.num * 100.0 / (double)hundred);
			if (strcmp(got, asked) == 0)
				exact_percent(keep, l->len, pc, got, sizeof got);
			pass_warn(why, "keep %s%% of %lld iterations of '%s' rounds to %lld (%s%%)", pct,
			          (long long)l->len, name, (long long)keep, got);
		}
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
