#define _POSIX_C_SOURCE 200809L
/* stdlib_path.c - where patc finds its standard pattern library. */
#include "stdlib_path.h"

#include <sys/stat.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The standard library: $PATC_STDLIB, else the source tree's stdlib/ (a
 * build run in place), else ../share/patc/stdlib beside the installed
 * binary.  The result lives in buf or is static. */
const char *find_stdlib(char *buf, size_t len)
{
	const char *env = getenv("PATC_STDLIB");
	if (env && *env)
		return env;
	if (is_dir(PATC_STDLIB_DIR))
		return PATC_STDLIB_DIR;
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n > 0) {
		buf[n] = 0;
		char *slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + 24 < len) {
			strcpy(slash, "/../share/patc/stdlib");
			if (is_dir(buf))
				return buf;
		}
	}
	return PATC_STDLIB_DIR;
}
