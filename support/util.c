/* SPDX-License-Identifier: MIT */
/* util.c - internal errors, string buffers and file helpers; see util.h. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "util.h"
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

void util_ice(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "patc: internal compiler error at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nplease report this with the input that caused it\n", stderr);
	exit(PATC_EXIT_INTERNAL);
}

void util_oom(void)
{
	fflush(stdout);
	fputs("patc: error: out of memory\n", stderr);
	exit(PATC_EXIT_ENV);
}

void util_oom_for(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("patc: error: out of memory for ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(PATC_EXIT_ENV);
}

void sb_init(StrBuf *sb) { sb->data = NULL, sb->len = sb->cap = 0; }

void sb_free(StrBuf *sb)
{
	free(sb->data);
	sb_init(sb);
}

static void sb_reserve(StrBuf *sb, size_t extra)
{
	if (sb->len + extra + 1 <= sb->cap)
		return;
	size_t cap = sb->cap ? sb->cap : 64;
	while (cap < sb->len + extra + 1)
		cap *= 2;
	char *p = realloc(sb->data, cap);
	if (!p)
		util_oom();
	sb->data = p;
	sb->cap = cap;
}

void sb_append(StrBuf *sb, const void *data, size_t len)
{
	sb_reserve(sb, len);
	memcpy(sb->data + sb->len, data, len);
	sb->len += len;
	sb->data[sb->len] = 0;
}

void sb_putc(StrBuf *sb, char c)
{
	sb_reserve(sb, 1);
	sb->data[sb->len++] = c;
	sb->data[sb->len] = 0;
}

void sb_puts(StrBuf *sb, const char *s)
{
	size_t n = strlen(s);
	sb_reserve(sb, n);
	memcpy(sb->data + sb->len, s, n + 1);
	sb->len += n;
}

void sb_printf(StrBuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		util_ice(__FILE__, __LINE__, "bad format string");
	sb_reserve(sb, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

char *sb_take(StrBuf *sb)
{
	char *p = sb->data;
	if (!p) {
		p = malloc(1);
		if (!p)
			util_oom();
		*p = 0;
	}
	sb_init(sb);
	return p;
}

void sb_shape_enum(StrBuf *h, const char *pre, long long M, long long K, long long N)
{
	sb_printf(h, "#ifndef %s_SHAPE_%lld_%lld_%lld\n#define %s_SHAPE_%lld_%lld_%lld\n", pre, M, K, N, pre, M, K, N);
	sb_printf(h, "enum { %s_M = %lld, %s_K = %lld, %s_N = %lld };\n#endif\n", pre, M, pre, K, pre, N);
}

char *util_read_file(const char *path, size_t *len) { return util_read_file_max(path, SIZE_MAX, len); }

char *util_read_file_max(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	StrBuf sb;
	sb_init(&sb);
	char buf[65536];
	size_t n;
	int err = 0;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		if (n > max - sb.len) {
			err = EFBIG;
			break;
		}
		sb_reserve(&sb, n);
		memcpy(sb.data + sb.len, buf, n);
		sb.len += n;
		sb.data[sb.len] = 0;
	}
	if (!err && ferror(f))
		err = errno ? errno : EIO;
	fclose(f);
	if (err) {
		sb_free(&sb);
		errno = err;
		return NULL;
	}
	if (len)
		*len = sb.len;
	return sb_take(&sb);
}

ssize_t util_read_range(int fd, uint64_t off, void *buf, size_t len)
{
	size_t got = 0;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off) {
		errno = EOVERFLOW;
		return -1;
	}
	while (got < len) {
		size_t want = len - got < ((size_t)1 << 30) ? len - got : (size_t)1 << 30;
		ssize_t n = pread(fd, (char *)buf + got, want, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break; /* the end of the file */
		got += (size_t)n;
	}
	return (ssize_t)got;
}

ssize_t util_getline_max(char **line, size_t *cap, FILE *f, size_t max)
{
	size_t n = 0;
	int ch;
	errno = 0;
	while ((ch = getc(f)) != EOF) {
		if (n == max) {
			ungetc(ch, f);
			errno = EFBIG;
			return -1;
		}
		if (n + 2 > *cap) {
			size_t grown = *cap ? 2 * *cap : 256;
			char *p = realloc(*line, grown);
			if (!p)
				util_oom();
			*line = p, *cap = grown;
		}
		(*line)[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	if (!n)
		return -1;
	(*line)[n] = 0;
	return (ssize_t)n;
}

const char *util_comment_text(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	for (; *s && o + 3 < len; s++) {
		buf[o++] = *s;
		if (s[0] == '*' && s[1] == '/')
			buf[o++] = '_';
	}
	buf[o < len ? o : len - 1] = 0;
	return buf;
}

int util_utf8_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (n == 0)
		return 0;
	if (u[0] < 0x80)
		return 1;
	int k = u[0] >= 0xc2 && u[0] <= 0xdf ? 2 : u[0] >= 0xe0 && u[0] <= 0xef ? 3 : u[0] >= 0xf0 && u[0] <= 0xf4 ? 4 : 0;
	if (k == 0 || (size_t)k > n)
		return 0; /* a continuation byte, C0/C1 (overlong 2-byte), F5-FF, truncated */
	for (int i = 1; i < k; i++)
		if ((u[i] & 0xc0) != 0x80)
			return 0;
	/* the second byte's range rules out overlong forms, surrogates and
	 * code points past U+10FFFF (RFC 3629's table) */
	if ((u[0] == 0xe0 && u[1] < 0xa0) || (u[0] == 0xed && u[1] > 0x9f) ||
	    (u[0] == 0xf0 && u[1] < 0x90) || (u[0] == 0xf4 && u[1] > 0x8f))
		return 0;
	return k;
}

const char *util_utf8_text(const char *s, char *buf, size_t len)
{
	size_t o = 0, left = strlen(s);
	while (*s && o + 4 < len) {
		const int n = util_utf8_len(s, left);
		if (n) {
			memcpy(buf + o, s, (size_t)n);
			o += (size_t)n, s += n, left -= (size_t)n;
		} else {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3, s++, left--;
		}
	}
	buf[o] = 0;
	return buf;
}

int util_edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 31 || m > 31)
		return 99;
	int d[32][32];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			d[i][j] = c < del ? (c < ins ? c : ins) : (del < ins ? del : ins);
		}
	return d[n][m];
}

void util_say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n < len || len < 2)
		return;
	size_t last = len - 1; /* where the last character begins */
	while (last > 0 && ((unsigned char)buf[last - 1] & 0xc0) == 0x80)
		last--;
	if (last > 0)
		last--;
	if ((size_t)util_utf8_len(buf + last, len - 1 - last) != len - 1 - last)
		buf[last] = 0;
}

const char *util_quote_n(const char *s, size_t len, char buf[UTIL_QUOTE_BUF])
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i = 0;
	for (int chars = 0; i < len && chars < UTIL_QUOTE_CHARS; chars++) {
		const unsigned char c = (unsigned char)s[i];
		const int k = util_utf8_len(s + i, len - i);
		if (k == 0 || c < 0x20 || c == 0x7f) {
			buf[o++] = '\\', buf[o++] = 'x', buf[o++] = hex[c >> 4], buf[o++] = hex[c & 15];
			i++;
			continue;
		}
		memcpy(buf + o, s + i, (size_t)k);
		o += (size_t)k, i += (size_t)k;
	}
	if (i < len)
		memcpy(buf + o, "...", 3), o += 3;
	buf[o] = 0;
	return buf;
}

const char *util_quote(const char *s, char buf[UTIL_QUOTE_BUF])
{
	/* (64 characters take at most 256 bytes: more than that is cut anyway) */
	return util_quote_n(s, strnlen(s, UTIL_QUOTE_CHARS * 4 + 1), buf);
}

bool util_make_dir(const char *path, bool *created)
{
	*created = mkdir(path, 0777) == 0;
	if (*created)
		return true;
	if (errno != EEXIST)
		return false;
	struct stat st;
	if (stat(path, &st) != 0)
		return false;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return false;
	}
	return true;
}

static bool under_dev_or_proc(const char *p)
{
	return strncmp(p, "/dev/", 5) == 0 || strncmp(p, "/proc/", 6) == 0;
}

char *util_output_target(const char *path, bool *in_place)
{
	char *p = strdup(path);
	if (!p)
		util_oom();
	bool special = under_dev_or_proc(p);
	for (int hops = 0;; hops++) {
		struct stat st;
		if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode))
			break;
		if (hops == 40) { /* (the kernel's own limit) */
			free(p);
			errno = ELOOP;
			return NULL;
		}
		char to[PATH_MAX];
		const ssize_t n = readlink(p, to, sizeof to - 1);
		if (n < 0) {
			const int e = errno;
			free(p);
			errno = e;
			return NULL;
		}
		to[n] = 0;
		/* a relative target is relative to the link's directory */
		const char *slash = strrchr(p, '/');
		char *next = malloc((slash && to[0] != '/' ? (size_t)(slash + 1 - p) : 0) + (size_t)n + 1);
		if (!next)
			util_oom();
		size_t at = 0;
		if (slash && to[0] != '/') {
			at = (size_t)(slash + 1 - p);
			memcpy(next, p, at);
		}
		memcpy(next + at, to, (size_t)n + 1);
		free(p);
		p = next;
		special = special || under_dev_or_proc(p);
	}
	struct stat st;
	*in_place = special || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
	return p;
}

uint64_t util_hash_text(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

void util_die_with_parent(int parent)
{
#ifdef __linux__
	prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	if (getppid() != (pid_t)parent)
		_exit(1);
}

int util_keyed_cmp(const void *a, const void *b)
{
	const UtilKeyed *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

void util_stack_room(size_t bytes)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_STACK, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= bytes)
		return;
	r.rlim_cur = r.rlim_max == RLIM_INFINITY || r.rlim_max >= bytes ? (rlim_t)bytes : r.rlim_max;
	(void)setrlimit(RLIMIT_STACK, &r);
}

void *util_alloc_timed(size_t bytes)
{
	return aligned_alloc(64, (bytes + 63) / 64 * 64 + (bytes == 0) * 64);
}

void *util_alloc_measured(size_t bytes)
{
#ifdef MADV_HUGEPAGE
	const size_t huge = (size_t)2 << 20;
	if (bytes >= UTIL_MEASURED_MIN && bytes <= SIZE_MAX - huge) {
		size_t n = (bytes + huge - 1) / huge * huge;
		void *p = aligned_alloc(huge, n);
		if (p)
			(void)madvise(p, n, MADV_HUGEPAGE); /* advice: small pages where refused */
		return p;
	}
#endif
	return util_alloc_timed(bytes);
}

double util_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void util_sleep(double seconds)
{
	struct timespec t = {(time_t)seconds, (long)(1e9 * (seconds - (double)(time_t)seconds))};
	while (nanosleep(&t, &t) != 0 && errno == EINTR) /* the rest, after a signal */
		;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double util_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[n / 2];
}

/* The timed calls of util_time_us, sorted, into t; returns their number. */
static int timed_calls(void (*call)(void *arg), void *arg, int min_reps, double t[UTIL_MAX_REPS])
{
	double t0 = util_now(), t1 = t0, last;
	do {
		double a = util_now();
		call(arg);
		t1 = util_now();
		last = t1 - a;
	} while (t1 - t0 < UTIL_WARM_S);
	int reps = last > 0 ? (int)ceil(UTIL_TIMED_S / last) : UTIL_MAX_REPS;
	if (reps < min_reps)
		reps = min_reps;
	if (reps > UTIL_MAX_REPS)
		reps = UTIL_MAX_REPS;
	if (reps < 1)
		reps = 1;
	for (int r = 0; r < reps; r++) {
		double a = util_now();
		call(arg);
		t[r] = util_now() - a;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp_double);
	return reps;
}

double util_time_us(void (*call)(void *arg), void *arg, int min_reps)
{
	double t[UTIL_MAX_REPS];
	return 1e6 * t[timed_calls(call, arg, min_reps, t) / 2];
}

double util_time_min_us(void (*call)(void *arg), void *arg, int min_reps)
{
	double t[UTIL_MAX_REPS];
	timed_calls(call, arg, min_reps, t);
	return 1e6 * t[0];
}
