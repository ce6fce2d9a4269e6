/* SPDX-License-Identifier: MIT */
/* parse.h - the parser's context, shared by the generated lexer and parser
 * (grammar/) and the front end that drives them (source.c). */
#ifndef PATC_PARSE_H
#define PATC_PARSE_H

#include "ast.h"
#include "diag.h"

typedef struct ParseCtx {
	Diag *diag;
	Arena *arena;
	int file;       /* index in diag's file table */
	int line, col;  /* the lexer's position: next character */
	SrcLoc comment; /* where an open block comment started */
	int errors;     /* lexical and syntax errors in this file */
	bool quiet;     /* after an unterminated string, until the parser has
	                 * recovered: its syntax errors are only echoes */
	SrcLoc braces[64]; /* open '{' not yet closed, innermost last */
	int nbraces;
	bool eof_reported; /* a syntax error was reported at end of file */
	Item *items;    /* result, in source order */
	const char *bad_string; /* the last string literal with an unknown escape or a
	                         * NUL byte, as decoded */
	const char *text;  /* the file's own bytes (the scanner reads a copy) */
	size_t off;        /* the lexer's position in text: next byte */
	size_t tok_off;    /* where the current token starts in text */
} ParseCtx;

/* Parses one registered source file into ctx->items.  Returns the number of
 * lexical and syntax errors reported (0 on success). */
int pat_parse_file(Diag *diag, Arena *arena, int file, Item **items);

#endif
