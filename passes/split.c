/* SPDX-License-Identifier: MIT */
/* split.c - `split L -> L0, L1, ... : f0, f1, ... [pad [P]]`.
 *
 * Replaces loop L by loops whose lengths multiply to L's length, the first
 * most significant (L0 = L / (f1*f2...), the Halide/TVM convention).  One
 * factor may be `_` (0 here) and is inferred.  When the factors multiply to
 * more than the length, the loop is padded, which must be asked for with
 * `pad` (amount implied) or `pad P` (amount checked): padding extends the
 * axis with zero weights of zero importance, so it is only possible on the
 * loop that is most significant on its axis (padding anything else would
 * overlap the next tile).  Splitting a joined loop carves its components;
 * every factor must fall on component boundaries or divide one.
 */
#include "passes.h"
#include "../support/util.h"

#include <stdio.h>
#include <string.h>

static const char *fmt_factors(const int64_t *f, int n, char *buf, size_t len)
{
	size_t o = 0;
	for (int i = 0; i < n && o < len; i++) {
		int w = f[i] ? snprintf(buf + o, len - o, "%s%lld", i ? "*" : "", (long long)f[i])
		             : snprintf(buf + o, len - o, "%s_", i ? "*" : "");
		if (w < 0)
			break;
		o += (size_t)w;
	}
	return buf;
}

/* Carves factor f off the front of the component list (c, *ci, *rem); the
 * front component has *rem of its extent left, whose lowest stride is the
 * component's stride.  Returns false when f straddles a component without
 * dividing it. */
static bool carve(const PirLoop *src, int *ci, int64_t *rem, int64_t f, PirLoop *dst)
{
	dst->ncomp = 0;
	while (f > 1 || dst->ncomp == 0) {
		const PirComp *c = &src->comp[*ci < src->ncomp ? *ci : src->ncomp - 1];
		if (*ci >= src->ncomp && f > 1)
			return false;
		if (dst->ncomp == PIR_MAX_COMPS)
			return false;
		if (f == 1) { /* a length-1 loop: a digit just above what is left */
			int64_t left = *ci < src->ncomp ? *rem : 1;
			dst->comp[dst->ncomp++] = (PirComp){c->axis, 1, c->stride * left};
			break;
		}
		if (f % *rem == 0) {
			dst->comp[dst->ncomp++] = (PirComp){c->axis, *rem, c->stride};
			f /= *rem;
			(*ci)++;
			if (*ci < src->ncomp)
				*rem = src->comp[*ci].extent;
		} else if (*rem % f == 0) {
			*rem /= f;
			dst->comp[dst->ncomp++] = (PirComp){c->axis, f, c->stride * *rem};
			f = 1;
			break;
		} else {
			return false;
		}
	}
	/* Skip exhausted unit components so the next factor starts cleanly. */
	while (*ci < src->ncomp && *rem == 1) {
		(*ci)++;
		if (*ci < src->ncomp)
			*rem = src->comp[*ci].extent;
	}
	return true;
}

/* Padding extends an axis with zero weights, so only the loop that is most
 * significant on its axis (and not joined) can be padded. */
static bool paddable(const Pir *ir, const PirLoop *l)
{
	return l->ncomp == 1 && l->comp[0].stride * l->len == ir->ext[l->comp[0].axis];
}

/* The most iterations a paddable loop may be padded to: its axis's padded
 * extent stays within PIR_MAX_EXTENT (2^31). */
static int64_t pad_limit(const PirLoop *l)
{
	return PIR_MAX_EXTENT / l->comp[0].stride;
}

/* Suggests padding loop l (of length len) to `to` iterations, or, where
 * padding is impossible, factors that fit. */
static void hint_pad(PirReason *why, const Pir *ir, const PirLoop *l, int64_t len, int64_t to,
                     bool amount)
{
	if (!paddable(ir, l)) {
		pass_hint(why, "'%s' cannot be padded (only the outermost loop of an axis can); choose "
		               "factors whose product is %lld",
		          l->name, (long long)len);
		return;
	}
	PirAxis a = l->comp[0].axis;
	if (to > pad_limit(l)) {
		pass_hint(why, "padding '%s' to %lld would make axis %s longer than 2^31; choose "
		               "factors whose product is %lld",
		          l->name, (long long)to, pir_axis_names[a], (long long)len);
		return;
	}
	int64_t s = l->comp[0].stride, from = ir->ext[a], grown = from + (to - len) * s;
	char how[32] = "pad";
	if (amount)
		snprintf(how, sizeof how, "pad %lld", (long long)(to - len));
	if (s == 1 && from == len)
		pass_hint(why, "add '%s' to pad '%s' from %lld to %lld with zero %s", how, l->name,
		          (long long)len, (long long)to, a == PIR_AXIS_M ? "rows" : "columns");
	else
		pass_hint(why, "add '%s' to pad '%s' from %lld to %lld iterations (axis %s %lld -> "
		               "%lld, zero %s)", how, l->name, (long long)len, (long long)to,
		          pir_axis_names[a], (long long)from, (long long)grown,
		          a == PIR_AXIS_M ? "rows" : "columns");
}

/* The new loops' names: fresh, and distinct. */
static bool split_names(const Pir *ir, const PirPrim *p, PirReason *why)
{
	const char *name = p->u.split.loop;
	const int n = p->u.split.n;
	for (int i = 0; i < n; i++) {
		if (!pass_fresh_name(ir, p->u.split.names[i], why))
			return false;
		for (int j = 0; j < i; j++)
			if (strcmp(p->u.split.names[i], p->u.split.names[j]) == 0)
				return pass_refuse(why, "split of '%s' names loop '%s' twice", name,
				                   p->u.split.names[i]);
	}
	return true;
}

/* The split's factors into f (a '_' inferred; with pad, the padding the
 * factors make), their product into *prod_out and their text into fs
 * (160 bytes): checked against the loop's length and the size limit. */
static bool split_factors(const Pir *ir, const PirPrim *p, const PirLoop *parent_in, int64_t *f, int64_t *prod_out,
                          char *fs, PirReason *why)
{
	const char *name = p->u.split.loop;
	const int n = p->u.split.n;
	const PirLoop parent = *parent_in;
	int64_t known = 1;
	int wild = -1;
	for (int i = 0; i < n; i++) {
		f[i] = p->u.split.factor[i];
		if (f[i] < 0)
			return pass_refuse(why, "split factor %lld of loop '%s' is not positive",
			                   (long long)f[i], name);
		if (f[i] == 0) {
			if (wild >= 0)
				return pass_refuse(why, "split of '%s' has more than one '_' factor", name);
			wild = i;
		} else if (!util_mul_ok(known, f[i], &known) || known > PIR_MAX_EXTENT) {
			return pass_refuse(why, "split factors of loop '%s' multiply to more than 2^31",
			                   name);
		}
	}
	int64_t len = parent.len;
	bool pad = p->u.split.pad;
	int64_t want = p->u.split.pad_amount; /* -1: whatever is needed */
	/* The size limit before divisibility: no factors make such a pad right
	 * (and len + want stays in range below). */
	if (pad && want > 0 && paddable(ir, &parent) && want > pad_limit(&parent) - len)
		return pass_refuse(why, "padding loop '%s' of length %lld by %lld makes axis %s longer "
		                        "than 2^31", name, (long long)len, (long long)want,
		                   pir_axis_names[parent.comp[0].axis]);
	if (pad && want > PIR_MAX_EXTENT)
		return pass_refuse(why, "pad %lld of loop '%s' is more than 2^31", (long long)want, name);
	if (wild >= 0) {
		int64_t up = (len + known - 1) / known;
		if (pad && want < 0) {
			if (up * known > len && paddable(ir, &parent) && up * known > pad_limit(&parent))
				return pass_refuse(why, "padding loop '%s' of length %lld to %lld (a multiple of "
				                        "%lld) makes axis %s longer than 2^31", name,
				                   (long long)len, (long long)(up * known), (long long)known,
				                   pir_axis_names[parent.comp[0].axis]);
			f[wild] = up;
		} else {
			int64_t target = len + (pad ? want : 0);
			if (target % known != 0) {
				if (!pad)
					hint_pad(why, ir, &parent, len, up * known, false);
				return pass_refuse(why,
				                   "cannot split loop '%s' of length %lld%s as %s: %lld does not "
				                   "divide %lld",
				                   name, (long long)len, pad ? " plus its pad" : "",
				                   fmt_factors(f, n, fs, 160), (long long)known,
				                   (long long)target);
			}
			f[wild] = target / known;
		}
	}
	int64_t prod = 1;
	for (int i = 0; i < n; i++)
		if (!util_mul_ok(prod, f[i], &prod) || prod > PIR_MAX_EXTENT)
			return pass_refuse(why, "split factors of loop '%s' multiply to more than 2^31", name);
	fmt_factors(f, n, fs, 160);
	if (!pad && prod != len) {
		if (prod > len)
			hint_pad(why, ir, &parent, len, prod, true);
		else
			pass_hint(why, "choose factors whose product is %lld, or use '_' for one of them",
			          (long long)len);
		return pass_refuse(why, "split factors %s = %lld do not %s length %lld of loop '%s'", fs,
		                   (long long)prod, prod > len ? "match the" : "cover the",
		                   (long long)len, name);
	}
	if (pad && want >= 0 && prod != len + want)
		return pass_refuse(why,
		                   "split factors %s = %lld do not equal the length %lld of loop '%s' "
		                   "plus pad %lld = %lld",
		                   fs, (long long)prod, (long long)len, name, (long long)want,
		                   (long long)(len + want));
	if (pad && prod < len)
		return pass_refuse(why, "split factors %s = %lld do not cover the length %lld of loop '%s'",
		                   fs, (long long)prod, (long long)len, name);
	*prod_out = prod;
	return true;
}

/* The padding (prod past the loop's length) onto the loop and its axis,
 * where the loop may be padded; *padding_out: how much. */
static bool split_pad(Pir *ir, const PirPrim *p, PirLoop *parent, int64_t prod, const int64_t *f,
                      int64_t *padding_out, PirReason *why)
{
	const char *name = p->u.split.loop;
	const int64_t len = parent->len, padding = prod - len;
	*padding_out = padding;
	if (padding > 0) {
		PirAxis a = parent->comp[0].axis;
		if (parent->ncomp != 1)
			return pass_refuse(why, "cannot pad loop '%s': it joins several loops", name);
		if (!paddable(ir, parent)) {
			pass_hint(why, "pad when splitting the outermost loop of axis %s",
			          pir_axis_names[a]);
			return pass_refuse(why,
			                   "cannot pad loop '%s': only the outermost loop of axis %s can be "
			                   "padded, and '%s' is nested in another %s loop",
			                   name, pir_axis_names[a], name, pir_axis_names[a]);
		}
		int64_t ext;
		if (!util_mul_ok(parent->comp[0].stride, prod, &ext) || ext > PIR_MAX_EXTENT)
			return pass_refuse(why, "padding loop '%s' to %lld makes axis %s longer than 2^31",
			                   name, (long long)prod, pir_axis_names[a]);
		if (padding >= prod / f[0])
			pass_warn(why, "pad %lld on loop '%s' makes at least one '%s' iteration all padding",
			          (long long)padding, name, p->u.split.names[0]);
		parent->comp[0].extent = prod;
		parent->len = prod;
		ir->ext[a] = ext;
	}
	return true;
}

/* The loop at li replaced by the split's loops, and the split recorded. */
static bool split_apply(Pir *ir, const PirPrim *p, int li, PirLoop *parent, const int64_t *f, int64_t padding,
                        const char *fs, PirReason *why)
{
	const char *name = p->u.split.loop;
	const int n = p->u.split.n;
	PirLoop kids[PIR_MAX_SPLIT];
	int ci = 0;
	int64_t rem = parent->comp[0].extent;
	for (int i = 0; i < n; i++) {
		PirLoop *k = &kids[i];
		memset(k, 0, sizeof *k);
		if (!carve(parent, &ci, &rem, f[i], k)) {
			pass_hint(why, "split the loops before joining them, or choose factors that "
			               "divide the joined components");
			return pass_refuse(why,
			                   "cannot split joined loop '%s' as %s: factor %lld straddles "
			                   "the loops it joins",
			                   name, fs, (long long)f[i]);
		}
		pir_name_copy(k->name, p->u.split.names[i]);
		k->len = k->nnz = f[i];
		k->made = p->loc;
	}
	if (ir->nrels == PIR_MAX_RELS)
		return pass_refuse(why, "too many splits and joins (at most %d)", PIR_MAX_RELS);
	PirRel *rel = &ir->rels[ir->nrels++];
	memset(rel, 0, sizeof *rel);
	rel->kind = PIR_REL_SPLIT;
	rel->nfrom = 1;
	rel->nto = n;
	pir_name_copy(rel->from[0], name);
	for (int i = 0; i < n; i++) {
		pir_name_copy(rel->to[i], kids[i].name);
		rel->factor[i] = f[i];
	}
	rel->pad = padding;

	memmove(&ir->loops[li + n], &ir->loops[li + 1],
	        (size_t)(ir->nloops - li - 1) * sizeof(PirLoop));
	memcpy(&ir->loops[li], kids, (size_t)n * sizeof(PirLoop));
	ir->nloops += n - 1;
	return true;
}

bool pass_split(Pir *ir, const PirPrim *p, PirReason *why)
{
	const char *name = p->u.split.loop;
	int li = pass_loop(ir, name, why);
	if (li < 0)
		return false;
	int n = p->u.split.n;
	PirLoop parent = ir->loops[li];
	if (n < 2 || n > PIR_MAX_SPLIT)
		return pass_refuse(why, "cannot split loop '%s' into %d loops (2 to %d allowed)", name, n,
		                   PIR_MAX_SPLIT);
	if (pir_loop_is_perforated(&parent)) {
		pass_hint(why, "split '%s' before perforating it", name);
		return pass_refuse(why, "cannot split loop '%s': it is perforated (keeps %lld of %lld)",
		                   name, (long long)parent.nnz, (long long)parent.len);
	}
	if (ir->nloops - 1 + n > PIR_MAX_LOOPS)
		return pass_refuse(why, "cannot split loop '%s': the nest would have more than %d loops",
		                   name, PIR_MAX_LOOPS);
	if (!split_names(ir, p, why))
		return false;
	int64_t f[PIR_MAX_SPLIT], prod = 0, padding = 0;
	char fs[160];
	return split_factors(ir, p, &parent, f, &prod, fs, why) && split_pad(ir, p, &parent, prod, f, &padding, why) &&
	       split_apply(ir, p, li, &parent, f, padding, fs, why);
}
