/* SPDX-License-Identifier: MIT */
/* sema.c - the semantic pass: from the syntax tree to checked ops.
 *
 * Collects the patterns and ops of every loaded file (duplicates are
 * errors), then builds each op: its spmm arguments and weight binding are
 * checked, and its body is run statement by statement: pattern applications
 * bind their arguments (positional, named, defaults) and run the pattern's
 * body; each primitive statement is evaluated to a PirPrim and handed to
 * pir_apply.  A refused primitive is reported at its statement, naming the
 * pattern, the op and the loop, and ends that op; other ops go on.  GPU
 * targets then get the legality check (passes/legality.c).
 *
 * This file holds the pattern table, pattern applications, the recursion
 * check and the ops; expressions and argument binding are in eval.c,
 * primitive statements in prim.c and an op's settings in settings.c
 * (sema_impl.h).
 */
#define _DEFAULT_SOURCE
#include "sema_impl.h"
#include "../support/util.h"

#include <string.h>

const char *const pat_importance_names[PAT_NIMPORTANCES] = {
#define X(e, name) name,
	PAT_IMPORTANCES(X)
#undef X
};
const char *const pat_rank_names[PAT_NRANKS] = {"total", "lookahead"};

/* ---- names ---- */

/* The slot of name in S->ptable: where it is, or the empty one where it
 * would go (a file of 40000 patterns took seconds searched linearly). */
static size_t pattern_slot(const Sema *S, const char *name)
{
	size_t at = (size_t)util_hash_text(name) & S->ptable_mask;
	while (S->ptable[at] >= 0 && strcmp(S->patterns[S->ptable[at]]->u.pattern.name->name, name) != 0)
		at = (at + 1) & S->ptable_mask;
	return at;
}

static const Item *find_pattern(Sema *S, const char *name)
{
	const int i = S->ptable[pattern_slot(S, name)];
	return i >= 0 ? S->patterns[i] : NULL;
}

static int pattern_index(Sema *S, const Item *pat)
{
	return S->ptable[pattern_slot(S, pat->u.pattern.name->name)];
}

static const char *suggest_pattern(Sema *S, const char *name)
{
	const char *best = NULL;
	int bestd = 3;
	for (int i = 0; i < S->npatterns; i++) {
		const char *cand = S->patterns[i]->u.pattern.name->name;
		int d = util_edit_distance(name, cand);
		if (d < bestd)
			bestd = d, best = cand;
	}
	return best;
}

/* ---- statements ---- */

static void run_body(Sema *S, const Frame *f, const Stmt *body, int depth);

static void run_apply(Sema *S, const Frame *f, const Stmt *st, int depth)
{
	const Call *c = &st->u.call;
	const char *name = c->callee->name;
	const Item *pat = find_pattern(S, name);
	if (!pat) {
		sema_error_at(S, c->callee->loc, "unknown pattern '%s'", name);
		const char *sug = suggest_pattern(S, name);
		if (sug)
			diag_note(S->diag, c->callee->loc, "did you mean '%s'?", sug);
		sema_note_frames(S, f);
		S->op_failed = true;
		return;
	}
	for (const Frame *g = f; g; g = g->parent)
		if (g->pattern == pat) {
			sema_error_at(S, c->callee->loc, "pattern '%s' applies itself recursively", name);
			for (const Frame *h = f; h != g->parent; h = h->parent)
				S->cycle_reported[pattern_index(S, h->pattern)] = true;
			sema_note_frames(S, f);
			S->op_failed = true;
			return;
		}
	if (depth >= MAX_APPLY_DEPTH) {
		sema_error_at(S, st->loc, "patterns applied more than %d deep", MAX_APPLY_DEPTH);
		sema_note_frames(S, f);
		S->op_failed = true;
		return;
	}
	if (++S->napplies > MAX_OP_APPLIES) {
		sema_error_at(S, st->loc, "op '%s' applies patterns more than %d times", S->op->name, MAX_OP_APPLIES);
		sema_note_frames(S, f);
		S->op_failed = true;
		return;
	}
	int n = 0;
	for (const Param *p = pat->u.pattern.params; p; p = p->next)
		n++;
	if (n > MAX_PATTERN_PARAMS) { /* (said where it is defined) */
		S->op_failed = true;
		return;
	}
	Frame g = {.pattern = pat, .n = n, .call = st->loc, .parent = f};
	g.names = arena_alloc(S->arena, (size_t)(n + 1) * sizeof *g.names);
	g.values = arena_alloc(S->arena, (size_t)(n + 1) * sizeof *g.values);
	bool *given = arena_alloc(S->arena, (size_t)(n + 1) * sizeof *given);
	int i = 0;
	for (const Param *p = pat->u.pattern.params; p; p = p->next)
		g.names[i++] = p->name->name;
	Binder b = {arena_printf(S->arena, "pattern '%s'", name), n, g.names, g.values, given};
	bool ok = sema_bind_args(S, f, c, &b);
	/* Defaults may use the parameters before them. */
	i = 0;
	Frame partial = g;
	for (const Param *p = pat->u.pattern.params; p; p = p->next, i++) {
		if (given[i])
			continue;
		if (!p->def) {
			sema_error_at(S, c->loc, "missing argument '%s' of pattern '%s'", p->name->name, name);
			diag_note(S->diag, p->name->loc, "'%s' is declared here", p->name->name);
			ok = false;
			continue;
		}
		partial.n = i;
		if (!sema_eval(S, &partial, p->def, &g.values[i])) {
			ok = false;
			continue;
		}
		given[i] = true;
	}
	if (!ok) {
		sema_note_frames(S, f);
		S->op_failed = true;
		return;
	}
	run_body(S, &g, pat->u.pattern.body, depth + 1);
}

static void run_body(Sema *S, const Frame *f, const Stmt *body, int depth)
{
	for (const Stmt *st = body; st && !S->op_failed; st = st->next) {
		switch (st->kind) {
		case STMT_APPLY:
			run_apply(S, f, st, depth);
			break;
		case STMT_SET:
			sema_run_set(S, f, st);
			break;
		default:
			sema_run_prim(S, f, st);
			break;
		}
	}
}

/* ---- recursion ---- */

/* Reports the cycle closed by `st` (in pattern stack[depth - 1], applying
 * stack[from]) unless each of its patterns is in one reported already. */
static void report_cycle(Sema *S, const int *stack, const Stmt *const *via, int from, int depth,
                         const Stmt *st)
{
	bool all = true;
	for (int i = from; i < depth; i++)
		all = all && S->cycle_reported[stack[i]];
	if (all)
		return;
	for (int i = from; i < depth; i++)
		S->cycle_reported[stack[i]] = true;
	sema_error_at(S, st->u.call.callee->loc, "pattern '%s' applies itself recursively",
	              S->patterns[stack[from]]->u.pattern.name->name);
	enum { MAX_NOTES = 8 };
	for (int i = depth - 1; i > from; i--) {
		if (depth - 1 - i == MAX_NOTES) {
			diag_note(S->diag, via[i]->loc, "and %d more applications on the way", i - from);
			break;
		}
		diag_note(S->diag, via[i]->loc, "in pattern '%s' applied here",
		          S->patterns[stack[i]]->u.pattern.name->name);
	}
}

/* A pattern may not apply itself, directly or through others: an error also
 * where no op applies it (run_apply reports the cycles an op runs into, with
 * the op's applications; this reports the others, once each).  Depth-first
 * over the apply statements with an explicit stack: a file may chain
 * thousands of patterns. */
static void check_recursion(Sema *S)
{
	int n = S->npatterns;
	unsigned char *state = arena_alloc(S->arena, (size_t)n + 1); /* 1 on the stack, 2 done */
	int *stack = arena_alloc(S->arena, ((size_t)n + 1) * sizeof *stack);
	const Stmt **next = arena_alloc(S->arena, ((size_t)n + 1) * sizeof *next);
	const Stmt **via = arena_alloc(S->arena, ((size_t)n + 1) * sizeof *via);
	for (int root = 0; root < n; root++) {
		if (state[root])
			continue;
		int depth = 1;
		stack[0] = root, next[0] = S->patterns[root]->u.pattern.body, via[0] = NULL;
		state[root] = 1;
		while (depth) {
			const Stmt *st = next[depth - 1];
			while (st && st->kind != STMT_APPLY)
				st = st->next;
			if (!st) {
				state[stack[--depth]] = 2;
				continue;
			}
			next[depth - 1] = st->next;
			const Item *callee = find_pattern(S, st->u.call.callee->name);
			if (!callee)
				continue; /* unknown: reported where an op applies it */
			int q = pattern_index(S, callee);
			if (state[q] == 0) {
				state[q] = 1;
				stack[depth] = q, next[depth] = callee->u.pattern.body, via[depth] = st;
				depth++;
			} else if (state[q] == 1) {
				int from = depth - 1;
				while (stack[from] != q)
					from--;
				report_cycle(S, stack, via, from, depth, st);
			}
		}
	}
}

/* ---- ops ---- */

static bool op_header(Sema *S, const Item *it, OpResult *op)
{
	const Call *c = &it->u.op.kind;
	if (strcmp(c->callee->name, "spmm") != 0) {
		sema_error_at(S, c->callee->loc, "unknown operator '%s' (patc compiles 'spmm'; a convolution "
		                                 "enters as spmm through im2col)", c->callee->name);
		return false;
	}
	static const char *const names[] = {"M", "K", "N", "dtype", "layout", "activation", "accumulate"};
	Value v[7];
	bool given[7] = {false};
	Binder b = {"spmm", 7, names, v, given};
	if (!sema_bind_args(S, NULL, c, &b))
		return false;
	int64_t *dims[3] = {&op->shape.M, &op->shape.K, &op->shape.N};
	bool ok = true;
	for (int i = 0; i < 3; i++) {
		if (!given[i]) {
			sema_error_at(S, c->loc, "op '%s' needs its size %s", op->name, names[i]);
			ok = false;
		} else if (!sema_want_int(S, NULL, &v[i], names[i])) {
			ok = false;
		} else if (v[i].i < 1 || v[i].i > INT32_MAX) {
			sema_error_at(S, v[i].loc, "%s = %lld is out of range (1 to %d)", names[i],
			              (long long)v[i].i, INT32_MAX);
			ok = false;
		} else {
			*dims[i] = v[i].i;
		}
	}
	int d = PAT_F32, l = PAT_LAYOUT_KN;
	if (given[3] && !sema_symbol_of(S, &v[3], "dtype", pat_dtype_names, PAT_NDTYPES, &d))
		ok = false;
	if (given[4] && !sema_symbol_of(S, &v[4], "layout", pat_layout_names, PAT_NLAYOUTS, &l))
		ok = false;
	op->shape.dtype = (PatDtype)d;
	op->shape.layout = (PatLayout)l;
	/* the epilogue: C = act(W X + bias (+ C)) (ir/op.h) */
	int a = PAT_ACT_NONE, acc = 0;
	static const char *const bools[] = {"false", "true"};
	if (given[5] && !sema_symbol_of(S, &v[5], "activation", pat_act_names, PAT_NACTS, &a))
		ok = false;
	if (given[6] && !sema_symbol_of(S, &v[6], "accumulate", bools, 2, &acc))
		ok = false;
	op->shape.act = (PatAct)a;
	op->shape.accumulate = acc != 0;
	return ok;
}

static void check_gpu(Sema *S, OpResult *op)
{
	PirViolation v[PIR_MAX_LOOPS];
	int n = pir_check_gpu(op->ir, v, PIR_MAX_LOOPS);
	for (int i = 0; i < n && i < PIR_MAX_LOOPS; i++) {
		const PirLoop *l = &op->ir->loops[v[i].loop];
		PirLoc at = v[i].kind == PIR_VIOL_JOIN_MK ? l->made : l->perforated;
		SrcLoc loc = at.file ? src_from_pir(at) : op->loc;
		sema_error_at(S, loc, "op '%s' cannot run on %s: %s", op->name, S->opt->target, v[i].text);
		if (v[i].kind == PIR_VIOL_SPATIAL_IN_REDUCTION)
			diag_note(S->diag, loc,
			          "reorder '%s' outside every k loop, or compile for an x86-64 target",
			          l->name);
		else
			diag_note(S->diag, loc, "keep m and k loops apart, or compile for an x86-64 target");
		for (int j = 0; j < S->norigins; j++)
			if (strcmp(S->origins[j].name, l->name) == 0)
				for (int k = 0; k < S->origins[j].n; k++)
					diag_note(S->diag, S->origins[j].call[k], "in pattern '%s' applied here",
					          S->origins[j].pattern[k]);
	}
	if (n)
		op->ok = false;
}

static void build_op(Sema *S, const Item *it, OpResult *op)
{
	memset(op, 0, sizeof *op);
	op->name = it->u.op.name->name;
	op->loc = it->u.op.name->loc;
	S->op = op;
	S->op_failed = false;
	S->ntrace = S->captrace = 0;
	S->norigins = 0;
	S->nprims = 0;
	S->napplies = 0;
	memset(S->set_loc, 0, sizeof S->set_loc);
	op->rank = S->opt->rank;
	if (!op_header(S, it, op))
		return;
	op->ir = arena_alloc(S->arena, sizeof *op->ir);
	pir_init(op->ir, op->name, op->shape.M, op->shape.K);
	Frame top = {0};
	run_body(S, &top, it->u.op.body, 0);
	op->ok = !S->op_failed;
	/* Calibration, importance and rank only mean something with weights
	 * (unless the weights setting itself failed, which was reported, or
	 * the body stopped at a refusal before the statements that set them). */
	if (S->op_failed)
		return;
	if (op->weights.kind == WEIGHTS_NONE && !S->set_loc[0].line)
		for (int i = 1; i < 6; i++)
			if (S->set_loc[i].line) {
				sema_error_at(S, S->set_loc[i], "op '%s' sets %s but has no weights to prune: set "
				                                "'weights = ...'", op->name, sema_setting_names[i]);
				op->ok = false;
				break;
			}
	if (S->opt->importance_set && op->weights.kind != WEIGHTS_NONE) { /* the command line's */
		op->importance = S->opt->importance;
		if (op->importance == PAT_IMP_WANDA && op->calibration.kind == WEIGHTS_NONE && !S->set_loc[1].line) {
			sema_error_at(S, op->loc, "--importance=wanda (|w| * ||X_k||) needs calibration activations: set "
			                          "'calibration = ...' in op '%s'", op->name);
			op->ok = false;
		}
	} else if (op->importance == PAT_IMP_WANDA && op->calibration.kind == WEIGHTS_NONE &&
	           !S->set_loc[1].line) {
		sema_error_at(S, S->set_loc[2], "importance wanda (|w| * ||X_k||) needs calibration "
		                                "activations: set 'calibration = ...' in op '%s'", op->name);
		op->ok = false;
	}
	if (op->ok && S->opt->gpu)
		check_gpu(S, op);
}

int sema_run(const FrontendOptions *opt, Diag *diag, Arena *arena, Item *items, Program *prog)
{
	Sema S = {.opt = opt, .diag = diag, .arena = arena};
	int np = 0, no = 0;
	for (Item *it = items; it; it = it->next)
		np += it->kind == ITEM_PATTERN, no += it->kind == ITEM_OP;
	S.patterns = arena_alloc(arena, (size_t)(np + 1) * sizeof *S.patterns);
	size_t cap = 16;
	while (cap < 2 * (size_t)np)
		cap *= 2;
	S.ptable = arena_alloc(arena, cap * sizeof *S.ptable);
	memset(S.ptable, 0xff, cap * sizeof *S.ptable); /* (-1: empty) */
	S.ptable_mask = cap - 1;
	S.cycle_reported = arena_alloc(arena, (size_t)(np + 1) * sizeof *S.cycle_reported);
	const Item **ops = arena_alloc(arena, (size_t)(no + 1) * sizeof *ops);
	int nops = 0;
	for (Item *it = items; it; it = it->next) {
		if (it->kind == ITEM_PATTERN) {
			const Ident *name = it->u.pattern.name;
			const Item *prev = find_pattern(&S, name->name);
			if (prev) {
				sema_error_at(&S, name->loc, "pattern '%s' is defined twice", name->name);
				diag_note(diag, prev->u.pattern.name->loc, "first defined here");
				continue;
			}
			int nparams = 0;
			for (const Param *p = it->u.pattern.params; p; p = p->next)
				if (++nparams == MAX_PATTERN_PARAMS + 1)
					sema_error_at(&S, p->name->loc, "pattern '%s' has more than %d parameters", name->name,
					              MAX_PATTERN_PARAMS);
			for (const Param *p = it->u.pattern.params; p && nparams <= MAX_PATTERN_PARAMS; p = p->next)
				for (const Param *q = it->u.pattern.params; q != p; q = q->next)
					if (strcmp(p->name->name, q->name->name) == 0) {
						sema_error_at(&S, p->name->loc, "pattern '%s' has two parameters named '%s'",
						              name->name, p->name->name);
						diag_note(diag, q->name->loc, "first declared here");
						break;
					}
			/* Settings belong to ops: say so where the pattern is written. */
			for (const Stmt *st = it->u.pattern.body; st; st = st->next)
				if (st->kind == STMT_SET)
					sema_error_at(&S, st->loc, "'%s' can only be set in an op, not in pattern '%s'",
					              st->u.set.name->name, name->name);
			S.ptable[pattern_slot(&S, name->name)] = S.npatterns;
			S.patterns[S.npatterns++] = it;
		} else if (it->kind == ITEM_OP) {
			const Ident *name = it->u.op.name;
			bool dup = false;
			for (int i = 0; i < nops && !dup; i++)
				if (strcmp(ops[i]->u.op.name->name, name->name) == 0) {
					sema_error_at(&S, name->loc, "op '%s' is defined twice", name->name);
					diag_note(diag, ops[i]->u.op.name->loc, "first defined here");
					dup = true;
				}
			if (!dup && nops == MAX_OPS) {
				sema_error_at(&S, name->loc, "more than %d ops in one program", MAX_OPS);
				dup = true;
			}
			if (!dup)
				ops[nops++] = it;
		}
	}
	prog->ops = arena_alloc(arena, (size_t)(nops + 1) * sizeof *prog->ops);
	prog->nops = nops;
	for (int i = 0; i < nops; i++)
		build_op(&S, ops[i], &prog->ops[i]);
	check_recursion(&S);
	return S.errors;
}
