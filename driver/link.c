/* SPDX-License-Identifier: MIT */
/* link.c - `--emit=so`: DIR/BASE.so through the system's C compiler, with the
 * CPU check that x86 libraries carry (link.h). */
#define _POSIX_C_SOURCE 200809L
#include "link.h"
#include "../support/outfile.h"
#include "../support/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CC_WORDS = 16 };

/* $CC split at blanks into words (cc where unset or blank); false where it
 * has more than CC_WORDS. */
static bool cc_words(char *buf, size_t len, char *words[CC_WORDS], int *nwords)
{
	const char *cc = getenv("CC");
	snprintf(buf, len, "%s", cc && cc[strspn(cc, " \t")] ? cc : "cc");
	*nwords = 0;
	for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (*nwords == CC_WORDS)
			return false;
		words[(*nwords)++] = w;
	}
	return true;
}

/* dir/name, with ./ before a dir the compiler would take for an option. */
static void dir_path(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s%s/%s", dir[0] == '-' ? "./" : "", dir, name);
}

/* dir/name as the compiler reads it: the temporary file this run wrote for
 * it where that is still waiting for its group's end (outfile_pending),
 * else the file in place.  Whether it was the temporary one. */
static bool input_path(char *buf, size_t len, const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	bool in_place;
	char *to = util_output_target(path, &in_place);
	const char *pending = to ? outfile_pending(to) : NULL;
	if (pending)
		snprintf(buf, len, "%s%s", pending[0] == '-' ? "./" : "", pending);
	else
		dir_path(buf, len, dir, name);
	free(to);
	return pending != NULL;
}

/* The C file check (NULL: none) into a tracked temporary file beside to,
 * its name into tmp: true, or false with err set. */
static bool write_check(const char *check, const char *to, const char *final, char tmp[4096],
                        char err[LINK_ERR_MAX])
{
	tmp[0] = 0;
	if (!check)
		return true;
	snprintf(tmp, 4096, "%s.tmp.XXXXXX", to);
	const int fd = strlen(to) + 12 < 4096 ? outfile_mkstemp(tmp, to) : (errno = ENAMETOOLONG, -1);
	if (fd < 0) {
		snprintf(err, LINK_ERR_MAX, "cannot write '%s': %s", final, strerror(errno));
		tmp[0] = 0;
		return false;
	}
	const size_t len = strlen(check);
	bool ok = true;
	for (size_t at = 0; ok && at < len;) {
		const ssize_t w = write(fd, check + at, len - at);
		ok = w > 0 || (w < 0 && errno == EINTR);
		at += w > 0 ? (size_t)w : 0;
	}
	if (!ok) {
		snprintf(err, LINK_ERR_MAX, "cannot write '%s': %s", final, strerror(errno));
		outfile_drop(tmp);
		tmp[0] = 0;
	}
	close(fd);
	return ok;
}

int link_shared(const char *dir, const char *base, bool gpu, const char *check, char err[LINK_ERR_MAX])
{
	char ccbuf[1024], *words[CC_WORDS];
	int nwords;
	if (!cc_words(ccbuf, sizeof ccbuf, words, &nwords)) {
		snprintf(err, LINK_ERR_MAX, "CC has more than %d words", CC_WORDS);
		return PATC_EXIT_ENV;
	}
	char name[256], input[4096], header[4096], tmp[4096], final[4096], incdir[4096];
	snprintf(name, sizeof name, gpu ? "%s_launch.c" : "%s.o", base);
	const bool pending = input_path(input, sizeof input, dir, name);
	snprintf(name, sizeof name, "%s.h", base);
	const bool pending_header = gpu && input_path(header, sizeof header, dir, name);
	snprintf(final, sizeof final, "%s/%s.so", dir, base);
	dir_path(incdir, sizeof incdir, dir, "");
	/* beside where final's links end (written through, not replaced), as
	 * outfile_write names them; a linker's output is no stream */
	bool in_place;
	char *to = util_output_target(final, &in_place);
	if (!to || in_place) {
		snprintf(err, LINK_ERR_MAX, "cannot write '%s': %s", final, to ? "not a regular file" : strerror(errno));
		free(to);
		return PATC_EXIT_ENV;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", to);
	const int fd = strlen(to) + 12 < sizeof tmp ? outfile_mkstemp(tmp, to) : (errno = ENAMETOOLONG, -1);
	if (fd < 0) {
		snprintf(err, LINK_ERR_MAX, "cannot write '%s': %s", final, strerror(errno));
		free(to);
		return PATC_EXIT_ENV;
	}
	close(fd);
	char ctmp[4096], cpath[4096];
	const bool wrote = write_check(check, to, final, ctmp, err);
	free(to);
	if (!wrote) {
		outfile_drop(tmp);
		return PATC_EXIT_ENV;
	}
	if (ctmp[0])
		snprintf(cpath, sizeof cpath, "%s%s", ctmp[0] == '-' ? "./" : "", ctmp);

	/* the object or the launcher as this run wrote them: linked before they
	 * are in place, the library joins their group (a failed link leaves
	 * the set before whole); the launcher's header, not yet where the
	 * launcher includes it from, goes in first (-include: the launcher's
	 * guard then skips its own #include) */
	char *argv[CC_WORDS + 24];
	int n = 0;
	for (int i = 0; i < nwords; i++)
		argv[n++] = words[i];
	argv[n++] = "-shared";
	if (gpu || ctmp[0]) { /* C: compiled position-independent */
		argv[n++] = "-fPIC";
		argv[n++] = "-O2";
	}
	if (gpu) { /* the launcher, its header beside it */
		argv[n++] = "-iquote"; /* (not -I: a header named like a system one, stdio.h, would hide it) */
		argv[n++] = incdir;
		if (pending_header) {
			argv[n++] = "-include";
			argv[n++] = header;
		}
	}
	argv[n++] = "-o";
	argv[n++] = tmp;
	if (ctmp[0]) { /* the CPU check, before the object (a temporary file's name says no language) */
		argv[n++] = "-x";
		argv[n++] = "c";
		argv[n++] = cpath;
		argv[n++] = "-x";
		argv[n++] = "none";
	}
	if (gpu && pending) { /* (a temporary file's name says no language) */
		argv[n++] = "-x";
		argv[n++] = "c";
	}
	argv[n++] = input;
	if (gpu && pending) {
		argv[n++] = "-x";
		argv[n++] = "none";
	}
	argv[n++] = gpu ? "-ldl" : "-lpthread";
	argv[n] = NULL;

	const int rc = outfile_spawn_wait(argv); /* (what it says on our stderr) */
	if (ctmp[0])
		outfile_drop(ctmp);
	if (rc != 0) {
		const int e = errno;
		outfile_drop(tmp);
		if (rc < 0 && e == ENOENT)
			snprintf(err, LINK_ERR_MAX, "no C compiler '%s' to link '%s' (install one, or name it with CC)",
			         words[0], final);
		else if (rc < 0)
			snprintf(err, LINK_ERR_MAX, "cannot run '%s' to link '%s': %s", words[0], final, strerror(e));
		else if (rc > 128)
			snprintf(err, LINK_ERR_MAX, "'%s' was killed by signal %d linking '%s'", words[0], rc - 128,
			         final);
		else
			snprintf(err, LINK_ERR_MAX, "'%s' could not link '%s' (exit status %d)", words[0], final, rc);
		return PATC_EXIT_ENV;
	}
	const mode_t mask = umask(0);
	umask(mask);
	if (chmod(tmp, 0777 & ~mask) != 0) {
		snprintf(err, LINK_ERR_MAX, "cannot write '%s': %s", final, strerror(errno));
		outfile_drop(tmp);
		return PATC_EXIT_ENV;
	}
	if (!outfile_finish(tmp)) {
		snprintf(err, LINK_ERR_MAX, "cannot write '%s': %s", final, strerror(errno));
		return PATC_EXIT_ENV;
	}
	return PATC_EXIT_OK;
}
