/* SPDX-License-Identifier: MIT */
/* source.c - loading .pat files and their includes.
 *
 * Include resolution: an absolute path as is; otherwise the including
 * file's directory, then each -I directory, then the stdlib directory.  A
 * file is read once (include-once, by canonical path); a file that includes
 * one of the files currently being loaded is an include cycle.  A candidate
 * that is not there (ENOENT, ENOTDIR) sends the search on; one that is there
 * but cannot be read (a directory, no permission, a name too long) ends it
 * with the system's reason.
 */
#define _DEFAULT_SOURCE
#include "frontend.h"
#include "parse.h"
#include "../support/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_INCLUDE_DEPTH = 64 };

typedef struct Loader {
	const FrontendOptions *opt;
	Diag *diag;
	Arena *arena;
	int errors;
	Item *items, **tail;
	/* canonical paths: loaded[] all files, stack[] the ones being loaded */
	const char *loaded[DIAG_MAX_FILES];
	int nloaded;
	const char *stack[MAX_INCLUDE_DEPTH];
	int stack_file[MAX_INCLUDE_DEPTH];
	int depth;
} Loader;

static const char *dir_of(Arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ".";
	if (slash == path)
		return "/";
	return arena_strndup(a, path, (size_t)(slash - path));
}

static const char *canonical(Arena *a, const char *path)
{
	char buf[PATH_MAX];
	if (realpath(path, buf))
		return arena_strdup(a, buf);
	return arena_strdup(a, path);
}

/* 0 where path is a regular file we may read; else an errno value: ENOENT
 * or ENOTDIR where nothing is there, EISDIR for a directory or another
 * non-file, EACCES, ENAMETOOLONG, ELOOP... where something is. */
static int readable(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return errno ? errno : ENOENT;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? EISDIR : ENODEV;
	return access(path, R_OK) == 0 ? 0 : errno;
}

static bool is_absent(int err) { return err == ENOENT || err == ENOTDIR; }

static int load(Loader *L, const char *path, const char *text, int parent, SrcLoc from);

static void do_include(Loader *L, Item *it, int file)
{
	const char *want = it->u.include.path;
	SrcLoc at = it->u.include.path_loc;
	char q[UTIL_QUOTE_BUF], q2[UTIL_QUOTE_BUF];
	if (it->u.include.path_bad)
		return; /* (its escape is the error: no second one for a file never named) */
	if (L->opt->sandbox) {
		L->errors++;
		diag_error(L->diag, at, "cannot include '%s': includes are disabled here", util_quote(want, q));
		return;
	}
	if (!want || !want[0]) {
		L->errors++;
		diag_error(L->diag, at, "empty include path");
		return;
	}
	const char *dirs[PAT_MAX_INCLUDE_DIRS + 2]; /* the file's own, -I's, the standard library */
	int ndirs = 0;
	if (want[0] != '/') {
		dirs[ndirs++] = dir_of(L->arena, L->diag->files[file].path);
		for (int i = 0; i < L->opt->ninclude && i < PAT_MAX_INCLUDE_DIRS; i++)
			dirs[ndirs++] = L->opt->include_dirs[i];
		if (L->opt->stdlib_dir)
			dirs[ndirs++] = L->opt->stdlib_dir;
	}
	const char *found = NULL;
	int err = ENOENT;
	for (int i = 0; i < (ndirs ? ndirs : 1) && is_absent(err); i++) {
		found = ndirs ? arena_printf(L->arena, "%s/%s", dirs[i], want) : want;
		err = readable(found);
	}
	if (err && !is_absent(err)) {
		L->errors++;
		if (found == want)
			diag_error(L->diag, at, "cannot read include file '%s': %s", util_quote(want, q), strerror(err));
		else
			diag_error(L->diag, at, "cannot read include file '%s' (as '%s'): %s", util_quote(want, q),
			           util_quote(found, q2), strerror(err));
		return;
	}
	if (err) {
		L->errors++;
		diag_error(L->diag, at, "cannot find include file '%s'", util_quote(want, q));
		for (int i = 0; i < ndirs; i++)
			diag_note(L->diag, (SrcLoc){0}, "searched %s", util_quote(dirs[i], q));
		return;
	}
	load(L, found, NULL, file, at);
}

static int load(Loader *L, const char *path, const char *text, int parent, SrcLoc from)
{
	const char *canon = text ? path : canonical(L->arena, path);
	char q[UTIL_QUOTE_BUF];
	for (int i = 0; i < L->depth; i++) {
		if (strcmp(L->stack[i], canon) != 0)
			continue;
		L->errors++;
		diag_error(L->diag, from, "include cycle: '%s' is already being included",
		           util_quote(L->diag->files[L->stack_file[i]].path, q));
		for (int j = L->depth - 1; j > i; j--)
			diag_note(L->diag, L->diag->files[L->stack_file[j]].include_loc, "'%s' is included from here",
			          util_quote(L->diag->files[L->stack_file[j]].path, q));
		return 0;
	}
	for (int i = 0; i < L->nloaded; i++)
		if (strcmp(L->loaded[i], canon) == 0)
			return 0; /* include-once */
	if (L->depth == MAX_INCLUDE_DEPTH || L->nloaded == DIAG_MAX_FILES) {
		L->errors++;
		diag_error(L->diag, from, "includes nested too deeply or too many files (at most %d)",
		           L->depth == MAX_INCLUDE_DEPTH ? MAX_INCLUDE_DEPTH : DIAG_MAX_FILES);
		return 0;
	}
	size_t len;
	char *owned = NULL;
	if (text) {
		len = strlen(text);
	} else {
		char why[128];
		owned = frontend_read_source(path, &len, why);
		if (!owned) {
			L->errors++;
			if (parent)
				diag_error(L->diag, from, "cannot read '%s': %s", util_quote(path, q), why);
			else
				diag_plain(L->diag, DIAG_ERROR, "cannot read '%s': %s", util_quote(path, q), why);
			return 0;
		}
		text = arena_strndup(L->arena, owned, len);
		free(owned);
	}
	int file = diag_add_file(L->diag, path, text, len);
	PATC_ASSERT(file > 0);
	L->diag->files[file].included_from = parent;
	L->diag->files[file].include_loc = from;
	L->loaded[L->nloaded++] = canon;

	Item *items = NULL;
	int errs = pat_parse_file(L->diag, L->arena, file, &items);
	L->errors += errs;
	L->stack[L->depth] = canon;
	L->stack_file[L->depth] = file;
	L->depth++;
	for (Item *it = items; it && !diag_stopped(L->diag); it = it->next)
		if (it->kind == ITEM_INCLUDE)
			do_include(L, it, file);
	L->depth--;
	/* Definitions are collected after their includes' definitions. */
	*L->tail = items;
	while (*L->tail)
		L->tail = &(*L->tail)->next;
	return file;
}

int frontend_load(const FrontendOptions *opt, Diag *diag, Arena *arena, const char *path,
                  const char *text, Item **items)
{
	Loader L = {.opt = opt, .diag = diag, .arena = arena};
	L.tail = &L.items;
	load(&L, path, text, 0, (SrcLoc){0});
	*items = L.items;
	return L.errors;
}

char *frontend_read_source(const char *path, size_t *len, char why[128])
{
	char *text = util_read_file_max(path, PAT_SOURCE_MAX, len);
	if (!text && errno == EFBIG)
		snprintf(why, 128, "longer than %zu MiB, the most a source may be", PAT_SOURCE_MAX >> 20);
	else if (!text)
		snprintf(why, 128, "%s", strerror(errno));
	return text;
}

