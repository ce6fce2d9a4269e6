/* SPDX-License-Identifier: MIT */
/* util.h - small shared helpers: internal errors, growable strings, files.
 *
 * Two families of checks exist in patc: user errors, reported as diagnostics
 * with exit code 1, and internal invariants.  A broken invariant is a patc bug:
 * util_ice() prints "internal compiler error at FILE:LINE" and exits with code
 * 4.  Running out of memory is the environment's: util_oom() says so and
 * exits with code 3.  They are the only places library code leaves the
 * process.
 */
#ifndef PATC_UTIL_H
#define PATC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes of the patc command line (documented in --help and README). */
enum {
	PATC_EXIT_OK = 0,
	PATC_EXIT_INPUT = 1,    /* errors in the input (.pat, .pir, weights) */
	PATC_EXIT_USAGE = 2,    /* bad command line */
	PATC_EXIT_ENV = 3,      /* environment: unwritable output, no GPU... */
	PATC_EXIT_INTERNAL = 4, /* internal compiler error */
};

_Noreturn void util_ice(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
_Noreturn void util_oom(void);
/* util_oom naming what did not fit: "out of memory for WHAT". */
_Noreturn void util_oom_for(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define PATC_ASSERT(c)                                                        \
	do {                                                                  \
		if (!(c))                                                     \
			util_ice(__FILE__, __LINE__, "assertion '%s' failed", #c); \
	} while (0)

/* A growable, always NUL-terminated string buffer. */
typedef struct StrBuf {
	char *data;
	size_t len, cap;
} StrBuf;

void sb_init(StrBuf *sb);
void sb_free(StrBuf *sb);
void sb_putc(StrBuf *sb, char c);
/* Appends len bytes, NUL bytes included. */
void sb_append(StrBuf *sb, const void *data, size_t len);
void sb_puts(StrBuf *sb, const char *s);
void sb_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands over the buffer (caller frees); sb is empty afterwards. */
char *sb_take(StrBuf *sb);

/* A generated header's shape constants of an op (PRE_M, PRE_K, PRE_N),
 * under a guard that names the shape: the x86 and the GPU header of one
 * program both declare them and may be included together; an op of the
 * same name and another shape still clashes, as it should. */
void sb_shape_enum(StrBuf *h, const char *pre, long long M, long long K, long long N);

/* Reads a whole file; NULL with errno set on failure.  Caller frees. */
char *util_read_file(const char *path, size_t *len);
/* The same for a file of at most max bytes: NULL with errno EFBIG for a
 * longer one (a pipe or /dev/zero included), read no further. */
char *util_read_file_max(const char *path, size_t max, size_t *len);

/* Reads len bytes at offset off of the open file fd (pread: the file
 * position is left alone), retrying where a read returns less or is
 * interrupted.  Returns the number of bytes read: len, or fewer where the
 * file ends first (it is shorter than its reader was told, or shrank
 * while read); -1 with errno set on a read error. */
ssize_t util_read_range(int fd, uint64_t off, void *buf, size_t len);

/* getline(), for lines of at most max bytes (the newline included): the
 * line's length, or -1 at the end of the file (errno 0), on a read error
 * (errno set; ferror) or, with errno EFBIG, where the line is longer, read
 * no further (a file of another kind, /dev/zero).  Exits on out of memory. */
ssize_t util_getline_max(char **line, size_t *cap, FILE *f, size_t max);

/* Where an output named path is renamed to (malloc'd): path itself, or,
 * where path is a symbolic link, the end of its chain of links (a link is
 * written through, not replaced by a file).  *in_place is set where the
 * output must instead be written into path as it is: where that end is a
 * device, a pipe or a socket (/dev/null), or where path or a link on the
 * way lies under /dev or /proc (/dev/stdout, /proc/self/fd/1: a
 * descriptor's file, redirected by a shell).  NULL with errno set (ELOOP)
 * where the links do not end; exits on out of memory. */
char *util_output_target(const char *path, bool *in_place);

/* snprintf into buf (len > 0 bytes), where the text is cut at the end a
 * UTF-8 character cut short there dropped (a message quoting a name). */
void util_say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* s for a C block comment: each '*' followed by '/' (a path such as
 * "star*" then "/x") gets a '_' between them; the copy goes to buf (cut
 * to len). */
const char *util_comment_text(const char *s, char *buf, size_t len);

/* A name or string from the input, for a diagnostic's quotes: its first
 * UTIL_QUOTE_CHARS characters, then "..." where it goes on; each control
 * byte (NUL and tab included), DEL and each byte that is not part of a
 * valid UTF-8 character (a lone continuation byte, a truncated, overlong or
 * surrogate sequence, one past U+10FFFF) as \xNN, counted as one
 * character.  util_quote_n reads at most len bytes (NUL bytes included),
 * util_quote up to the first NUL; neither reads further than the cut.  The
 * text goes to buf and is returned. */
enum { UTIL_QUOTE_CHARS = 64, UTIL_QUOTE_BUF = UTIL_QUOTE_CHARS * 4 + 4 };
const char *util_quote_n(const char *s, size_t len, char buf[UTIL_QUOTE_BUF]);
const char *util_quote(const char *s, char buf[UTIL_QUOTE_BUF]);
/* The length of the valid UTF-8 character at s (at most n bytes: 1 to 4),
 * or 0 where s does not start one (ASCII counts as valid). */
int util_utf8_len(const char *s, size_t n);

/* s as valid UTF-8 (for a JSON string), each byte of an invalid sequence
 * as U+FFFD, cut where buf (len bytes) would overflow; returns buf. */
const char *util_utf8_text(const char *s, char *buf, size_t len);

/* The edit distance (insertions, deletions, substitutions) between a and
 * b, for "did you mean" suggestions; 99 where either is over 31 bytes. */
int util_edit_distance(const char *a, const char *b);

/* A 64-bit FNV-1a hash of s.  (Its start, 1469598103934665603, is not
 * FNV's published basis but stays: train-cost-model orders its samples by
 * these hashes, and the shipped model is what that order gives.) */
uint64_t util_hash_text(const char *s);

/* A value and its index, for qsort by util_keyed_cmp: ascending, ties by
 * index (so the order does not depend on qsort's). */
typedef struct UtilKeyed {
	double v;
	int64_t i;
} UtilKeyed;
int util_keyed_cmp(const void *a, const void *b);

/* In a child just forked by parent: the child is killed when the parent
 * dies (where the system can: Linux), so that a measuring child does not
 * outlive a search that was killed; exits at once if parent is gone
 * already. */
void util_die_with_parent(int parent);
/* Raises this process's stack limit (RLIMIT_STACK, the main thread's) to
 * at least bytes where it is lower and the hard limit allows: the kernels
 * run part of their work on the calling thread, with up to 1 MiB of
 * buffers on its stack.  A limit that cannot be raised stays. */
void util_stack_room(size_t bytes);

/* Creates directory path, or finds one there; false with errno set
 * (ENOTDIR: something else is there).  *created says whether this call
 * made it: a run that fails before writing into it
 * takes it away again (rmdir, which leaves a directory with files). */
bool util_make_dir(const char *path, bool *created);

/* Seconds on the monotonic clock, for timing. */
double util_now(void);
/* Sleeps for about `seconds`.  The timed comparisons call util_settle()
 * between one library's timed block and the other's: after a call, OpenBLAS's
 * workers spin for about 2^28 cycles (0.1 s) waiting for the next one, and on
 * a machine with few cores they would take the CPU from the kernel's threads
 * (measured here: a 2-thread patc kernel 0.1 ms alone, 0.5 ms beside them). */
void util_sleep(double seconds);
static inline void util_settle(void) { util_sleep(0.3); }
/* malloc for timed buffers: 64-byte aligned, as frameworks align tensors
 * (PyTorch's CPU allocator: 64), so that rows of X whose length is a
 * multiple of 16 floats start on cache lines.  malloc's large blocks start
 * 16 bytes past a page, and there every 64-byte load of X spans two lines
 * (row-balanced at 93.75% on 64 x 576 x 3136: 0.22 ms aligned, 0.33 ms at malloc's
 * offset).  NULL when out of memory; release with free(). */
void *util_alloc_timed(size_t bytes);
/* util_alloc_timed for the search's measurements, where what counts is
 * that a kernel measures the same in every process: from
 * UTIL_MEASURED_MIN up the buffer takes whole 2 MiB pages, 2 MiB aligned
 * and asked (madvise) to be transparent huge pages, so which cache sets it
 * maps to no longer depends on where its 4 KiB pages happened to land.  Two searches of bench/costmodel/collect.sh
 * (14 and 17) measured 6 times each: a kernel's spread between processes
 * (the median coefficient of variation) 6.1% and 5.4% with small pages,
 * 3.3% and 4.2% with huge ones; its time 1% lower.  Where the system refuses huge pages it is
 * util_alloc_timed.  NULL when out of memory; release with free(). */
enum { UTIL_MEASURED_MIN = 64 << 10 };
void *util_alloc_measured(size_t bytes);
/* Sorts v[0..n-1] and returns its median (the upper one for even n). */
double util_median(double *v, int n);
/* Times call(arg) as the benchmarks and the search do: warms it up for at
 * least UTIL_WARM_S (a first call alone left small kernels 20-50% slow: the
 * CPU back from a pause at a lower clock, X coming from DRAM), then returns
 * the median, in microseconds, of about UTIL_TIMED_S of calls, at least
 * min_reps and at most UTIL_MAX_REPS of them. */
#define UTIL_WARM_S 0.02
#define UTIL_TIMED_S 0.05
enum { UTIL_MAX_REPS = 64 };
double util_time_us(void (*call)(void *arg), void *arg, int min_reps);
/* The same calls' fastest: what the search ranks candidates by.  On this
 * shared VM the median of one process drifts with its neighbours by 10-40%
 * between processes seconds apart; 68 candidates of one search measured
 * twice agreed on their order with Spearman 0.90 by the median, 0.965 by
 * the fastest. */
double util_time_min_us(void (*call)(void *arg), void *arg, int min_reps);

/* Checked 64-bit multiply: false on overflow. */
static inline bool util_mul_ok(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

#endif
