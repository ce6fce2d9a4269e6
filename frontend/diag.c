/* SPDX-License-Identifier: MIT */
/* diag.c - GCC/clang-style diagnostics; see diag.h. */
#include "diag.h"
#include "../support/util.h"

#include <stdint.h>
#include <string.h>

static const char *const level_names[] = {"error", "warning", "note"};
static const char *const level_colors[] = {"\033[1;31m", "\033[1;35m", "\033[1;36m"};

void diag_init(Diag *d, Arena *arena, FILE *out)
{
	memset(d, 0, sizeof *d);
	d->out = out;
	d->arena = arena;
	d->nfiles = 1;
}

int diag_add_file(Diag *d, const char *path, const char *text, size_t len)
{
	if (d->nfiles > DIAG_MAX_FILES)
		return 0;
	SrcFile *f = &d->files[d->nfiles];
	f->path = arena_strdup(d->arena, path);
	f->text = text;
	f->len = len;
	return d->nfiles++;
}

/* A line longer than this (in bytes) is shown by a window around loc:
 * WINDOW_BEFORE bytes before its column, "..." for what is cut off. */
enum { LINE_SHOWN = 200, WINDOW_BEFORE = 60, WINDOW = 160 };

static bool cont_byte(char c) { return ((unsigned char)c & 0xc0) == 0x80; }

/* The columns a terminal gives the UTF-8 character starting at s (before
 * end): 2 for the East Asian wide and fullwidth ones (Unicode's
 * EastAsianWidth W and F: Hangul, CJK, kana, fullwidth forms, emoji), 0
 * for combining marks and zero-width characters, 1 for the rest and for
 * bytes that are not UTF-8. */
static int char_cols(const char *s, const char *end)
{
	const unsigned char b = (unsigned char)*s;
	const int n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
	if (n == 1 || end - s < n)
		return 1;
	uint32_t u = b & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if (!cont_byte(s[i]))
			return 1;
		u = u << 6 | ((unsigned char)s[i] & 0x3f);
	}
	static const uint32_t zero[][2] = {
		{0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd}, {0x0610, 0x061a}, {0x064b, 0x065f},
		{0x0e31, 0x0e31}, {0x0e34, 0x0e3a}, {0x0e47, 0x0e4e}, {0x1ab0, 0x1aff}, {0x1dc0, 0x1dff},
		{0x200b, 0x200f}, {0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f}, {0xfeff, 0xfeff},
	};
	static const uint32_t wide[][2] = {
		{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec}, {0x25fd, 0x25fe},
		{0x2614, 0x2615}, {0x2648, 0x2653}, {0x26a1, 0x26a1}, {0x26aa, 0x26ab}, {0x26bd, 0x26be},
		{0x26c4, 0x26c5}, {0x26f5, 0x26f5}, {0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705},
		{0x270a, 0x270b}, {0x2728, 0x2728}, {0x274c, 0x274c}, {0x2753, 0x2755}, {0x2795, 0x2797},
		{0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf},
		{0x4e00, 0x9fff}, {0xa000, 0xa4cf}, {0xa960, 0xa97f}, {0xac00, 0xd7a3}, {0xf900, 0xfaff},
		{0xfe10, 0xfe19}, {0xfe30, 0xfe6f}, {0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x16fe0, 0x18cff},
		{0x1b000, 0x1b2ff}, {0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf}, {0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a},
		{0x1f200, 0x1f251}, {0x1f300, 0x1f64f}, {0x1f680, 0x1f6ff}, {0x1f7e0, 0x1f7eb}, {0x1f90c, 0x1f9ff},
		{0x1fa70, 0x1faff}, {0x20000, 0x3fffd},
	};
	for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
		if (u >= zero[i][0] && u <= zero[i][1])
			return 0;
	for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
		if (u >= wide[i][0] && u <= wide[i][1])
			return 2;
	return 1;
}

/* mark once for each column the characters starting in bytes [a, b) of
 * the line [p, eol) take (a tab for a tab, which the line shows too; one
 * column for each byte that is not part of a valid UTF-8 character, as a
 * terminal shows each such byte as U+FFFD). */
static void mark_cols(FILE *out, const char *line, const char *a, const char *b, const char *eol, char mark)
{
	for (const char *c = a; c < b;) {
		if (c >= eol) { /* (a range past the line's end: one mark a column) */
			fputc(mark, out);
			c++;
			continue;
		}
		if (*c == '\t' && mark == ' ') {
			fputc('\t', out);
			c++;
			continue;
		}
		if (cont_byte(*c)) { /* (the rest of a character begun before a, or a stray byte) */
			const char *s = c;
			while (s > line && c - s < 3 && cont_byte(*s))
				s--;
			if (util_utf8_len(s, (size_t)(eol - s)) > c - s) {
				c++;
				continue;
			}
		}
		const int k = util_utf8_len(c, (size_t)(eol - c));
		for (int w = k ? char_cols(c, eol) : 1; w > 0; w--)
			fputc(mark, out);
		c += k ? k : 1;
	}
}

/* Where line starts in f (its end where the file has fewer lines; after a
 * byte-order mark on line 1).  From the line found last where that comes
 * before, so diagnostics in order of lines cost one pass over the file,
 * not one each (100 errors in a 64 MiB file). */
static const char *line_start(SrcFile *f, int line)
{
	if (f->shown_line == 0 || line < f->shown_line)
		f->shown_line = 1, f->shown_off = 0;
	const char *p = f->text + f->shown_off, *end = f->text + f->len;
	int at = f->shown_line;
	for (; at < line; at++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return end;
		p = nl + 1;
	}
	f->shown_line = at, f->shown_off = (size_t)(p - f->text);
	if (line == 1)
		p += diag_bom_len(f->text, f->len);
	return p;
}

/* Shows the line of loc with a caret under its first column and tildes
 * under the rest of the range (on that line). */
static void show_line(Diag *d, SrcFile *f, SrcLoc loc)
{
	const char *p = line_start(f, loc.line), *end = f->text + f->len;
	/* to its '\n' (a bare '\r' starts no line, for the lexer either), less a
	 * CRLF's '\r' */
	const char *eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol)
		eol = end;
	if (eol > p && eol[-1] == '\r')
		eol--;
	int last = loc.end_line == loc.line ? loc.end_col : (int)(eol - p);
	if (last < loc.col)
		last = loc.col;
	/* the bytes [from, to) of the line shown, whole UTF-8 characters */
	const char *from = p, *to = eol;
	if (eol - p > LINE_SHOWN) {
		if (loc.col - 1 > WINDOW_BEFORE)
			from = p + (loc.col - 1 - WINDOW_BEFORE < eol - p ? loc.col - 1 - WINDOW_BEFORE : eol - p);
		/* (back over at most 3 continuation bytes: a character's, in valid UTF-8) */
		for (int i = 0; i < 3 && from > p && cont_byte(*from); i++)
			from--;
		to = eol - from > WINDOW ? from + WINDOW : eol;
		for (int i = 0; i < 3 && to < eol && cont_byte(*to); i++)
			to--;
	}
	const char *cut_before = from > p ? "..." : "", *cut_after = to < eol ? "..." : "";
	int w = fprintf(d->out, " %4d | ", loc.line) - 3;
	fputs(cut_before, d->out);
	/* (a bare '\r' shown would send the rest to column 1; a NUL or an escape
	 * is nothing to send a terminal: each such control byte shows as a space) */
	for (const char *c = from; c < to; c++)
		fputc(((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f ? ' ' : *c, d->out);
	fputs(cut_after, d->out);
	fprintf(d->out, "\n%*s | %s", w, "", from > p ? "   " : "");
	const int first = (int)(from - p) + 1; /* the column shown first */
	/* marks by the columns a terminal shows: none for a UTF-8 continuation
	 * byte, two for a wide character */
	mark_cols(d->out, p, p + first - 1, p + loc.col - 1, eol, ' ');
	if (last > (int)(to - p))
		last = (int)(to - p) > loc.col ? (int)(to - p) : loc.col;
	if (d->color)
		fputs("\033[1;32m", d->out);
	fputc('^', d->out);
	const char *at = p + loc.col - 1; /* (a wide character's second column: '~') */
	if (at < eol && !cont_byte(*at) && char_cols(at, eol) == 2)
		fputc('~', d->out);
	mark_cols(d->out, p, p + loc.col, p + last, eol, '~');
	if (d->color)
		fputs("\033[0m", d->out);
	fputc('\n', d->out);
}

void diag_vreport(Diag *d, DiagLevel level, SrcLoc loc, const char *fmt, va_list ap)
{
	if (level == DIAG_ERROR && ++d->errors > DIAG_MAX_ERRORS) {
		if (d->errors == DIAG_MAX_ERRORS + 1)
			fprintf(d->out, "patc: fatal error: too many errors, stopping\n");
		return;
	}
	if (level == DIAG_WARNING)
		d->warnings++;
	if (level == DIAG_NOTE && d->errors > DIAG_MAX_ERRORS)
		return;
	SrcFile *f = loc.file > 0 && loc.file < d->nfiles ? &d->files[loc.file] : NULL;
	if (d->color)
		fputs("\033[1m", d->out);
	if (f && loc.line > 0)
		fprintf(d->out, "%s:%d:%d: ", f->path, loc.line, loc.col);
	else if (f)
		fprintf(d->out, "%s: ", f->path);
	else
		fputs("patc: ", d->out);
	if (d->color)
		fprintf(d->out, "%s%s:\033[0m ", level_colors[level], level_names[level]);
	else
		fprintf(d->out, "%s: ", level_names[level]);
	vfprintf(d->out, fmt, ap);
	fputc('\n', d->out);
	if (f && loc.line > 0)
		show_line(d, f, loc);
}

void diag_report(Diag *d, DiagLevel level, SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vreport(d, level, loc, fmt, ap);
	va_end(ap);
}

void diag_plain(Diag *d, DiagLevel level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vreport(d, level, (SrcLoc){0}, fmt, ap);
	va_end(ap);
}

SrcLoc src_from_pir(PirLoc l)
{
	return (SrcLoc){(int)l.file, (int)l.line, (int)l.col, (int)l.line,
	                (int)(l.col + (l.len ? l.len - 1 : 0))};
}

PirLoc src_to_pir(SrcLoc l)
{
	uint32_t len = l.end_line == l.line && l.end_col >= l.col ? (uint32_t)(l.end_col - l.col + 1) : 1;
	return (PirLoc){(uint32_t)l.file, (uint32_t)l.line, (uint32_t)l.col, len};
}
