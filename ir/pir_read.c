/* SPDX-License-Identifier: MIT */
/* pir_read.c - reader for the PatternIR text form (see pir_print.c and
 * docs/pir.md).
 *
 * A small hand-written scanner and recursive-descent parser, like QBE's
 * parse.c: the text form is an IR serialisation, not a user language, so it
 * does not go through the flex/bison front end.  Every block read is checked
 * with pir_verify.  The split/join records are provenance: they are read
 * and kept, not checked against the loops.  Errors carry LINE:COL; a NUL
 * byte is one (at its place), but in a comment.
 */
#include "pir.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_EOF, T_IDENT, T_INT, T_PUNCT } TokKind;

typedef struct Reader {
	const char *p, *end; /* the next byte, the text's end */
	int line, col;
	/* current token */
	TokKind kind;
	char text[64];
	int64_t num;
	int tline, tcol;
	char *err;
	size_t errlen;
	bool failed;
} Reader;

static bool rd_fail(Reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool rd_fail(Reader *r, const char *fmt, ...)
{
	if (r->failed)
		return false;
	r->failed = true;
	int n = snprintf(r->err, r->errlen, "%d:%d: ", r->tline, r->tcol);
	if (n < 0 || (size_t)n >= r->errlen)
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static void rd_advance(Reader *r)
{
	if (*r->p == '\n')
		r->line++, r->col = 1;
	else
		r->col++;
	r->p++;
}

static bool rd_next(Reader *r)
{
	for (;;) {
		while (r->p < r->end && isspace((unsigned char)*r->p))
			rd_advance(r);
		if (r->p < r->end && *r->p == '#') {
			const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
			r->col += (int)((nl ? nl : r->end) - r->p); /* (a comment may hold NULs) */
			r->p = nl ? nl : r->end;
			continue;
		}
		break;
	}
	r->tline = r->line, r->tcol = r->col;
	const char *s = r->p;
	if (s == r->end) {
		r->kind = T_EOF;
		strcpy(r->text, "end of input");
		return true;
	}
	if (!*s)
		return rd_fail(r, "NUL byte (\\x00) in the text");
	if (isalpha((unsigned char)*s) || *s == '_') {
		size_t n = 0;
		while (isalnum((unsigned char)r->p[0]) || r->p[0] == '_') {
			if (n + 1 < sizeof r->text)
				r->text[n] = r->p[0];
			n++;
			rd_advance(r);
		}
		if (n >= PIR_NAME_MAX)
			return rd_fail(r, "name too long (at most %d characters)", PIR_NAME_MAX - 1);
		r->text[n] = 0;
		r->kind = T_IDENT;
		return true;
	}
	if (isdigit((unsigned char)*s)) {
		int64_t v = 0;
		while (isdigit((unsigned char)r->p[0])) {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, r->p[0] - '0', &v))
				return rd_fail(r, "number out of range");
			rd_advance(r);
		}
		if (isalpha((unsigned char)r->p[0]) || r->p[0] == '_')
			return rd_fail(r, "bad number");
		r->kind = T_INT;
		r->num = v;
		snprintf(r->text, sizeof r->text, "%lld", (long long)v);
		return true;
	}
	if (s[0] == '-' && s[1] == '>') {
		rd_advance(r), rd_advance(r);
		r->kind = T_PUNCT;
		strcpy(r->text, "->");
		return true;
	}
	if (strchr("{}[],:=*.", *s)) {
		r->kind = T_PUNCT;
		r->text[0] = *s, r->text[1] = 0;
		rd_advance(r);
		return true;
	}
	if (isprint((unsigned char)*s))
		return rd_fail(r, "unexpected character '%c'", *s);
	return rd_fail(r, "unexpected byte \\x%02x", (unsigned char)*s);
}

static bool rd_is(Reader *r, const char *punct_or_word)
{
	return r->kind != T_EOF && r->kind != T_INT && strcmp(r->text, punct_or_word) == 0;
}

static bool rd_expect(Reader *r, const char *what)
{
	if (!rd_is(r, what))
		return rd_fail(r, "expected '%s', found '%s'", what, r->text);
	return rd_next(r);
}

static bool rd_name(Reader *r, char out[PIR_NAME_MAX])
{
	if (r->kind != T_IDENT)
		return rd_fail(r, "expected a name, found '%s'", r->text);
	snprintf(out, PIR_NAME_MAX, "%.*s", PIR_NAME_MAX - 1, r->text);
	return rd_next(r);
}

static bool rd_int(Reader *r, int64_t *out)
{
	if (r->kind != T_INT)
		return rd_fail(r, "expected a number, found '%s'", r->text);
	*out = r->num;
	return rd_next(r);
}

/* NAME, NAME, ... up to max; stops before a token that is not ','. */
static bool rd_names(Reader *r, char out[][PIR_NAME_MAX], int max, int *n)
{
	*n = 0;
	for (;;) {
		if (*n == max)
			return rd_fail(r, "too many names (at most %d)", max);
		if (!rd_name(r, out[(*n)++]))
			return false;
		if (!rd_is(r, ","))
			return true;
		if (!rd_next(r))
			return false;
	}
}

static bool rd_axis(Reader *r, PirAxis *a)
{
	for (int i = 0; i < PIR_NAXES; i++)
		if (r->kind == T_IDENT && strcmp(r->text, pir_axis_names[i]) == 0) {
			*a = (PirAxis)i;
			return rd_next(r);
		}
	return rd_fail(r, "expected an axis (m or k), found '%s'", r->text);
}

static bool rd_split(Reader *r, Pir *ir)
{
	if (ir->nrels == PIR_MAX_RELS)
		return rd_fail(r, "too many split/join records");
	PirRel *rel = &ir->rels[ir->nrels++];
	rel->kind = PIR_REL_SPLIT;
	rel->nfrom = 1;
	if (!rd_name(r, rel->from[0]) || !rd_expect(r, "->") ||
	    !rd_names(r, rel->to, PIR_MAX_SPLIT, &rel->nto) || !rd_expect(r, ":"))
		return false;
	for (int i = 0; i < rel->nto; i++) {
		if (i && !rd_expect(r, ","))
			return false;
		if (!rd_int(r, &rel->factor[i]))
			return false;
	}
	if (rd_is(r, "pad"))
		return rd_next(r) && rd_int(r, &rel->pad);
	return true;
}

static bool rd_join(Reader *r, Pir *ir)
{
	if (ir->nrels == PIR_MAX_RELS)
		return rd_fail(r, "too many split/join records");
	PirRel *rel = &ir->rels[ir->nrels++];
	rel->kind = PIR_REL_JOIN;
	rel->nto = 1;
	return rd_names(r, rel->from, PIR_MAX_SPLIT, &rel->nfrom) && rd_expect(r, "->") &&
	       rd_name(r, rel->to[0]);
}

static bool rd_loop(Reader *r, Pir *ir)
{
	if (ir->nloops == PIR_MAX_LOOPS)
		return rd_fail(r, "too many loops (at most %d)", PIR_MAX_LOOPS);
	PirLoop *l = &ir->loops[ir->nloops++];
	if (!rd_name(r, l->name) || !rd_int(r, &l->len))
		return false;
	l->nnz = l->len;
	if (rd_is(r, "keep") && (!rd_next(r) || !rd_int(r, &l->nnz)))
		return false;
	if (!rd_expect(r, "="))
		return false;
	for (;;) {
		if (l->ncomp == PIR_MAX_COMPS)
			return rd_fail(r, "too many components (at most %d)", PIR_MAX_COMPS);
		PirComp *c = &l->comp[l->ncomp++];
		if (!rd_axis(r, &c->axis) || !rd_expect(r, "[") || !rd_int(r, &c->extent) ||
		    !rd_expect(r, "]") || !rd_expect(r, "*") || !rd_int(r, &c->stride))
			return false;
		if (!rd_is(r, "."))
			break;
		if (!rd_next(r))
			return false;
	}
	if (rd_is(r, "condense")) {
		if (!rd_next(r) || !rd_expect(r, "on"))
			return false;
		if (!rd_is(r, "x"))
			return rd_fail(r, "expected 'x' (the dense operand), found '%s'", r->text);
		l->condensed = true;
		return rd_next(r);
	}
	return true;
}

static bool rd_block(Reader *r, Pir *ir)
{
	int line = r->tline, col = r->tcol;
	memset(ir, 0, sizeof *ir);
	if (!rd_expect(r, "pir") || !rd_name(r, ir->op))
		return false;
	for (int a = 0; a < PIR_NAXES; a++) {
		if (!rd_is(r, pir_axis_names[a]))
			return rd_fail(r, "expected '%s=LENGTH', found '%s'", pir_axis_names[a], r->text);
		if (!rd_next(r) || !rd_expect(r, "=") || !rd_int(r, &ir->len[a]))
			return false;
	}
	int bline = r->tline;
	if (!rd_expect(r, "{"))
		return false;
	while (!rd_is(r, "}")) {
		if (r->kind == T_EOF)
			return rd_fail(r, "unterminated pir block (opened on line %d)", bline);
		bool ok;
		if (rd_is(r, "split"))
			ok = rd_next(r) && rd_split(r, ir);
		else if (rd_is(r, "join"))
			ok = rd_next(r) && rd_join(r, ir);
		else if (rd_is(r, "loop"))
			ok = rd_next(r) && rd_loop(r, ir);
		else
			return rd_fail(r, "expected 'split', 'join', 'loop' or '}', found '%s'", r->text);
		if (!ok)
			return false;
	}
	if (!rd_next(r))
		return false;
	/* The padded extent is what the loops cover. */
	for (int a = 0; a < PIR_NAXES; a++) {
		int64_t ext = 1;
		for (int i = 0; i < ir->nloops; i++)
			for (int c = 0; c < ir->loops[i].ncomp; c++)
				if (ir->loops[i].comp[c].axis == (PirAxis)a &&
				    __builtin_mul_overflow(ext, ir->loops[i].comp[c].extent, &ext))
					return rd_fail(r, "axis %s: extent overflows", pir_axis_names[a]);
		ir->ext[a] = ext;
	}
	char why[256];
	if (!pir_verify(ir, why, sizeof why)) {
		r->tline = line, r->tcol = col; /* the block's `pir` */
		return rd_fail(r, "invalid PatternIR '%s': %s", ir->op, why);
	}
	return true;
}

/* pir_read_text for text of len bytes, which may hold NUL bytes (text[len]
 * must be one too): each is an error at its line and column.  A UTF-8
 * byte-order mark at the start is skipped (columns count after it).
 * (Declared here until pir.h declares it.) */
int pir_read_text_len(const char *text, size_t len, Pir *out, int max, char *err, size_t errlen);

int pir_read_text(const char *text, Pir *out, int max, char *err, size_t errlen)
{
	return pir_read_text_len(text, strlen(text), out, max, err, errlen);
}

int pir_read_text_len(const char *text, size_t len, Pir *out, int max, char *err, size_t errlen)
{
	Reader r = {.p = text, .end = text + len, .line = 1, .col = 1, .err = err, .errlen = errlen};
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		r.p += 3;
	if (errlen)
		err[0] = 0;
	if (!rd_next(&r))
		return -1;
	int n = 0;
	while (r.kind != T_EOF) {
		if (n == max) {
			rd_fail(&r, "too many pir blocks (at most %d)", max);
			return -1;
		}
		/* Report the block's own line for errors found by the verifier. */
		int line = r.tline, col = r.tcol;
		if (!rd_block(&r, &out[n])) {
			if (!r.failed) {
				r.tline = line, r.tcol = col;
				rd_fail(&r, "invalid pir block");
			}
			return -1;
		}
		n++;
	}
	if (n == 0) {
		rd_fail(&r, "no pir block");
		return -1;
	}
	return n;
}
