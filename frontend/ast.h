/* SPDX-License-Identifier: MIT */
/* ast.h - the syntax tree of a .pat program.
 *
 * Built by the grammar actions (grammar/pat.y), which only build nodes; every
 * check lives in the semantic pass (sema.c).  All nodes live in the
 * program's arena.  Lists are singly linked through `next`, in source order.
 */
#ifndef PATC_AST_H
#define PATC_AST_H

#include "../ir/pir.h"

#include <stdbool.h>
#include <stdint.h>

/* A source range; file indexes the Diag's file table (0 = none). */
typedef struct SrcLoc {
	int file;
	int line, col;         /* first character, 1-based */
	int end_line, end_col; /* last character, inclusive */
} SrcLoc;

typedef enum ExprKind {
	EXPR_INT,      /* u.i */
	EXPR_PERCENT,  /* u.pct: `25%`, `6.25%`, exact */
	EXPR_STRING,   /* u.str */
	EXPR_NAME,     /* u.str: a parameter, or a symbol such as f16 or nk */
	EXPR_WILDCARD, /* `_`: a split factor to infer */
	EXPR_BINARY,   /* u.bin: + - * / */
	EXPR_NEG,      /* u.operand */
} ExprKind;

typedef struct Expr {
	ExprKind kind;
	SrcLoc loc;
	int depth;         /* nesting depth of operators: 0 for a leaf */
	struct Expr *next; /* in a list of factors */
	struct Expr *last; /* on a list's first node while the parser builds it: its last */
	union {
		int64_t i;
		PirPercent pct;
		const char *str;
		struct {
			char op;
			struct Expr *l, *r;
		} bin;
		struct Expr *operand;
	} u;
} Expr;

typedef struct Ident {
	const char *name;
	SrcLoc loc;
	struct Ident *next;
	struct Ident *last; /* on a list's first node while the parser builds it: its last */
} Ident;

/* `name = value` or a positional `value` (name == NULL). */
typedef struct Arg {
	const char *name;
	SrcLoc name_loc;
	Expr *value;
	struct Arg *next;
	struct Arg *last; /* on a list's first node while the parser builds it: its last */
} Arg;

typedef struct Call {
	Ident *callee;
	Arg *args;
	SrcLoc loc;
} Call;

typedef enum StmtKind {
	STMT_SPLIT,     /* u.split */
	STMT_REORDER,   /* u.loops */
	STMT_JOIN,      /* u.join */
	STMT_PERFORATE, /* u.perforate */
	STMT_CONDENSE,  /* u.condense */
	STMT_APPLY,     /* u.call: apply PATTERN(args) */
	STMT_SET,       /* u.set: NAME = SOURCE(args);  or  NAME = value; */
} StmtKind;

typedef struct Stmt {
	StmtKind kind;
	SrcLoc loc; /* the whole statement */
	struct Stmt *next;
	struct Stmt *last; /* on a list's first node while the parser builds it: its last */
	union {
		struct {
			Ident *loop, *names;
			Expr *factors;
			bool pad;
			Expr *pad_amount; /* NULL: `pad` alone */
			SrcLoc pad_loc;
		} split;
		Ident *loops;
		struct {
			Ident *loops, *name;
		} join;
		struct {
			Ident *loop;
			Expr *keep;
		} perforate;
		struct {
			Ident *loop, *operand;
		} condense;
		Call call;
		struct {
			Ident *name;
			bool is_call;
			Call call;   /* when is_call */
			Expr *value; /* otherwise */
		} set;
	} u;
} Stmt;

typedef struct Param {
	Ident *name;
	Expr *def; /* default value or NULL */
	struct Param *next;
	struct Param *last; /* on a list's first node while the parser builds it: its last */
} Param;

typedef enum ItemKind {
	ITEM_INCLUDE, /* u.include */
	ITEM_PATTERN, /* u.pattern */
	ITEM_OP,      /* u.op */
} ItemKind;

typedef struct Item {
	ItemKind kind;
	SrcLoc loc;
	struct Item *next;
	struct Item *last; /* on a list's first node while the parser builds it: its last */
	union {
		struct {
			const char *path;
			SrcLoc path_loc;
			bool path_bad; /* its literal had an unknown escape (reported): not looked for */
		} include;
		struct {
			Ident *name;
			Param *params;
			Stmt *body;
		} pattern;
		struct {
			Ident *name;
			Call kind; /* spmm(M = ..., K = ..., ...) */
			Stmt *body;
		} op;
	} u;
} Item;

#endif
