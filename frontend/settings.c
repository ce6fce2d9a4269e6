/* SPDX-License-Identifier: MIT */
/* settings.c - an op's settings (`weights = ...`, bias, calibration,
 * importance, rank, search): each given once, in the op's body, not in a
 * pattern's; tensor sources (safetensors, npy, random) bound and their
 * files found beside the source file, search(...)'s percentages and
 * integers checked against their ranges. */
#define _DEFAULT_SOURCE
#include "sema_impl.h"
#include "../support/util.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Binds a tensor source call: safetensors(file, tensor), npy(file) or, where
 * allowed, random(seed, kind, group).  False after an error. */
static bool bind_source(Sema *S, const Call *c, SrcLoc loc, bool allow_random, WeightBinding *out)
{
	static const char *const st_names[] = {"file", "tensor"};
	static const char *const npy_names[] = {"file"};
	static const char *const rnd_names[] = {"seed", "kind", "group"};
	const char *src = c->callee->name;
	Value v[3];
	bool given[3] = {false, false, false};
	Binder b;
	WeightKind kind;
	if (strcmp(src, "safetensors") == 0)
		kind = WEIGHTS_SAFETENSORS, b = (Binder){"safetensors", 2, st_names, v, given};
	else if (strcmp(src, "npy") == 0)
		kind = WEIGHTS_NPY, b = (Binder){"npy", 1, npy_names, v, given};
	else if (strcmp(src, "random") == 0 && allow_random)
		kind = WEIGHTS_RANDOM, b = (Binder){"random", 3, rnd_names, v, given};
	else {
		sema_error_at(S, c->callee->loc, "unknown tensor source '%s' (use %s)", src,
		              allow_random ? "safetensors, npy or random" : "safetensors or npy");
		return false;
	}
	if (!sema_bind_args(S, NULL, c, &b))
		return false;
	WeightBinding w = {.kind = kind, .loc = loc, .synth = SYNTH_PLAIN, .group = 64};
	if (kind == WEIGHTS_RANDOM) {
		if (given[0]) {
			if (!sema_want_int(S, NULL, &v[0], "the seed"))
				return false;
			if (v[0].i < 0) {
				sema_error_at(S, v[0].loc, "seed %lld is negative", (long long)v[0].i);
				return false;
			}
			w.seed = v[0].i;
		}
		if (given[1]) {
			int k;
			if (!sema_symbol_of(S, &v[1], "kind of random weights", synth_kind_names, SYNTH_COUNT, &k))
				return false;
			w.synth = (SynthKind)k;
		}
		if (given[2]) {
			if (!sema_want_int(S, NULL, &v[2], "the group size"))
				return false;
			if (v[2].i < 1 || v[2].i > INT32_MAX) {
				sema_error_at(S, v[2].loc, "group %lld is out of range (1 to %d)", (long long)v[2].i,
				              INT32_MAX);
				return false;
			}
			w.group = v[2].i;
		}
		*out = w;
		return true;
	}
	for (int i = 0; i < b.n; i++) {
		if (!given[i]) {
			sema_error_at(S, c->loc, "missing argument '%s' of %s", b.names[i], b.what);
			return false;
		}
		if (v[i].kind != V_STRING) {
			sema_error_at(S, v[i].loc, "the %s of %s must be a string, found %s", b.names[i], b.what,
			              sema_value_kind_name(v[i].kind));
			return false;
		}
	}
	const char *ext = kind == WEIGHTS_NPY ? ".npy" : ".safetensors";
	size_t pl = strlen(v[0].str), el = strlen(ext);
	if (pl <= el || strcmp(v[0].str + pl - el, ext) != 0) {
		sema_error_at(S, v[0].loc, "%s expects a '%s' file, not '%s'", b.what, ext, v[0].str);
		return false;
	}
	if (kind == WEIGHTS_SAFETENSORS && !v[1].str[0]) {
		sema_error_at(S, v[1].loc, "empty tensor name");
		return false;
	}
	w.path = v[0].str;
	w.tensor = kind == WEIGHTS_SAFETENSORS ? v[1].str : NULL;
	if (w.path[0] == '/' || !loc.file) {
		w.resolved = w.path;
	} else {
		const char *pat = S->diag->files[loc.file].path, *slash = strrchr(pat, '/');
		w.resolved = slash ? arena_printf(S->arena, "%.*s/%s", (int)(slash - pat), pat, w.path)
		                   : w.path;
	}
	if (S->opt->sandbox) {
		sema_error_at(S, v[0].loc, "tensor files cannot be read here");
		return false;
	}
	/* "not found" only when nothing is there; otherwise what the system says
	 * (a path through a file, a name too long, no permission).  A directory,
	 * a FIFO or a device is refused by the reader (weights/safetensors.c). */
	struct stat sb;
	int err = 0;
	if (stat(w.resolved, &sb) != 0 || access(w.resolved, R_OK) != 0)
		err = errno;
	if (err) {
		if (err == ENOENT)
			sema_error_at(S, v[0].loc, "file '%s' not found", w.path);
		else
			sema_error_at(S, v[0].loc, "cannot read file '%s': %s", w.path, strerror(err));
		if (strcmp(w.resolved, w.path) != 0)
			diag_note(S->diag, v[0].loc, "looked for %s", w.resolved);
		return false;
	}
	*out = w;
	return true;
}

/* The settings of an op body, defined once: name, what it takes. */
const char *const sema_setting_names[6] = {"weights", "calibration", "importance", "rank", "search", "bias"};

/* A percentage as a fraction. */
static double pct_fraction(PirPercent p)
{
	double v = (double)p.num;
	for (int i = 0; i < p.decimals; i++)
		v /= 10;
	return v / 100;
}

/* search(sparsity, tolerance, budget, max_depth, min_length, max_pattern,
 * topk, max_sparsity): the settings of patc --search for this op. */
static void bind_search(Sema *S, const Call *c, OpSearch *out)
{
	static const char *const names[] = {"sparsity", "tolerance", "budget", "max_depth",
	                                    "min_length", "max_pattern", "topk", "max_sparsity"};
	enum { NS = sizeof names / sizeof *names };
	if (strcmp(c->callee->name, "search") != 0) {
		sema_error_at(S, c->callee->loc, "search takes search(sparsity, tolerance, budget, max_depth, min_length, "
		                                 "max_pattern, topk, max_sparsity), not '%s'",
		              c->callee->name);
		return;
	}
	Value v[NS];
	bool given[NS] = {false};
	Binder b = {"search", NS, names, v, given};
	if (!sema_bind_args(S, NULL, c, &b))
		return;
	OpSearch o = {.given = true, -1, -1, -1, -1, -1, -1, -1, -1};
	for (int i = 0; i < NS; i++) {
		if (!given[i])
			continue;
		if (i < 3 || i == 7) { /* percentages */
			if (v[i].kind != V_PERCENT) {
				sema_error_at(S, v[i].loc, "the %s of search must be a percentage such as 75%%, found %s", names[i],
				              sema_value_kind_name(v[i].kind));
				return;
			}
			double f = pct_fraction(v[i].pct);
			const bool sp = i == 0 || i == 7;
			if (sp ? !(f > 0 && f < 1) : !(f >= 0 && f <= 1)) {
				sema_error_at(S, v[i].loc, "%s %g%% is out of range (%s)", names[i], 100 * f,
				              sp ? "more than 0% and less than 100%" : "0% to 100%");
				return;
			}
			if (i == 7 && !(f > (given[0] ? o.sparsity : 0.75))) {
				sema_error_at(S, v[i].loc, "max_sparsity %g%% must be above the sparsity (%g%%%s): the range runs from "
				                           "the sparsity to it",
				              100 * f, 100 * (given[0] ? o.sparsity : 0.75), given[0] ? "" : ", the default");
				return;
			}
			(i == 0 ? &o.sparsity : i == 1 ? &o.tolerance : i == 2 ? &o.budget : &o.max_sparsity)[0] = f;
			continue;
		}
		if (!sema_want_int(S, NULL, &v[i], names[i]))
			return;
		static const int64_t lo[] = {1, 1, 1, 1}, hi[] = {3, 1 << 20, 1 << 20, 10000};
		if (v[i].i < lo[i - 3] || v[i].i > hi[i - 3]) {
			sema_error_at(S, v[i].loc, "%s %lld is out of range (%lld to %lld)", names[i], (long long)v[i].i,
			              (long long)lo[i - 3], (long long)hi[i - 3]);
			return;
		}
		int *dst = i == 3 ? &o.max_depth : i == 4 ? &o.min_length : i == 5 ? &o.max_pattern : &o.topk;
		*dst = (int)v[i].i;
	}
	*out = o;
}

/* `NAME = SOURCE(...);` or `NAME = value;` in an op body. */
void sema_run_set(Sema *S, const Frame *f, const Stmt *st)
{
	OpResult *op = S->op;
	if (f && f->pattern)
		return; /* reported where the pattern is defined */
	const char *name = st->u.set.name->name;
	int which = -1;
	for (int i = 0; i < 6; i++)
		if (strcmp(name, sema_setting_names[i]) == 0)
			which = i;
	if (which < 0) {
		sema_error_at(S, st->u.set.name->loc,
		              "unknown setting '%s' (an op sets weights, bias, calibration, importance, rank or search)", name);
		return;
	}
	SrcLoc *prev = &S->set_loc[which];
	if (prev->line) {
		sema_error_at(S, st->loc, "'%s' of op '%s' is set twice", name, op->name);
		diag_note(S->diag, *prev, "first set here");
		return;
	}
	*prev = st->loc;
	const Call *c = st->u.set.is_call ? &st->u.set.call : NULL;
	Value v = {0};
	if (!c && !sema_eval(S, NULL, st->u.set.value, &v))
		return;
	switch (which) {
	case 0: /* weights */
	case 1: /* calibration */
	case 5: /* bias: M floats */
		if (!c) {
			sema_error_at(S, st->u.set.value->loc, "%s takes a source: safetensors(file, tensor), "
			                                       "npy(file) or random(seed, kind, group)", name);
			return;
		}
		bind_source(S, c, st->loc, true, which == 0 ? &op->weights : which == 1 ? &op->calibration : &op->bias);
		return;
	case 2: { /* importance */
		if (c) {
			if (bind_source(S, c, st->loc, false, &op->scores))
				op->importance = PAT_IMP_TENSOR;
			return;
		}
		int k;
		/* "tensor" is spelled as a source call, not as a name */
		if (sema_symbol_of(S, &v, "importance", pat_importance_names, PAT_IMP_TENSOR, &k))
			op->importance = (PatImportance)k;
		return;
	}
	case 4: /* search */
		if (!c) {
			sema_error_at(S, st->u.set.value->loc, "search takes search(sparsity, tolerance, budget, max_depth, "
			                                       "min_length, max_pattern, topk, max_sparsity)");
			return;
		}
		bind_search(S, c, &op->search);
		return;
	default: { /* rank */
		int k;
		if (c) {
			sema_error_at(S, c->loc, "rank takes total or lookahead");
			return;
		}
		if (sema_symbol_of(S, &v, "rank", pat_rank_names, PAT_NRANKS, &k)) {
			op->rank = (PatRank)k;
			op->rank_set = true;
		}
		return;
	}
	}
}
