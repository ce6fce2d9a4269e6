/* SPDX-License-Identifier: MIT */
/* pat.y - grammar of the .pat language (docs/language.md).
 *
 * Actions only build AST nodes (frontend/ast.h); every check is made later
 * by the semantic pass.  Errors recover at statement (`;`) and item (`;`,
 * `}`) boundaries so one run reports many of them.
 */
%define api.pure full
%define api.prefix {pat}
%define api.location.type {SrcLoc}
%define parse.error custom
%locations
%expect 0
%param {void *scanner}
%parse-param {ParseCtx *ctx}

%code requires {
#include "../frontend/parse.h"
}

%code provides {
#define YYSTYPE PATSTYPE
#define YYLTYPE PATLTYPE
int patlex(PATSTYPE *lval, PATLTYPE *lloc, void *scanner);
}

%code {
#include <stdbool.h>
#include <string.h>

/* The parser's stack (bison's default): a program nested deeper, with
 * 10000 '(' or '-' open at once, is refused (paterror). */
#define YYMAXDEPTH 10000

#define YYLLOC_DEFAULT(Cur, Rhs, N)                                        \
	do {                                                               \
		if (N) {                                                   \
			(Cur) = YYRHSLOC(Rhs, 1);                          \
			(Cur).end_line = YYRHSLOC(Rhs, N).end_line;        \
			(Cur).end_col = YYRHSLOC(Rhs, N).end_col;          \
		} else {                                                   \
			(Cur) = YYRHSLOC(Rhs, 0);                          \
			(Cur).line = (Cur).end_line;                       \
			(Cur).col = (Cur).end_col + 1;                     \
			(Cur).end_col = (Cur).col;                         \
		}                                                          \
	} while (0)

static void paterror(const SrcLoc *loc, void *scanner, ParseCtx *ctx, const char *msg)
{
	(void)scanner;
	if (ctx->quiet)
		return; /* ctx->errors already counts the lexical error */
	ctx->errors++;
	if (!strcmp(msg, "memory exhausted")) /* (bison's, where the stack is full) */
		diag_error(ctx->diag, *loc, "nested too deeply: more than %d parentheses or signs open at once",
		           YYMAXDEPTH);
	else
		diag_error(ctx->diag, *loc, "%s", msg);
}

static void *node(ParseCtx *ctx, size_t size) { return arena_alloc(ctx->arena, size); }

static Ident *mk_ident(ParseCtx *ctx, const char *name, SrcLoc loc)
{
	Ident *id = node(ctx, sizeof *id);
	id->name = name;
	id->loc = loc;
	return id;
}

static Expr *mk_expr(ParseCtx *ctx, ExprKind kind, SrcLoc loc)
{
	Expr *e = node(ctx, sizeof *e);
	e->kind = kind;
	e->loc = loc;
	return e;
}

/* l op r, one deeper than the deeper of the two. */
static Expr *mk_binary(ParseCtx *ctx, char op, Expr *l, Expr *r, SrcLoc loc)
{
	Expr *e = mk_expr(ctx, EXPR_BINARY, loc);
	e->u.bin.op = op;
	e->u.bin.l = l;
	e->u.bin.r = r;
	e->depth = 1 + (l->depth > r->depth ? l->depth : r->depth);
	return e;
}

static Stmt *mk_stmt(ParseCtx *ctx, StmtKind kind, SrcLoc loc)
{
	Stmt *s = node(ctx, sizeof *s);
	s->kind = kind;
	s->loc = loc;
	return s;
}

static Item *mk_item(ParseCtx *ctx, ItemKind kind, SrcLoc loc)
{
	Item *it = node(ctx, sizeof *it);
	it->kind = kind;
	it->loc = loc;
	return it;
}

/* List appends in constant time: a list's first node keeps its last
 * (none yet: the first is the last), so that a long list is not walked at
 * every append. */
#define APPEND(T, head, x)                                                  \
	do {                                                                \
		T *x_ = (x);                                                \
		if (!(head))                                                \
			(head) = x_;                                        \
		else                                                        \
			((head)->last ? (head)->last : (head))->next = x_;  \
		(head)->last = x_;                                          \
	} while (0)
}

%union {
	int64_t i;
	PirPercent pct;
	const char *str;
	Ident *ident;
	Expr *expr;
	Arg *arg;
	Param *param;
	Stmt *stmt;
	Item *item;
	Call call;
	struct { bool pad; Expr *amount; SrcLoc loc; } pad;
}

%token <str> IDENT "identifier"
%token <i> INT "integer"
%token <pct> PERCENT "percentage"
%token <str> STRING "string"
%token WILDCARD "_"
%token ARROW "->"
%token INCLUDE "include" PATTERN "pattern" OP "op" APPLY "apply"
%token SPLIT "split" REORDER "reorder" JOIN "join" PERFORATE "perforate"
%token CONDENSE "condense" KEEP "keep" PAD "pad" ON "on"

%type <ident> ident idents
%type <expr> expr exprs
%type <arg> arg args args_opt
%type <param> param params params_opt
%type <stmt> stmt stmts
%type <item> item
%type <call> call
%type <pad> pad_opt

%left '+' '-'
%left '*' '/'
%precedence NEG

%%

program
	: %empty
	| program item { if ($2) APPEND(Item, ctx->items, $2); }
	;

item
	/* include "stdlib/block.pat"; */
	: INCLUDE STRING ';'
		{ $$ = mk_item(ctx, ITEM_INCLUDE, @$); $$->u.include.path = $2; $$->u.include.path_loc = @2;
		  $$->u.include.path_bad = $2 && $2 == ctx->bad_string; }
	/* pattern block(bm, bk, density = 25%) { ... } */
	| PATTERN ident '(' params_opt ')' '{' stmts '}'
		{ $$ = mk_item(ctx, ITEM_PATTERN, @$);
		  $$->u.pattern.name = $2; $$->u.pattern.params = $4; $$->u.pattern.body = $7;
		  ctx->nbraces = 0; /* between items: resynchronise after stray braces */ }
	/* op q: spmm(M = 768, K = 768, N = 512) { ... }   or  op q: spmm(...); */
	| OP ident ':' call '{' stmts '}'
		{ $$ = mk_item(ctx, ITEM_OP, @$); $$->u.op.name = $2; $$->u.op.kind = $4; $$->u.op.body = $6;
		  ctx->nbraces = 0; }
	| OP ident ':' call ';'
		{ $$ = mk_item(ctx, ITEM_OP, @$); $$->u.op.name = $2; $$->u.op.kind = $4; }
	/* A broken header: skip to the end of its body, if it has one, so
	 * the body's statements do not each look like a broken item. */
	| error ';' { $$ = NULL; if (ctx->nbraces > 0) YYERROR; ctx->quiet = false; yyerrok; }
	| error '}' { $$ = NULL; ctx->nbraces = 0; ctx->quiet = false; yyerrok; }
	;

params_opt
	: %empty { $$ = NULL; }
	| params
	;

params
	: param
	| params ',' param { $$ = $1; APPEND(Param, $$, $3); }
	;

/* name   or   name = default */
param
	: ident { $$ = node(ctx, sizeof *$$); $$->name = $1; }
	| ident '=' expr { $$ = node(ctx, sizeof *$$); $$->name = $1; $$->def = $3; }
	;

stmts
	: %empty { $$ = NULL; }
	| stmts stmt { $$ = $1; if ($2) APPEND(Stmt, $$, $2); }
	;

stmt
	/* split k -> k0, k1, k2 : _, 8, 4 pad; */
	: SPLIT ident ARROW idents ':' exprs pad_opt ';'
		{ $$ = mk_stmt(ctx, STMT_SPLIT, @$); $$->u.split.loop = $2; $$->u.split.names = $4;
		  $$->u.split.factors = $6; $$->u.split.pad = $7.pad; $$->u.split.pad_amount = $7.amount;
		  $$->u.split.pad_loc = $7.loc; }
	/* reorder m0, k0, m1, k1; */
	| REORDER idents ';' { $$ = mk_stmt(ctx, STMT_REORDER, @$); $$->u.loops = $2; }
	/* join k1, k2 -> k12; */
	| JOIN idents ARROW ident ';'
		{ $$ = mk_stmt(ctx, STMT_JOIN, @$); $$->u.join.loops = $2; $$->u.join.name = $4; }
	/* perforate k0 keep 6;   perforate k0 keep 25%; */
	| PERFORATE ident KEEP expr ';'
		{ $$ = mk_stmt(ctx, STMT_PERFORATE, @$); $$->u.perforate.loop = $2; $$->u.perforate.keep = $4; }
	/* condense k0 on x; */
	| CONDENSE ident ON ident ';'
		{ $$ = mk_stmt(ctx, STMT_CONDENSE, @$); $$->u.condense.loop = $2; $$->u.condense.operand = $4; }
	/* apply block(32, 32, keep = 25%); */
	| APPLY call ';' { $$ = mk_stmt(ctx, STMT_APPLY, @$); $$->u.call = $2; }
	/* weights = safetensors("w.safetensors", "layer.weight");   rank = lookahead; */
	| ident '=' call ';'
		{ $$ = mk_stmt(ctx, STMT_SET, @$); $$->u.set.name = $1; $$->u.set.call = $3; $$->u.set.is_call = true; }
	| ident '=' expr ';'
		{ $$ = mk_stmt(ctx, STMT_SET, @$); $$->u.set.name = $1; $$->u.set.value = $3; }
	| error ';' { $$ = NULL; ctx->quiet = false; yyerrok; }
	;

pad_opt
	: %empty { $$.pad = false; $$.amount = NULL; $$.loc = @$; }
	| PAD { $$.pad = true; $$.amount = NULL; $$.loc = @1; }
	| PAD expr { $$.pad = true; $$.amount = $2; $$.loc = @$; }
	;

/* name(arg, name = arg, ...) */
call
	: ident '(' args_opt ')' { $$.callee = $1; $$.args = $3; $$.loc = @$; }
	;

args_opt
	: %empty { $$ = NULL; }
	| args
	;

args
	: arg
	| args ',' arg { $$ = $1; APPEND(Arg, $$, $3); }
	;

arg
	: expr { $$ = node(ctx, sizeof *$$); $$->value = $1; }
	| IDENT '=' expr { $$ = node(ctx, sizeof *$$); $$->name = $1; $$->name_loc = @1; $$->value = $3; }
	;

idents
	: ident
	| idents ',' ident { $$ = $1; APPEND(Ident, $$, $3); }
	;

ident
	: IDENT { $$ = mk_ident(ctx, $1, @1); }
	;

exprs
	: expr
	| exprs ',' expr { $$ = $1; APPEND(Expr, $$, $3); }
	;

expr
	: INT { $$ = mk_expr(ctx, EXPR_INT, @$); $$->u.i = $1; }
	| PERCENT { $$ = mk_expr(ctx, EXPR_PERCENT, @$); $$->u.pct = $1; }
	| STRING { $$ = mk_expr(ctx, EXPR_STRING, @$); $$->u.str = $1; }
	| IDENT { $$ = mk_expr(ctx, EXPR_NAME, @$); $$->u.str = $1; }
	| WILDCARD { $$ = mk_expr(ctx, EXPR_WILDCARD, @$); }
	| '(' expr ')' { $$ = $2; $$->loc = @$; }
	| '-' expr %prec NEG { $$ = mk_expr(ctx, EXPR_NEG, @$); $$->u.operand = $2; $$->depth = $2->depth + 1; }
	| expr '+' expr { $$ = mk_binary(ctx, '+', $1, $3, @$); }
	| expr '-' expr { $$ = mk_binary(ctx, '-', $1, $3, @$); }
	| expr '*' expr { $$ = mk_binary(ctx, '*', $1, $3, @$); }
	| expr '/' expr { $$ = mk_binary(ctx, '/', $1, $3, @$); }
	;

%%

/* The name of a token as a user reads it: categories bare ("identifier"),
 * keywords and punctuation quoted ('split', ';'). */
static void token_name(yysymbol_kind_t k, char *buf, size_t len)
{
	const char *name = yysymbol_name(k);
	switch (k) {
	case YYSYMBOL_YYEOF:
	case YYSYMBOL_IDENT:
	case YYSYMBOL_INT:
	case YYSYMBOL_PERCENT:
	case YYSYMBOL_STRING:
		snprintf(buf, len, "%s", name);
		return;
	default:
		break;
	}
	size_t n = strlen(name);
	if (n >= 2 && (name[0] == '\'' || name[0] == '"'))
		snprintf(buf, len, "'%.*s'", (int)n - 2, name + 1);
	else
		snprintf(buf, len, "'%s'", name);
}

/* The symbol of a one-character token such as '(' (bison names those
 * symbols by number only). */
static yysymbol_kind_t symbol_of_char(char c)
{
	for (int k = 0; k < YYNTOKENS; k++) {
		const char *name = yysymbol_name((yysymbol_kind_t)k);
		if (name[0] == '\'' && name[1] == c && name[2] == '\'' && !name[3])
			return (yysymbol_kind_t)k;
	}
	return YYSYMBOL_YYEMPTY;
}

/* "syntax error: expected ';' before 'keep'" in the GCC manner, from the
 * parser's lookahead and the tokens it could have shifted.  Long lists are
 * summarised: the tokens that start a statement or an expression are named
 * as such. */
static int yyreport_syntax_error(const yypcontext_t *pc, void *scanner, ParseCtx *ctx)
{
	(void)scanner;
	yysymbol_kind_t expected[YYNTOKENS];
	int n = yypcontext_expected_tokens(pc, expected, YYNTOKENS);
	yysymbol_kind_t minus = symbol_of_char('-'), lparen = symbol_of_char('(');
	bool stmt = false, expr = false;
	for (int i = 0; i < n; i++)
		stmt |= expected[i] == YYSYMBOL_SPLIT, expr |= expected[i] == YYSYMBOL_PERCENT;
	char buf[512], name[64];
	size_t o = (size_t)snprintf(buf, sizeof buf, "syntax error");
	int shown = 0;
	for (int i = 0; i < n && o < sizeof buf - 64; i++) {
		yysymbol_kind_t k = expected[i];
		const char *what = NULL;
		if (stmt && ((k >= YYSYMBOL_APPLY && k <= YYSYMBOL_CONDENSE) || k == YYSYMBOL_IDENT)) {
			if (k != YYSYMBOL_APPLY)
				continue;
			what = "a statement (split, reorder, join, perforate, condense, apply or a setting)";
		} else if (expr && (k == YYSYMBOL_IDENT || k == YYSYMBOL_INT || k == YYSYMBOL_PERCENT ||
		                    k == YYSYMBOL_STRING || k == YYSYMBOL_WILDCARD ||
		                    k == minus || k == lparen)) {
			if (k != YYSYMBOL_PERCENT)
				continue;
			what = "an expression";
		} else {
			token_name(k, name, sizeof name);
			what = name;
		}
		bool last = true;
		for (int j = i + 1; j < n; j++) {
			yysymbol_kind_t q = expected[j];
			bool folded = (stmt && ((q >= YYSYMBOL_APPLY && q <= YYSYMBOL_CONDENSE) || q == YYSYMBOL_IDENT) &&
			               q != YYSYMBOL_APPLY) ||
			              (expr && q != YYSYMBOL_PERCENT &&
			               (q == YYSYMBOL_IDENT || q == YYSYMBOL_INT || q == YYSYMBOL_STRING ||
			                q == YYSYMBOL_WILDCARD || q == minus || q == lparen));
			if (!folded)
				last = false;
		}
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", shown == 0 ? ": expected " : last ? " or " : ", ", what);
		shown++;
	}
	yysymbol_kind_t got = yypcontext_token(pc);
	/* Only '=' fits after a name that starts a statement: the name was not
	 * a primitive, and a setting was the only way to read it. */
	bool setting = n == 1 && expected[0] == symbol_of_char('=');
	if (o < sizeof buf && got != YYSYMBOL_YYEMPTY) {
		if (got == YYSYMBOL_YYEOF) {
			ctx->eof_reported = true;
			snprintf(buf + o, sizeof buf - o, " at end of file");
		} else {
			token_name(got, name, sizeof name);
			snprintf(buf + o, sizeof buf - o, " before %s", name);
		}
	}
	if (setting)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf),
		         " (a statement is a primitive, 'apply', or a setting 'NAME = ...')");
	paterror(yypcontext_location(pc), scanner, ctx, buf);
	if (got == YYSYMBOL_YYEOF && ctx->nbraces > 0 && ctx->nbraces <= 64 && !ctx->quiet)
		diag_note(ctx->diag, ctx->braces[ctx->nbraces - 1], "to match this '{'");
	return 0;
}
