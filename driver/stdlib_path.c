/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* (realpath) */
/* stdlib_path.c - where patc finds its standard pattern library.
 *
 * The build passes these paths in (CMakeLists.txt):
 *   PATC_STDLIB_REL     the installed library relative to the installed
 *                       binary's directory (GNUInstallDirs: DATADIR/patc/stdlib
 *                       from BINDIR, "../share/patc/stdlib" by default);
 *   PATC_STDLIB_INSTALL the same as an absolute path under the configured
 *                       prefix, for a system without /proc;
 *   PATC_BUILD_DIR and PATC_SOURCE_STDLIB
 *                       the build tree's binary directory and the source
 *                       tree's stdlib/: a binary run where it was built reads
 *                       the library it was built beside, and no other binary
 *                       does (a copy or an installed patc never reaches into
 *                       a source tree that may have moved on). */
#include "stdlib_path.h"

#include <sys/stat.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory of the running binary, symbolic links resolved, in buf;
 * false where /proc/self/exe cannot be read or does not fit. */
static bool exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return false;
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return false;
	*slash = 0;
	return true;
}

/* Whether the binary's directory is the build tree it was built in. */
static bool in_build_tree(const char *dir)
{
	char *build = realpath(PATC_BUILD_DIR, NULL);
	if (!build)
		return false;
	bool same = strcmp(build, dir) == 0;
	free(build);
	return same;
}

/* The standard library, the first of:
 *   1. $PATC_STDLIB, when set and not empty (taken as given);
 *   2. PATC_STDLIB_REL from the binary's directory, where it is a directory
 *      (the installed library of an installed patc);
 *   3. the source tree's stdlib/, where the binary runs in its build tree;
 *   4. else the path of 2 (or PATC_STDLIB_INSTALL without /proc), missing:
 *      an include of a library pattern then fails, and --help says where
 *      the library was looked for.
 * The result lives in buf or is static; len should be PATH_MAX or more. */
const char *find_stdlib(char *buf, size_t len)
{
	const char *env = getenv("PATC_STDLIB");
	if (env && *env)
		return env;
	char dir[PATH_MAX];
	if (!exe_dir(dir, sizeof dir))
		return PATC_STDLIB_INSTALL;
	int n = snprintf(buf, len, "%s/%s", dir, PATC_STDLIB_REL);
	bool fits = n > 0 && (size_t)n < len;
	if (fits && is_dir(buf))
		return buf;
	if (in_build_tree(dir) && is_dir(PATC_SOURCE_STDLIB))
		return PATC_SOURCE_STDLIB;
	return fits ? buf : PATC_STDLIB_INSTALL;
}
