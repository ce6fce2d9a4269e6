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

#include <stdarg.h>
#include <stdio.h>

typedef enum DiagLevel { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct SrcFile {
	const char *path;    /* as given or resolved; shown in diagnostics */
	const char *text;    /* NUL-terminated contents */
	size_t len;
	int included_from;   /* file index, 0 for a root */
	SrcLoc include_loc;
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

#endif
