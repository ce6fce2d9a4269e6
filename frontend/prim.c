/* SPDX-License-Identifier: MIT */
/* prim.c - primitive statements (split, reorder, join, perforate,
 * condense): each evaluated to a PirPrim with the pattern's parameters
 * bound and handed to pir_apply; a refusal is reported at the identifier
 * it names, with the pattern applications that led there.  Each applied
 * step is traced for --explain, and the applications that made or
 * perforated a loop are remembered for later (GPU) errors. */
#define _DEFAULT_SOURCE
#include "sema_impl.h"
#include "../support/util.h"

#include <stdlib.h>
#include <string.h>

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
			sema_error_at(S, loc, "%s lists more than %d loops", what, max);
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
			if (!sema_eval(S, f, e, &v)) {
				ok = false;
				nf++;
				continue;
			}
			if (nf < PIR_MAX_SPLIT) {
				if (v.kind == V_WILDCARD)
					p->u.split.factor[nf] = 0;
				else if (!sema_want_int(S, f, &v, "a split factor"))
					ok = false;
				else if (v.i < 1) {
					sema_error_at(S, v.loc, "split factor %lld is not positive", (long long)v.i);
					ok = false;
				} else
					p->u.split.factor[nf] = v.i;
			}
			nf++;
		}
		if (!ok)
			return false;
		if (nf != n) {
			sema_error_at(S, st->loc, "%s: split of '%s' names %d loop%s but gives %d factor%s",
			              sema_where(S, f), st->u.split.loop->name, n, n == 1 ? "" : "s", nf,
			              nf == 1 ? "" : "s");
			return false;
		}
		p->u.split.pad = st->u.split.pad;
		p->u.split.pad_amount = -1;
		if (st->u.split.pad_amount) {
			Value v;
			if (!sema_eval(S, f, st->u.split.pad_amount, &v) || !sema_want_int(S, f, &v, "a pad amount"))
				return false;
			if (v.i < 0) {
				sema_error_at(S, v.loc, "pad %lld is negative", (long long)v.i);
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
		if (!sema_eval(S, f, st->u.perforate.keep, &v))
			return false;
		if (v.kind == V_PERCENT) {
			p->u.perforate.is_percent = true;
			p->u.perforate.percent = v.pct;
			return true;
		}
		if (!sema_want_int(S, f, &v, "a keep count"))
			return false;
		p->u.perforate.keep = v.i;
		return true;
	}
	case STMT_CONDENSE:
		p->kind = PIR_PRIM_CONDENSE;
		if (strcmp(st->u.condense.operand->name, "x") != 0) {
			sema_error_at(S, st->u.condense.operand->loc,
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

void sema_run_prim(Sema *S, const Frame *f, const Stmt *st)
{
	if (++S->nprims > MAX_OP_PRIMS) {
		sema_error_at(S, st->loc, "op '%s' applies more than %d primitives", S->op->name, MAX_OP_PRIMS);
		sema_note_frames(S, f);
		S->op_failed = true;
		return;
	}
	PirPrim p;
	if (!build_prim(S, f, st, &p)) {
		S->op_failed = true;
		sema_note_frames(S, f);
		return;
	}
	PirReason why;
	if (!pir_apply(S->op->ir, &p, &why)) {
		const Ident *id = why.subject[0] ? stmt_ident(st, why.subject) : NULL;
		SrcLoc at = id ? id->loc : st->loc;
		sema_error_at(S, at, "%s: %s", sema_where(S, f), why.error);
		if (why.hint[0])
			diag_note(S->diag, at, "%s", why.hint);
		sema_note_frames(S, f);
		S->op_failed = true;
		return;
	}
	if (why.warning[0]) {
		diag_warning(S->diag, st->loc, "%s: %s", sema_where(S, f), why.warning);
		sema_note_frames(S, f);
	}
	record_trace(S, f, &p, st->loc, why.warning);
	if (p.kind == PIR_PRIM_PERFORATE)
		record_origin(S, f, p.u.perforate.loop);
	else if (p.kind == PIR_PRIM_JOIN)
		record_origin(S, f, p.u.join.name);
}
