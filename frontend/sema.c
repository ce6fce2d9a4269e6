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
 */
#define _DEFAULT_SOURCE
#include "frontend.h"
#include "../support/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const pat_dtype_names[PAT_NDTYPES] = {"f32", "f16", "bf16"};
const char *const pat_layout_names[PAT_NLAYOUTS] = {"kn", "nk"};
const char *const pat_importance_names[PAT_NIMPORTANCES] = {
#define X(e, name) name,
	PAT_IMPORTANCES(X)
#undef X
};
const char *const pat_rank_names[PAT_NRANKS] = {"total", "lookahead"};

enum {
	MAX_APPLY_DEPTH = 32,
	MAX_OPS = 1024,
	MAX_EXPR_DEPTH = 256,
	MAX_OP_PRIMS = 1024, /* primitives applied to one op, all patterns included */
	/* pattern applications in one op: patterns that apply others twice over
	 * reach 2^32 applications within MAX_APPLY_DEPTH, running primitives or
	 * (settings alone, or nothing) none */
	MAX_OP_APPLIES = 4096,
	MAX_PATTERN_PARAMS = 64, /* (each is looked up by name: keeps binding linear) */
};

typedef enum ValueKind { V_INT, V_PERCENT, V_STRING, V_SYMBOL, V_WILDCARD } ValueKind;

typedef struct Value {
	ValueKind kind;
	int64_t i;
	PirPercent pct;
	const char *str; /* V_STRING, V_SYMBOL */
	SrcLoc loc;
	/* V_SYMBOL: where the name was written, and the parameter that first
	 * carried it (NULL: none), for a diagnostic at the name itself */
	SrcLoc origin;
	const char *param;
	const Item *param_of;
} Value;

/* A pattern application in progress: its bound parameters. */
typedef struct Frame {
	const Item *pattern; /* NULL for an op body */
	const char **names;
	Value *values;
	int n;
	SrcLoc call; /* the apply statement */
	const struct Frame *parent;
} Frame;

enum { MAX_FRAMES = 8, MAX_ORIGINS = 64 };

typedef struct LoopOrigin {
	char name[PIR_NAME_MAX];
	int n;
	const char *pattern[MAX_FRAMES];
	SrcLoc call[MAX_FRAMES];
} LoopOrigin;

typedef struct Sema {
	const FrontendOptions *opt;
	Diag *diag;
	Arena *arena;
	int errors;
	const Item **patterns;
	int npatterns;
	int *ptable;   /* open addressing by name's hash: index into patterns, -1 empty */
	size_t ptable_mask;
	/* the op being built */
	OpResult *op;
	bool op_failed;
	int ntrace, captrace;
	LoopOrigin origins[MAX_ORIGINS];
	int norigins;
	int nprims; /* primitives applied to the op so far */
	int napplies; /* patterns applied to it so far */
	SrcLoc set_loc[5]; /* where each setting was given (line 0: not yet) */
	bool *cycle_reported; /* by pattern index: in a recursion already reported */
} Sema;

static void error_at(Sema *S, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void error_at(Sema *S, SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	S->errors++;
	diag_vreport(S->diag, DIAG_ERROR, loc, fmt, ap);
	va_end(ap);
}

/* "in pattern 'block' applied to op 'q'" notes, innermost first. */
static void note_frames(Sema *S, const Frame *f)
{
	for (; f && f->pattern; f = f->parent)
		diag_note(S->diag, f->call, "in pattern '%s' applied here",
		          f->pattern->u.pattern.name->name);
}

static const char *where(Sema *S, const Frame *f)
{
	if (f && f->pattern)
		return arena_printf(S->arena, "in pattern '%s' (op '%s')",
		                    f->pattern->u.pattern.name->name, S->op->name);
	return arena_printf(S->arena, "in op '%s'", S->op->name);
}

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

/* ---- expressions ---- */

static const char *value_kind_name(ValueKind k)
{
	switch (k) {
	case V_INT: return "an integer";
	case V_PERCENT: return "a percentage";
	case V_STRING: return "a string";
	case V_SYMBOL: return "a name";
	case V_WILDCARD: return "'_'";
	}
	return "?";
}

/* The unknown name v where what is expected: said where it was written
 * (an argument or a default that a parameter carried, the use noted), else
 * where it is used. */
static void unknown_name(Sema *S, const Frame *f, const Value *v, const char *what)
{
	if (v->param) {
		const char *pat = v->param_of->u.pattern.name->name;
		error_at(S, v->origin, "unknown name '%s' where %s is expected (the value of parameter '%s' of pattern "
		         "'%s')", v->str, what, v->param, pat);
		bool after = false; /* a default naming a parameter declared after its own */
		for (const Param *p = v->param_of->u.pattern.params; p; p = p->next) {
			if (after && !strcmp(p->name->name, v->str)) {
				diag_note(S->diag, p->name->loc, "'%s' is declared after '%s': a default can use only the "
				          "parameters before it", v->str, v->param);
				break;
			}
			after = after || !strcmp(p->name->name, v->param);
		}
		diag_note(S->diag, v->loc, "'%s' is used here", v->param);
	} else if (f && f->pattern) {
		error_at(S, v->loc, "unknown name '%s': pattern '%s' has no such parameter", v->str,
		         f->pattern->u.pattern.name->name);
	} else {
		error_at(S, v->loc, "unknown name '%s' where %s is expected", v->str, what);
	}
}

static bool eval(Sema *S, const Frame *f, const Expr *e, Value *out)
{
	*out = (Value){.loc = e->loc};
	if (e->depth > MAX_EXPR_DEPTH) { /* keeps the recursion below bounded */
		error_at(S, e->loc, "expression nested more than %d operators deep", MAX_EXPR_DEPTH);
		return false;
	}
	switch (e->kind) {
	case EXPR_INT:
		out->kind = V_INT, out->i = e->u.i;
		return true;
	case EXPR_PERCENT:
		out->kind = V_PERCENT, out->pct = e->u.pct;
		return true;
	case EXPR_STRING:
		out->kind = V_STRING, out->str = e->u.str;
		return true;
	case EXPR_WILDCARD:
		out->kind = V_WILDCARD;
		return true;
	case EXPR_NAME:
		for (const Frame *g = f; g; g = NULL) /* parameters of this pattern only */
			for (int i = 0; i < g->n; i++)
				if (strcmp(g->names[i], e->u.str) == 0) {
					*out = g->values[i];
					out->loc = e->loc;
					if (out->kind == V_SYMBOL && !out->param)
						out->param = g->names[i], out->param_of = g->pattern;
					return true;
				}
		out->kind = V_SYMBOL, out->str = e->u.str, out->origin = e->loc;
		return true;
	case EXPR_NEG: {
		Value v;
		if (!eval(S, f, e->u.operand, &v))
			return false;
		if (v.kind != V_INT) {
			error_at(S, e->loc, "cannot negate %s", value_kind_name(v.kind));
			return false;
		}
		out->kind = V_INT, out->i = -v.i;
		return true;
	}
	case EXPR_BINARY: {
		Value l, r;
		if (!eval(S, f, e->u.bin.l, &l) || !eval(S, f, e->u.bin.r, &r))
			return false;
		const Value *bad = l.kind != V_INT ? &l : r.kind != V_INT ? &r : NULL;
		if (bad) {
			if (bad->kind == V_SYMBOL && bad->param)
				unknown_name(S, f, bad, "an integer for arithmetic");
			else if (bad->kind == V_SYMBOL)
				error_at(S, bad->loc, "unknown name '%s' in arithmetic", bad->str);
			else
				error_at(S, bad->loc, "arithmetic needs integers, found %s",
				         value_kind_name(bad->kind));
			return false;
		}
		int64_t v = 0;
		bool ok = true;
		switch (e->u.bin.op) {
		case '+': ok = !__builtin_add_overflow(l.i, r.i, &v); break;
		case '-': ok = !__builtin_sub_overflow(l.i, r.i, &v); break;
		case '*': ok = !__builtin_mul_overflow(l.i, r.i, &v); break;
		case '/':
			if (r.i == 0) {
				error_at(S, e->loc, "division by zero");
				return false;
			}
			if (l.i % r.i != 0) {
				error_at(S, e->loc, "%lld / %lld is not an integer", (long long)l.i,
				         (long long)r.i);
				return false;
			}
			v = l.i / r.i;
			break;
		}
		if (!ok || v > ((int64_t)1 << 40) || v < -((int64_t)1 << 40)) {
			error_at(S, e->loc, "arithmetic overflow");
			return false;
		}
		out->kind = V_INT, out->i = v;
		return true;
	}
	}
	return false;
}

/* Checks that v is an integer; `what` names it for the message. */
static bool want_int(Sema *S, const Frame *f, const Value *v, const char *what)
{
	if (v->kind == V_INT)
		return true;
	if (v->kind == V_SYMBOL)
		unknown_name(S, f, v, what);
	else if (v->kind == V_WILDCARD)
		error_at(S, v->loc, "'_' is only allowed as a split factor");
	else
		error_at(S, v->loc, "expected an integer for %s, found %s", what,
		         value_kind_name(v->kind));
	return false;
}

/* ---- argument binding, shared by spmm(), weight sources and patterns ---- */

typedef struct Binder {
	const char *what; /* "spmm", "pattern 'block'" */
	int n;
	const char *const *names;
	Value *values;
	bool *given;
} Binder;

static bool bind_args(Sema *S, const Frame *f, const Call *c, Binder *b)
{
	bool ok = true, named_seen = false;
	int pos = 0;
	for (const Arg *a = c->args; a; a = a->next) {
		int slot = -1;
		SrcLoc at = a->name ? a->name_loc : a->value->loc;
		if (a->name) {
			named_seen = true;
			for (int i = 0; i < b->n; i++)
				if (strcmp(b->names[i], a->name) == 0)
					slot = i;
			if (slot < 0) {
				error_at(S, at, "%s has no parameter named '%s'", b->what, a->name);
				ok = false;
				continue;
			}
		} else {
			if (named_seen) {
				error_at(S, at, "positional argument after named arguments in a call of %s",
				         b->what);
				ok = false;
				continue;
			}
			if (pos >= b->n) {
				error_at(S, at, "too many arguments to %s (it takes %d)", b->what, b->n);
				ok = false;
				break;
			}
			slot = pos++;
		}
		if (b->given[slot]) {
			error_at(S, at, "argument '%s' of %s given twice", b->names[slot], b->what);
			ok = false;
			continue;
		}
		b->given[slot] = true; /* even when bad: it was given, not missing */
		if (!eval(S, f, a->value, &b->values[slot]))
			ok = false;
	}
	return ok;
}

static bool symbol_of(Sema *S, const Value *v, const char *what, const char *const *names, int n,
                      int *out);

/* ---- primitives ---- */

static bool ident_name(Sema *S, const Ident *id, char out[PIR_NAME_MAX])
{
	(void)S;
	pir_name_copy(out, id->name);
	return true;
}

static int ident_list(Sema *S, const Ident *ids, char out[][PIR_NAME_MAX], int max,
                      const char *what, SrcLoc loc)
{
	int n = 0;
	for (const Ident *id = ids; id; id = id->next) {
		if (n == max) {
			error_at(S, loc, "%s lists more than %d loops", what, max);
			return -1;
		}
		ident_name(S, id, out[n++]);
	}
	return n;
}

/* Evaluates a primitive statement to a PirPrim; false after an error. */
static bool build_prim(Sema *S, const Frame *f, const Stmt *st, PirPrim *p)
{
	memset(p, 0, sizeof *p);
	p->loc = src_to_pir(st->loc);
	switch (st->kind) {
	case STMT_SPLIT: {
		p->kind = PIR_PRIM_SPLIT;
		ident_name(S, st->u.split.loop, p->u.split.loop);
		int n = ident_list(S, st->u.split.names, p->u.split.names, PIR_MAX_SPLIT, "split", st->loc);
		if (n < 0)
			return false;
		p->u.split.n = n;
		int nf = 0;
		bool ok = true;
		for (const Expr *e = st->u.split.factors; e; e = e->next) {
			Value v;
			if (!eval(S, f, e, &v)) {
				ok = false;
				nf++;
				continue;
			}
			if (nf < PIR_MAX_SPLIT) {
				if (v.kind == V_WILDCARD)
					p->u.split.factor[nf] = 0;
				else if (!want_int(S, f, &v, "a split factor"))
					ok = false;
				else if (v.i < 1) {
					error_at(S, v.loc, "split factor %lld is not positive", (long long)v.i);
					ok = false;
				} else
					p->u.split.factor[nf] = v.i;
			}
			nf++;
		}
		if (!ok)
			return false;
		if (nf != n) {
			error_at(S, st->loc, "%s: split of '%s' names %d loop%s but gives %d factor%s",
			         where(S, f), st->u.split.loop->name, n, n == 1 ? "" : "s", nf,
			         nf == 1 ? "" : "s");
			return false;
		}
		p->u.split.pad = st->u.split.pad;
		p->u.split.pad_amount = -1;
		if (st->u.split.pad_amount) {
			Value v;
			if (!eval(S, f, st->u.split.pad_amount, &v) || !want_int(S, f, &v, "a pad amount"))
				return false;
			if (v.i < 0) {
				error_at(S, v.loc, "pad %lld is negative", (long long)v.i);
				return false;
			}
			p->u.split.pad_amount = v.i;
		}
		return true;
	}
	case STMT_REORDER: {
		p->kind = PIR_PRIM_REORDER;
		int n = ident_list(S, st->u.loops, p->u.reorder.loops, PIR_MAX_LOOPS, "reorder", st->loc);
		p->u.reorder.n = n;
		return n >= 0;
	}
	case STMT_JOIN: {
		p->kind = PIR_PRIM_JOIN;
		int n = ident_list(S, st->u.join.loops, p->u.join.loops, PIR_MAX_COMPS, "join", st->loc);
		if (n < 0)
			return false;
		p->u.join.n = n;
		ident_name(S, st->u.join.name, p->u.join.name);
		return true;
	}
	case STMT_PERFORATE: {
		p->kind = PIR_PRIM_PERFORATE;
		ident_name(S, st->u.perforate.loop, p->u.perforate.loop);
		Value v;
		if (!eval(S, f, st->u.perforate.keep, &v))
			return false;
		if (v.kind == V_PERCENT) {
			p->u.perforate.is_percent = true;
			p->u.perforate.percent = v.pct;
			return true;
		}
		if (!want_int(S, f, &v, "a keep count"))
			return false;
		p->u.perforate.keep = v.i;
		return true;
	}
	case STMT_CONDENSE:
		p->kind = PIR_PRIM_CONDENSE;
		if (strcmp(st->u.condense.operand->name, "x") != 0) {
			error_at(S, st->u.condense.operand->loc,
			         "condense gathers the dense operand 'x', not '%s'",
			         st->u.condense.operand->name);
			return false;
		}
		ident_name(S, st->u.condense.loop, p->u.condense.loop);
		return true;
	case STMT_APPLY:
	case STMT_SET:
		break;
	}
	util_ice(__FILE__, __LINE__, "not a primitive statement");
}

static void record_trace(Sema *S, const Frame *f, const PirPrim *p, SrcLoc loc, const char *warn)
{
	OpResult *op = S->op;
	if (!S->opt->trace)
		return;
	if (S->ntrace == S->captrace) {
		int cap = S->captrace ? S->captrace * 2 : 16;
		TraceStep *t = arena_alloc(S->arena, (size_t)cap * sizeof *t);
		if (S->ntrace)
			memcpy(t, op->trace, (size_t)S->ntrace * sizeof *t);
		op->trace = t;
		S->captrace = cap;
	}
	TraceStep *t = &op->trace[S->ntrace++];
	t->prim = *p;
	t->pattern = f && f->pattern ? f->pattern->u.pattern.name->name : NULL;
	t->loc = loc;
	char *text = pir_print_text(op->ir);
	t->ir_text = arena_strdup(S->arena, text);
	free(text);
	snprintf(t->warning, sizeof t->warning, "%s", warn);
	op->ntrace = S->ntrace;
}

void trace_step_ir(const TraceStep *t, Pir *ir)
{
	char err[256];
	if (pir_read_text(t->ir_text, ir, 1, err, sizeof err) != 1)
		util_ice(__FILE__, __LINE__, "a traced step's PatternIR does not read back: %s", err);
}

/* ---- statements ---- */

static void run_body(Sema *S, const Frame *f, const Stmt *body, int depth);

static void run_apply(Sema *S, const Frame *f, const Stmt *st, int depth)
{
	const Call *c = &st->u.call;
	const char *name = c->callee->name;
	const Item *pat = find_pattern(S, name);
	if (!pat) {
		error_at(S, c->callee->loc, "unknown pattern '%s'", name);
		const char *sug = suggest_pattern(S, name);
		if (sug)
			diag_note(S->diag, c->callee->loc, "did you mean '%s'?", sug);
		note_frames(S, f);
		S->op_failed = true;
		return;
	}
	for (const Frame *g = f; g; g = g->parent)
		if (g->pattern == pat) {
			error_at(S, c->callee->loc, "pattern '%s' applies itself recursively", name);
			for (const Frame *h = f; h != g->parent; h = h->parent)
				S->cycle_reported[pattern_index(S, h->pattern)] = true;
			note_frames(S, f);
			S->op_failed = true;
			return;
		}
	if (depth >= MAX_APPLY_DEPTH) {
		error_at(S, st->loc, "patterns applied more than %d deep", MAX_APPLY_DEPTH);
		note_frames(S, f);
		S->op_failed = true;
		return;
	}
	if (++S->napplies > MAX_OP_APPLIES) {
		error_at(S, st->loc, "op '%s' applies patterns more than %d times", S->op->name, MAX_OP_APPLIES);
		note_frames(S, f);
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
	bool ok = bind_args(S, f, c, &b);
	/* Defaults may use the parameters before them. */
	i = 0;
	Frame partial = g;
	for (const Param *p = pat->u.pattern.params; p; p = p->next, i++) {
		if (given[i])
			continue;
		if (!p->def) {
			error_at(S, c->loc, "missing argument '%s' of pattern '%s'", p->name->name, name);
			diag_note(S->diag, p->name->loc, "'%s' is declared here", p->name->name);
			ok = false;
			continue;
		}
		partial.n = i;
		if (!eval(S, &partial, p->def, &g.values[i])) {
			ok = false;
			continue;
		}
		given[i] = true;
	}
	if (!ok) {
		note_frames(S, f);
		S->op_failed = true;
		return;
	}
	run_body(S, &g, pat->u.pattern.body, depth + 1);
}

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
		error_at(S, c->callee->loc, "unknown tensor source '%s' (use %s)", src,
		         allow_random ? "safetensors, npy or random" : "safetensors or npy");
		return false;
	}
	if (!bind_args(S, NULL, c, &b))
		return false;
	WeightBinding w = {.kind = kind, .loc = loc, .synth = SYNTH_PLAIN, .group = 64};
	if (kind == WEIGHTS_RANDOM) {
		if (given[0]) {
			if (!want_int(S, NULL, &v[0], "the seed"))
				return false;
			if (v[0].i < 0) {
				error_at(S, v[0].loc, "seed %lld is negative", (long long)v[0].i);
				return false;
			}
			w.seed = v[0].i;
		}
		if (given[1]) {
			int k;
			if (!symbol_of(S, &v[1], "kind of random weights", synth_kind_names, SYNTH_COUNT, &k))
				return false;
			w.synth = (SynthKind)k;
		}
		if (given[2]) {
			if (!want_int(S, NULL, &v[2], "the group size"))
				return false;
			if (v[2].i < 1 || v[2].i > INT32_MAX) {
				error_at(S, v[2].loc, "group %lld is out of range (1 to %d)", (long long)v[2].i,
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
			error_at(S, c->loc, "missing argument '%s' of %s", b.names[i], b.what);
			return false;
		}
		if (v[i].kind != V_STRING) {
			error_at(S, v[i].loc, "the %s of %s must be a string, found %s", b.names[i], b.what,
			         value_kind_name(v[i].kind));
			return false;
		}
	}
	const char *ext = kind == WEIGHTS_NPY ? ".npy" : ".safetensors";
	size_t pl = strlen(v[0].str), el = strlen(ext);
	if (pl <= el || strcmp(v[0].str + pl - el, ext) != 0) {
		error_at(S, v[0].loc, "%s expects a '%s' file, not '%s'", b.what, ext, v[0].str);
		return false;
	}
	if (kind == WEIGHTS_SAFETENSORS && !v[1].str[0]) {
		error_at(S, v[1].loc, "empty tensor name");
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
		error_at(S, v[0].loc, "tensor files cannot be read here");
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
			error_at(S, v[0].loc, "file '%s' not found", w.path);
		else
			error_at(S, v[0].loc, "cannot read file '%s': %s", w.path, strerror(err));
		if (strcmp(w.resolved, w.path) != 0)
			diag_note(S->diag, v[0].loc, "looked for %s", w.resolved);
		return false;
	}
	*out = w;
	return true;
}

/* The settings of an op body, defined once: name, what it takes. */
static const char *const setting_names[] = {"weights", "calibration", "importance", "rank", "search"};

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
		error_at(S, c->callee->loc, "search takes search(sparsity, tolerance, budget, max_depth, min_length, "
		                            "max_pattern, topk, max_sparsity), not '%s'",
		         c->callee->name);
		return;
	}
	Value v[NS];
	bool given[NS] = {false};
	Binder b = {"search", NS, names, v, given};
	if (!bind_args(S, NULL, c, &b))
		return;
	OpSearch o = {.given = true, -1, -1, -1, -1, -1, -1, -1, -1};
	for (int i = 0; i < NS; i++) {
		if (!given[i])
			continue;
		if (i < 3 || i == 7) { /* percentages */
			if (v[i].kind != V_PERCENT) {
				error_at(S, v[i].loc, "the %s of search must be a percentage such as 75%%, found %s", names[i],
				         value_kind_name(v[i].kind));
				return;
			}
			double f = pct_fraction(v[i].pct);
			const bool sp = i == 0 || i == 7;
			if (sp ? !(f > 0 && f < 1) : !(f >= 0 && f <= 1)) {
				error_at(S, v[i].loc, "%s %g%% is out of range (%s)", names[i], 100 * f,
				         sp ? "more than 0% and less than 100%" : "0% to 100%");
				return;
			}
			if (i == 7 && !(f > (given[0] ? o.sparsity : 0.75))) {
				error_at(S, v[i].loc, "max_sparsity %g%% must be above the sparsity (%g%%%s): the range runs from "
				                      "the sparsity to it",
				         100 * f, 100 * (given[0] ? o.sparsity : 0.75), given[0] ? "" : ", the default");
				return;
			}
			(i == 0 ? &o.sparsity : i == 1 ? &o.tolerance : i == 2 ? &o.budget : &o.max_sparsity)[0] = f;
			continue;
		}
		if (!want_int(S, NULL, &v[i], names[i]))
			return;
		static const int64_t lo[] = {1, 1, 1, 1}, hi[] = {3, 1 << 20, 1 << 20, 10000};
		if (v[i].i < lo[i - 3] || v[i].i > hi[i - 3]) {
			error_at(S, v[i].loc, "%s %lld is out of range (%lld to %lld)", names[i], (long long)v[i].i,
			         (long long)lo[i - 3], (long long)hi[i - 3]);
			return;
		}
		int *dst = i == 3 ? &o.max_depth : i == 4 ? &o.min_length : i == 5 ? &o.max_pattern : &o.topk;
		*dst = (int)v[i].i;
	}
	*out = o;
}

/* `NAME = SOURCE(...);` or `NAME = value;` in an op body. */
static void run_set(Sema *S, const Frame *f, const Stmt *st)
{
	OpResult *op = S->op;
	if (f && f->pattern)
		return; /* reported where the pattern is defined */
	const char *name = st->u.set.name->name;
	int which = -1;
	for (int i = 0; i < 5; i++)
		if (strcmp(name, setting_names[i]) == 0)
			which = i;
	if (which < 0) {
		error_at(S, st->u.set.name->loc,
		         "unknown setting '%s' (an op sets weights, calibration, importance, rank or search)", name);
		return;
	}
	SrcLoc *prev = &S->set_loc[which];
	if (prev->line) {
		error_at(S, st->loc, "'%s' of op '%s' is set twice", name, op->name);
		diag_note(S->diag, *prev, "first set here");
		return;
	}
	*prev = st->loc;
	const Call *c = st->u.set.is_call ? &st->u.set.call : NULL;
	Value v = {0};
	if (!c && !eval(S, NULL, st->u.set.value, &v))
		return;
	switch (which) {
	case 0: /* weights */
	case 1: /* calibration */
		if (!c) {
			error_at(S, st->u.set.value->loc, "%s takes a source: safetensors(file, tensor), "
			                                  "npy(file) or random(seed, kind, group)", name);
			return;
		}
		bind_source(S, c, st->loc, true, which == 0 ? &op->weights : &op->calibration);
		return;
	case 2: { /* importance */
		if (c) {
			if (bind_source(S, c, st->loc, false, &op->scores))
				op->importance = PAT_IMP_TENSOR;
			return;
		}
		int k;
		/* "tensor" is spelled as a source call, not as a name */
		if (symbol_of(S, &v, "importance", pat_importance_names, PAT_IMP_TENSOR, &k))
			op->importance = (PatImportance)k;
		return;
	}
	case 4: /* search */
		if (!c) {
			error_at(S, st->u.set.value->loc, "search takes search(sparsity, tolerance, budget, max_depth, "
			                                  "min_length, max_pattern, topk, max_sparsity)");
			return;
		}
		bind_search(S, c, &op->search);
		return;
	default: { /* rank */
		int k;
		if (c) {
			error_at(S, c->loc, "rank takes total or lookahead");
			return;
		}
		if (symbol_of(S, &v, "rank", pat_rank_names, PAT_NRANKS, &k)) {
			op->rank = (PatRank)k;
			op->rank_set = true;
		}
		return;
	}
	}
}

static const Ident *find_ident(const Ident *list, const char *name)
{
	for (; list; list = list->next)
		if (strcmp(list->name, name) == 0)
			return list;
	return NULL;
}

/* The identifier of statement st that spells `name`, for pointing at it. */
static const Ident *stmt_ident(const Stmt *st, const char *name)
{
	const Ident *id = NULL;
	switch (st->kind) {
	case STMT_SPLIT:
		if (!(id = find_ident(st->u.split.loop, name)))
			id = find_ident(st->u.split.names, name);
		break;
	case STMT_REORDER: id = find_ident(st->u.loops, name); break;
	case STMT_JOIN:
		if (!(id = find_ident(st->u.join.loops, name)))
			id = find_ident(st->u.join.name, name);
		break;
	case STMT_PERFORATE: id = find_ident(st->u.perforate.loop, name); break;
	case STMT_CONDENSE: id = find_ident(st->u.condense.loop, name); break;
	default: break;
	}
	return id;
}

/* Remembers the pattern applications that led to the primitive which
 * perforated or made loop `name`, for notes on later (GPU) errors. */
static void record_origin(Sema *S, const Frame *f, const char *name)
{
	LoopOrigin *o = NULL;
	for (int i = 0; i < S->norigins; i++)
		if (strcmp(S->origins[i].name, name) == 0)
			o = &S->origins[i];
	if (!o) {
		if (S->norigins == MAX_ORIGINS)
			return;
		o = &S->origins[S->norigins++];
	}
	memset(o, 0, sizeof *o);
	pir_name_copy(o->name, name);
	for (; f && f->pattern && o->n < MAX_FRAMES; f = f->parent) {
		o->pattern[o->n] = f->pattern->u.pattern.name->name;
		o->call[o->n++] = f->call;
	}
}

static void run_prim(Sema *S, const Frame *f, const Stmt *st)
{
	if (++S->nprims > MAX_OP_PRIMS) {
		error_at(S, st->loc, "op '%s' applies more than %d primitives", S->op->name, MAX_OP_PRIMS);
		note_frames(S, f);
		S->op_failed = true;
		return;
	}
	PirPrim p;
	if (!build_prim(S, f, st, &p)) {
		S->op_failed = true;
		note_frames(S, f);
		return;
	}
	PirReason why;
	if (!pir_apply(S->op->ir, &p, &why)) {
		const Ident *id = why.subject[0] ? stmt_ident(st, why.subject) : NULL;
		SrcLoc at = id ? id->loc : st->loc;
		error_at(S, at, "%s: %s", where(S, f), why.error);
		if (why.hint[0])
			diag_note(S->diag, at, "%s", why.hint);
		note_frames(S, f);
		S->op_failed = true;
		return;
	}
	if (why.warning[0]) {
		diag_warning(S->diag, st->loc, "%s: %s", where(S, f), why.warning);
		note_frames(S, f);
	}
	record_trace(S, f, &p, st->loc, why.warning);
	if (p.kind == PIR_PRIM_PERFORATE)
		record_origin(S, f, p.u.perforate.loop);
	else if (p.kind == PIR_PRIM_JOIN)
		record_origin(S, f, p.u.join.name);
}

static void run_body(Sema *S, const Frame *f, const Stmt *body, int depth)
{
	for (const Stmt *st = body; st && !S->op_failed; st = st->next) {
		switch (st->kind) {
		case STMT_APPLY:
			run_apply(S, f, st, depth);
			break;
		case STMT_SET:
			run_set(S, f, st);
			break;
		default:
			run_prim(S, f, st);
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
	error_at(S, st->u.call.callee->loc, "pattern '%s' applies itself recursively",
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

static bool symbol_of(Sema *S, const Value *v, const char *what, const char *const *names, int n,
                      int *out)
{
	if (v->kind == V_SYMBOL)
		for (int i = 0; i < n; i++)
			if (strcmp(v->str, names[i]) == 0) {
				*out = i;
				return true;
			}
	char list[160] = "";
	for (int i = 0; i < n; i++) {
		strcat(list, i ? (i == n - 1 ? " or " : ", ") : "");
		strcat(list, names[i]);
	}
	if (v->kind == V_SYMBOL)
		error_at(S, v->loc, "unknown %s '%s' (expected %s)", what, v->str, list);
	else
		error_at(S, v->loc, "%s must be one of %s, found %s", what, list, value_kind_name(v->kind));
	return false;
}

static bool op_header(Sema *S, const Item *it, OpResult *op)
{
	const Call *c = &it->u.op.kind;
	if (strcmp(c->callee->name, "spmm") != 0) {
		error_at(S, c->callee->loc, "unknown operator '%s' (patc compiles 'spmm'; a convolution "
		                            "enters as spmm through im2col)", c->callee->name);
		return false;
	}
	static const char *const names[] = {"M", "K", "N", "dtype", "layout"};
	Value v[5];
	bool given[5] = {false};
	Binder b = {"spmm", 5, names, v, given};
	if (!bind_args(S, NULL, c, &b))
		return false;
	int64_t *dims[3] = {&op->M, &op->K, &op->N};
	bool ok = true;
	for (int i = 0; i < 3; i++) {
		if (!given[i]) {
			error_at(S, c->loc, "op '%s' needs its size %s", op->name, names[i]);
			ok = false;
		} else if (!want_int(S, NULL, &v[i], names[i])) {
			ok = false;
		} else if (v[i].i < 1 || v[i].i > INT32_MAX) {
			error_at(S, v[i].loc, "%s = %lld is out of range (1 to %d)", names[i],
			         (long long)v[i].i, INT32_MAX);
			ok = false;
		} else {
			*dims[i] = v[i].i;
		}
	}
	int d = PAT_F32, l = PAT_LAYOUT_KN;
	if (given[3] && !symbol_of(S, &v[3], "dtype", pat_dtype_names, PAT_NDTYPES, &d))
		ok = false;
	if (given[4] && !symbol_of(S, &v[4], "layout", pat_layout_names, PAT_NLAYOUTS, &l))
		ok = false;
	op->dtype = (PatDtype)d;
	op->layout = (PatLayout)l;
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
		error_at(S, loc, "op '%s' cannot run on %s: %s", op->name, S->opt->target, v[i].text);
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
	pir_init(op->ir, op->name, op->M, op->K);
	Frame top = {0};
	run_body(S, &top, it->u.op.body, 0);
	op->ok = !S->op_failed;
	/* Calibration, importance and rank only mean something with weights
	 * (unless the weights setting itself failed, which was reported, or
	 * the body stopped at a refusal before the statements that set them). */
	if (S->op_failed)
		return;
	if (op->weights.kind == WEIGHTS_NONE && !S->set_loc[0].line)
		for (int i = 1; i < 5; i++)
			if (S->set_loc[i].line) {
				error_at(S, S->set_loc[i], "op '%s' sets %s but has no weights to prune: set "
				                           "'weights = ...'", op->name, setting_names[i]);
				op->ok = false;
				break;
			}
	if (S->opt->importance_set && op->weights.kind != WEIGHTS_NONE) { /* the command line's */
		op->importance = S->opt->importance;
		if (op->importance == PAT_IMP_WANDA && op->calibration.kind == WEIGHTS_NONE && !S->set_loc[1].line) {
			error_at(S, op->loc, "--importance=wanda (|w| * ||X_k||) needs calibration activations: set "
			                     "'calibration = ...' in op '%s'", op->name);
			op->ok = false;
		}
	} else if (op->importance == PAT_IMP_WANDA && op->calibration.kind == WEIGHTS_NONE &&
	           !S->set_loc[1].line) {
		error_at(S, S->set_loc[2], "importance wanda (|w| * ||X_k||) needs calibration "
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
				error_at(&S, name->loc, "pattern '%s' is defined twice", name->name);
				diag_note(diag, prev->u.pattern.name->loc, "first defined here");
				continue;
			}
			int nparams = 0;
			for (const Param *p = it->u.pattern.params; p; p = p->next)
				if (++nparams == MAX_PATTERN_PARAMS + 1)
					error_at(&S, p->name->loc, "pattern '%s' has more than %d parameters", name->name,
					         MAX_PATTERN_PARAMS);
			for (const Param *p = it->u.pattern.params; p && nparams <= MAX_PATTERN_PARAMS; p = p->next)
				for (const Param *q = it->u.pattern.params; q != p; q = q->next)
					if (strcmp(p->name->name, q->name->name) == 0) {
						error_at(&S, p->name->loc, "pattern '%s' has two parameters named '%s'",
						         name->name, p->name->name);
						diag_note(diag, q->name->loc, "first declared here");
						break;
					}
			/* Settings belong to ops: say so where the pattern is written. */
			for (const Stmt *st = it->u.pattern.body; st; st = st->next)
				if (st->kind == STMT_SET)
					error_at(&S, st->loc, "'%s' can only be set in an op, not in pattern '%s'",
					         st->u.set.name->name, name->name);
			S.ptable[pattern_slot(&S, name->name)] = S.npatterns;
			S.patterns[S.npatterns++] = it;
		} else if (it->kind == ITEM_OP) {
			const Ident *name = it->u.op.name;
			bool dup = false;
			for (int i = 0; i < nops && !dup; i++)
				if (strcmp(ops[i]->u.op.name->name, name->name) == 0) {
					error_at(&S, name->loc, "op '%s' is defined twice", name->name);
					diag_note(diag, ops[i]->u.op.name->loc, "first defined here");
					dup = true;
				}
			if (!dup && nops == MAX_OPS) {
				error_at(&S, name->loc, "more than %d ops in one program", MAX_OPS);
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
