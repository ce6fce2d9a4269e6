/* SPDX-License-Identifier: MIT */
/* sema_impl.h - what the semantic pass's files share inside frontend/:
 * its state (Sema), the values expressions evaluate to and the frames of
 * pattern applications, and the functions of eval.c (errors with their
 * notes, expressions, argument binding), prim.c (primitive statements)
 * and settings.c (an op's settings), which sema.c calls.  The calls go one
 * way: sema.c calls the other three, prim.c and settings.c call eval.c,
 * and eval.c calls none of them. */
#ifndef PATC_SEMA_IMPL_H
#define PATC_SEMA_IMPL_H

#include "frontend.h"

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
	SrcLoc set_loc[6]; /* where each setting was given (line 0: not yet) */
	bool *cycle_reported; /* by pattern index: in a recursion already reported */
} Sema;

typedef struct Binder {
	const char *what; /* "spmm", "pattern 'block'" */
	int n;
	const char *const *names;
	Value *values;
	bool *given;
} Binder;

/* ---- eval.c ---- */

/* An error at loc, counted. */
void sema_error_at(Sema *S, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "in pattern 'block' applied to op 'q'" notes, innermost first. */
void sema_note_frames(Sema *S, const Frame *f);
/* "in pattern 'p' (op 'q')" or "in op 'q'", for a message. */
const char *sema_where(Sema *S, const Frame *f);
/* "an integer", "a percentage", ... */
const char *sema_value_kind_name(ValueKind k);
/* Evaluates e with f's parameters bound; false after an error. */
bool sema_eval(Sema *S, const Frame *f, const Expr *e, Value *out);
/* Checks that v is an integer; `what` names it for the message. */
bool sema_want_int(Sema *S, const Frame *f, const Value *v, const char *what);
/* Binds call c's arguments (positional, then named) to b's parameters:
 * b->values and b->given; false after an error. */
bool sema_bind_args(Sema *S, const Frame *f, const Call *c, Binder *b);
/* The index in names[0 .. n-1] of the name v; false after an error that
 * lists them (what names v). */
bool sema_symbol_of(Sema *S, const Value *v, const char *what, const char *const *names, int n, int *out);

/* ---- prim.c ---- */

/* Runs primitive statement st: evaluated to a PirPrim and applied to the
 * op's PatternIR, a refusal reported at it (the op then fails). */
void sema_run_prim(Sema *S, const Frame *f, const Stmt *st);

/* ---- settings.c ---- */

/* The settings of an op body, defined once: name, what it takes. */
extern const char *const sema_setting_names[6];
/* `NAME = SOURCE(...);` or `NAME = value;` in an op body. */
void sema_run_set(Sema *S, const Frame *f, const Stmt *st);

#endif
