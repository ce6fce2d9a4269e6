/* SPDX-License-Identifier: MIT */
/* diag.h - diagnostics in the GCC/clang form.
 *
 *   file.pat:12:5: error: message
 *      12 |     split m -> m0, m1 : 4, 250;
 *         |     ^~~~~
 *
 * The Diag context owns the table of source files (so every SrcLoc can be
 * shown with its line) and counts errors.  Output goes to a FILE (stderr in
 * the driver, a memory stream in tests).
 */
#ifndef PATC_DIAG_H
#define PATC_DIAG_H

#include "ast.h"
#include "../support/arena.h"
#include "../ir/pir.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum DiagLevel { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct SrcFile {
	const char *path;    /* as given or resolved; shown in diagnostics */
	const char *text;    /* NUL-terminated contents (which may hold NULs too) */
	size_t len;
	int included_from;   /* file index, 0 for a root */
	SrcLoc include_loc;
	/* a line already found for a diagnostic: where line shown_line starts
	 * (0: none), so that diagnostics in order scan the file once */
	int shown_line;
	size_t shown_off;
} SrcFile;

enum { DIAG_MAX_FILES = 256, DIAG_MAX_ERRORS = 100 };

typedef struct Diag {
	FILE *out;
	Arena *arena;
	int nfiles; /* files[0] is unused: index 0 means "no file" */
	SrcFile files[DIAG_MAX_FILES + 1];
	int errors, warnings;
	bool color;
} Diag;

/* After DIAG_MAX_ERRORS errors the next one says "too many errors,
 * stopping" and no more are shown: from then on there is no point going on
 * (the lexer ends its file, no more includes are loaded). */
static inline bool diag_stopped(const Diag *d) { return d->errors > DIAG_MAX_ERRORS; }

/* The length of a UTF-8 byte-order mark (EF BB BF) at text's start: 3 or 0.
 * One there is skipped, and a file's first line counts its columns after
 * it. */
static inline size_t diag_bom_len(const char *text, size_t len)
{
	return len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

void diag_init(Diag *d, Arena *arena, FILE *out);
/* Registers a source text; returns its index (>= 1) or 0 when full. */
int diag_add_file(Diag *d, const char *path, const char *text, size_t len);
void diag_report(Diag *d, DiagLevel level, SrcLoc loc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void diag_vreport(Diag *d, DiagLevel level, SrcLoc loc, const char *fmt, va_list ap);
#define diag_error(d, loc, ...) diag_report((d), DIAG_ERROR, (loc), __VA_ARGS__)
#define diag_warning(d, loc, ...) diag_report((d), DIAG_WARNING, (loc), __VA_ARGS__)
#define diag_note(d, loc, ...) diag_report((d), DIAG_NOTE, (loc), __VA_ARGS__)
/* A location-less message: "patc: error: ...". */
void diag_plain(Diag *d, DiagLevel level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A location between the front end's and the IR's form (PirLoc: a
 * length on one line). */
SrcLoc src_from_pir(PirLoc l);
PirLoc src_to_pir(SrcLoc l);

#endif
