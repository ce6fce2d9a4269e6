/* diag.c - GCC/clang-style diagnostics; see diag.h. */
#include "diag.h"

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

/* Shows the line of loc with a caret under its first column and tildes
 * under the rest of the range (on that line). */
static void show_line(Diag *d, const SrcFile *f, SrcLoc loc)
{
	const char *p = f->text, *end = f->text + f->len;
	for (int line = 1; line < loc.line && p < end; p++)
		if (*p == '\n')
			line++;
	const char *eol = p;
	while (eol < end && *eol != '\n' && *eol != '\r')
		eol++;
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
	fprintf(d->out, "%s%.*s%s", cut_before, (int)(to - from), from, cut_after);
	fprintf(d->out, "\n%*s | %s", w, "", from > p ? "   " : "");
	const int first = (int)(from - p) + 1; /* the column shown first */
	/* one mark a character shown: none for a UTF-8 continuation byte */
	for (int c = first; c < loc.col; c++)
		if (p + c - 1 >= eol || !cont_byte(p[c - 1]))
			fputc(p + c - 1 < eol && p[c - 1] == '\t' ? '\t' : ' ', d->out);
	if (last > (int)(to - p))
		last = (int)(to - p) > loc.col ? (int)(to - p) : loc.col;
	if (d->color)
		fputs("\033[1;32m", d->out);
	fputc('^', d->out);
	for (int c = loc.col + 1; c <= last; c++)
		if (p + c - 1 >= eol || !cont_byte(p[c - 1]))
			fputc('~', d->out);
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
	const SrcFile *f = loc.file > 0 && loc.file < d->nfiles ? &d->files[loc.file] : NULL;
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
