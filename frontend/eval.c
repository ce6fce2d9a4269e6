/* SPDX-License-Identifier: MIT */
/* eval.c - the semantic pass's values: errors counted and noted with the
 * pattern applications that led to them, expressions evaluated to values
 * (integers, percentages, strings, names, '_') with a pattern's
 * parameters bound, arguments bound to parameters by position, name and
 * default, and names looked up in a fixed set (dtype, layout, rank ...). */
#define _DEFAULT_SOURCE
#include "sema_impl.h"
#include "../support/util.h"

#include <stdarg.h>
#include <string.h>

void sema_error_at(Sema *S, SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	S->errors++;
	diag_vreport(S->diag, DIAG_ERROR, loc, fmt, ap);
	va_end(ap);
}

/* "in pattern 'block' applied to op 'q'" notes, innermost first. */
void sema_note_frames(Sema *S, const Frame *f)
{
	for (; f && f->pattern; f = f->parent)
		diag_note(S->diag, f->call, "in pattern '%s' applied here",
		          f->pattern->u.pattern.name->name);
}

const char *sema_where(Sema *S, const Frame *f)
{
	if (f && f->pattern)
		return arena_printf(S->arena, "in pattern '%s' (op '%s')",
		                    f->pattern->u.pattern.name->name, S->op->name);
	return arena_printf(S->arena, "in op '%s'", S->op->name);
}

/* ---- expressions ---- */

const char *sema_value_kind_name(ValueKind k)
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
		sema_error_at(S, v->origin, "unknown name '%s' where %s is expected (the value of parameter '%s' of pattern "
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
		sema_error_at(S, v->loc, "unknown name '%s': pattern '%s' has no such parameter", v->str,
		              f->pattern->u.pattern.name->name);
	} else {
		sema_error_at(S, v->loc, "unknown name '%s' where %s is expected", v->str, what);
	}
}

bool sema_eval(Sema *S, const Frame *f, const Expr *e, Value *out)
{
	*out = (Value){.loc = e->loc};
	if (e->depth > MAX_EXPR_DEPTH) { /* keeps the recursion below bounded */
		sema_error_at(S, e->loc, "expression nested more than %d operators deep", MAX_EXPR_DEPTH);
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
		if (!sema_eval(S, f, e->u.operand, &v))
			return false;
		if (v.kind != V_INT) {
			sema_error_at(S, e->loc, "cannot negate %s", sema_value_kind_name(v.kind));
			return false;
		}
		out->kind = V_INT, out->i = -v.i;
		return true;
	}
	case EXPR_BINARY: {
		Value l, r;
		if (!sema_eval(S, f, e->u.bin.l, &l) || !sema_eval(S, f, e->u.bin.r, &r))
			return false;
		const Value *bad = l.kind != V_INT ? &l : r.kind != V_INT ? &r : NULL;
		if (bad) {
			if (bad->kind == V_SYMBOL && bad->param)
				unknown_name(S, f, bad, "an integer for arithmetic");
			else if (bad->kind == V_SYMBOL)
				sema_error_at(S, bad->loc, "unknown name '%s' in arithmetic", bad->str);
			else
				sema_error_at(S, bad->loc, "arithmetic needs integers, found %s",
				              sema_value_kind_name(bad->kind));
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
				sema_error_at(S, e->loc, "division by zero");
				return false;
			}
			if (l.i % r.i != 0) {
				sema_error_at(S, e->loc, "%lld / %lld is not an integer", (long long)l.i,
				              (long long)r.i);
				return false;
			}
			v = l.i / r.i;
			break;
		}
		if (!ok || v > ((int64_t)1 << 40) || v < -((int64_t)1 << 40)) {
			sema_error_at(S, e->loc, "arithmetic overflow");
			return false;
		}
		out->kind = V_INT, out->i = v;
		return true;
	}
	}
	return false;
}

/* Checks that v is an integer; `what` names it for the message. */
bool sema_want_int(Sema *S, const Frame *f, const Value *v, const char *what)
{
	if (v->kind == V_INT)
		return true;
	if (v->kind == V_SYMBOL)
		unknown_name(S, f, v, what);
	else if (v->kind == V_WILDCARD)
		sema_error_at(S, v->loc, "'_' is only allowed as a split factor");
	else
		sema_error_at(S, v->loc, "expected an integer for %s, found %s", what,
		              sema_value_kind_name(v->kind));
	return false;
}

/* ---- argument binding, shared by spmm(), weight sources and patterns ---- */

bool sema_bind_args(Sema *S, const Frame *f, const Call *c, Binder *b)
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
				sema_error_at(S, at, "%s has no parameter named '%s'", b->what, a->name);
				ok = false;
				continue;
			}
		} else {
			if (named_seen) {
				sema_error_at(S, at, "positional argument after named arguments in a call of %s",
				              b->what);
				ok = false;
				continue;
			}
			if (pos >= b->n) {
				sema_error_at(S, at, "too many arguments to %s (it takes %d)", b->what, b->n);
				ok = false;
				break;
			}
			slot = pos++;
		}
		if (b->given[slot]) {
			sema_error_at(S, at, "argument '%s' of %s given twice", b->names[slot], b->what);
			ok = false;
			continue;
		}
		b->given[slot] = true; /* even when bad: it was given, not missing */
		if (!sema_eval(S, f, a->value, &b->values[slot]))
			ok = false;
	}
	return ok;
}

bool sema_symbol_of(Sema *S, const Value *v, const char *what, const char *const *names, int n,
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
		sema_error_at(S, v->loc, "unknown %s '%s' (expected %s)", what, v->str, list);
	else
		sema_error_at(S, v->loc, "%s must be one of %s, found %s", what, list, sema_value_kind_name(v->kind));
	return false;
}
