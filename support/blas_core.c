/* SPDX-License-Identifier: MIT */
/* blas_core.c - the OpenBLAS kernel set in use, the strongest this CPU
 * runs, the dense sgemm timed as --run and the search time it, and that
 * sgemm timed again in a fresh process with another kernel set; see
 * blas_core.h. */
#define _POSIX_C_SOURCE 200809L
#include "blas_core.h"
#include "util.h"

#include <cblas.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *const blas_timing_names[] = {"run", "search"};

/* ---- the pure parts ---- */

/* OpenBLAS's x86-64 cores (driver/others/dynamic.c's corename[]) by the
 * vector ISA of their sgemm kernels. */
static const struct {
	const char *name;
	int rank;
} cores[] = {
	{"SkylakeX", 3},     {"Cooperlake", 3},  {"SapphireRapids", 3}, {"Haswell", 2},   {"Zen", 2},
	{"Sandybridge", 1},  {"Bulldozer", 1},   {"Piledriver", 1},     {"Steamroller", 1}, {"Excavator", 1},
	{"Unknown", 0},      {"Katmai", 0},      {"Coppermine", 0},     {"Northwood", 0}, {"Prescott", 0},
	{"Banias", 0},       {"Atom", 0},        {"Core2", 0},          {"Penryn", 0},    {"Dunnington", 0},
	{"Nehalem", 0},      {"Athlon", 0},      {"Opteron", 0},        {"Opteron_SSE3", 0}, {"Barcelona", 0},
	{"Nano", 0},         {"Bobcat", 0},
};

int blas_core_rank(const char *name)
{
	for (size_t i = 0; name && i < sizeof cores / sizeof *cores; i++)
		if (!strcasecmp(name, cores[i].name))
			return cores[i].rank;
	return -1;
}

const char *blas_core_strongest(const BlasCpu *f)
{
	if (f->avx512f && f->avx512bw && f->avx512dq && f->avx512vl)
		return "SkylakeX";
	if (f->avx2 && f->fma)
		return "Haswell";
	return NULL;
}

const char *blas_core_stronger(const char *in_use, const char *strongest)
{
	const int have = blas_core_rank(in_use), best = blas_core_rank(strongest);
	return have >= 0 && best >= 0 && have < best ? strongest : NULL;
}

bool blas_core_parse_answer(const char *text, double *us, char core[32])
{
	int end = 0;
	return sscanf(text, "%lf %31[^\n]%n", us, core, &end) == 2 && *us > 0 &&
	       (text[end] == 0 || (text[end] == '\n' && text[end + 1] == 0));
}

/* ---- this process and this CPU ---- */

void blas_core_host_cpu(BlasCpu *f)
{
	memset(f, 0, sizeof *f);
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	f->avx2 = __builtin_cpu_supports("avx2");
	f->fma = __builtin_cpu_supports("fma");
	f->avx512f = __builtin_cpu_supports("avx512f");
	f->avx512bw = __builtin_cpu_supports("avx512bw");
	f->avx512dq = __builtin_cpu_supports("avx512dq");
	f->avx512vl = __builtin_cpu_supports("avx512vl");
#endif
}

/* src into dst[len] as one line of printable ASCII. */
static void printable(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = 0;
}

void blas_core_info(BlasCoreInfo *b)
{
	memset(b, 0, sizeof *b);
	printable(b->in_use, sizeof b->in_use, openblas_get_corename());
	BlasCpu f;
	blas_core_host_cpu(&f);
	b->strongest = blas_core_strongest(&f);
	b->stronger = blas_core_stronger(b->in_use, b->strongest);
	printable(b->env, sizeof b->env, getenv("OPENBLAS_CORETYPE"));
}

void blas_core_text(const BlasCoreInfo *b, char *buf, size_t len)
{
	const int have = blas_core_rank(b->in_use), best = blas_core_rank(b->strongest);
	char env[96] = "";
	if (b->env[0])
		snprintf(env, sizeof env, " (OPENBLAS_CORETYPE=%s)", b->env);
	if (b->stronger)
		snprintf(buf, len, "%s, weaker than %s, the strongest this CPU runs%s", b->in_use, b->stronger,
		         b->env[0] ? env : " (OpenBLAS's own choice)");
	else if (have >= 0 && best >= 0 && have >= best)
		snprintf(buf, len, "%s, as strong as any this CPU runs%s", b->in_use, env);
	else
		snprintf(buf, len, "%s%s", b->in_use, env);
}

/* ---- the dense baseline ---- */

void blas_sgemm(bool kn, int64_t M, int64_t K, int64_t N, const float *w, const float *x, float *c)
{
	if (kn) /* C (M x N) = W X */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, w, (int)K, x, (int)N,
		            0.0f, c, (int)N);
	else /* C (N x M) = X W^T */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)M, (int)K, 1.0f, x, (int)K, w, (int)K,
		            0.0f, c, (int)M);
}

typedef struct DenseRun {
	const float *w, *x;
	float *c;
	int64_t M, K, N;
	bool kn;
} DenseRun;

static void dense_call(void *arg)
{
	const DenseRun *d = arg;
	blas_sgemm(d->kn, d->M, d->K, d->N, d->w, d->x, d->c);
}

double blas_time_sgemm_us(BlasTiming how, bool kn, int64_t M, int64_t K, int64_t N, const float *w, const float *x,
                          float *c, int threads)
{
	openblas_set_num_threads(threads);
	DenseRun d = {w, x, c, M, K, N, kn};
	if (how == BLAS_TIMING_SEARCH)
		return util_time_min_us(dense_call, &d, 3);
	double t[BLAS_RUN_REPS];
	dense_call(&d); /* the warm-up */
	for (int r = 0; r < BLAS_RUN_REPS; r++) {
		const double t0 = util_now();
		dense_call(&d);
		t[r] = util_now() - t0;
	}
	return 1e6 * util_median(t, BLAS_RUN_REPS);
}

/* ---- the fresh process ---- */

/* A positive count from text, at most max; 0 where it is none. */
static int64_t count_arg(const char *text, int64_t max)
{
	char *end;
	errno = 0;
	const long long v = strtoll(text, &end, 10);
	return !errno && end != text && !*end && v > 0 && v <= max ? (int64_t)v : 0;
}

int blas_core_subcommand(int argc, char **argv)
{
	if (argc != 9) {
		fprintf(stderr, "patc: error: %s is patc's own: HOW M K N kn|nk THREADS CORE\n", BLAS_CORE_SUBCOMMAND);
		return PATC_EXIT_USAGE;
	}
	const int64_t M = count_arg(argv[3], INT32_MAX), K = count_arg(argv[4], INT32_MAX),
	              N = count_arg(argv[5], INT32_MAX), threads = count_arg(argv[7], 4096);
	const bool run = !strcmp(argv[2], "run"), kn = !strcmp(argv[6], "kn");
	int64_t wn, xn, cn;
	if ((!run && strcmp(argv[2], "search")) || (!kn && strcmp(argv[6], "nk")) || !M || !K || !N || !threads ||
	    !util_mul_ok(M, K, &wn) || !util_mul_ok(K, N, &xn) || !util_mul_ok(M, N, &cn)) {
		fprintf(stderr, "patc: error: %s: bad arguments\n", BLAS_CORE_SUBCOMMAND);
		return PATC_EXIT_USAGE;
	}
	const char *inject = getenv("PATC_BLAS_INJECT"); /* (the tests: the fresh process fails) */
	if (inject && !strcmp(inject, "fail")) {
		printf("failed, as PATC_BLAS_INJECT=fail asks\n");
		return PATC_EXIT_ENV;
	}
	char core[32];
	printable(core, sizeof core, openblas_get_corename());
	if (strcasecmp(core, argv[8])) { /* (OPENBLAS_CORETYPE unknown to this OpenBLAS, or not DYNAMIC_ARCH) */
		printf("OpenBLAS ran its %s kernels, not %.31s's\n", core, argv[8]);
		return PATC_EXIT_ENV;
	}
	void *(*alloc)(size_t) = run ? util_alloc_timed : util_alloc_measured;
	float *w = alloc((size_t)wn * sizeof *w), *x = alloc((size_t)xn * sizeof *x), *c = alloc((size_t)cn * sizeof *c);
	if (!w || !x || !c) {
		printf("out of memory for a %lld x %lld x %lld sgemm\n", (long long)M, (long long)K, (long long)N);
		return PATC_EXIT_ENV;
	}
	uint64_t s = 0x9e3779b97f4a7c15ULL; /* operands in [-1, 1): sgemm's time does not depend on them */
	for (int64_t i = 0; i < wn + xn; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		(i < wn ? w : x)[i < wn ? i : i - wn] = (float)((double)(s >> 40) / (double)(1 << 23) - 1);
	}
	const double us = blas_time_sgemm_us(run ? BLAS_TIMING_RUN : BLAS_TIMING_SEARCH, kn, M, K, N, w, x, c,
	                                     (int)threads);
	printf("%.6f %s\n", us, core);
	free(w), free(x), free(c);
	return PATC_EXIT_OK;
}

/* The first line of text, trimmed, into why[160] after prefix. */
static void first_line(char why[160], const char *prefix, const char *text)
{
	char line[120];
	printable(line, sizeof line, text);
	const char *nl = strchr(text, '\n');
	if (nl && (size_t)(nl - text) < sizeof line)
		line[nl - text] = 0;
	snprintf(why, 160, "%s%s", prefix, line);
}

bool blas_core_time_fresh(const char *exe, const char *core, BlasTiming how, bool kn, int64_t M, int64_t K,
                          int64_t N, int threads, double timeout_s, double *us, char why[160])
{
	/* everything the child needs made before fork: OpenBLAS's threads may
	 * hold malloc's lock, and the child only calls what is safe after fork */
	char m[24], k[24], n[24], t[16], envvar[64];
	snprintf(m, sizeof m, "%lld", (long long)M), snprintf(k, sizeof k, "%lld", (long long)K);
	snprintf(n, sizeof n, "%lld", (long long)N), snprintf(t, sizeof t, "%d", threads);
	snprintf(envvar, sizeof envvar, "OPENBLAS_CORETYPE=%s", core);
	char *argv[] = {"patc", BLAS_CORE_SUBCOMMAND, (char *)blas_timing_names[how], m, k, n, kn ? "kn" : "nk", t,
	                (char *)core, NULL};
	size_t nenv = 0;
	while (environ && environ[nenv])
		nenv++;
	char **envp = malloc((nenv + 2) * sizeof *envp);
	if (!envp) {
		snprintf(why, 160, "out of memory");
		return false;
	}
	size_t e = 0;
	for (size_t i = 0; i < nenv; i++)
		if (strncmp(environ[i], "OPENBLAS_CORETYPE=", 18))
			envp[e++] = environ[i];
	envp[e++] = envvar;
	envp[e] = NULL;
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(why, 160, "pipe: %s", strerror(errno));
		free(envp);
		return false;
	}
	fflush(NULL);
	const pid_t parent = getpid();
	const pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, 160, "fork: %s", strerror(errno));
		close(fd[0]), close(fd[1]);
		free(envp);
		return false;
	}
	if (pid == 0) {
		util_die_with_parent(parent);
		close(fd[0]);
		if (dup2(fd[1], STDOUT_FILENO) >= 0 && dup2(fd[1], STDERR_FILENO) >= 0) {
			close(fd[1]);
			execve(exe, argv, envp);
		}
		static const char msg[] = "cannot execute it\n";
		ssize_t wr = write(STDOUT_FILENO, msg, sizeof msg - 1);
		_exit(wr > 0 ? 127 : 126);
	}
	close(fd[1]);
	free(envp);
	char out[512];
	size_t got = 0;
	bool timed_out = false;
	const double deadline = util_now() + timeout_s;
	for (;;) {
		const double left = deadline - util_now();
		struct pollfd pfd = {fd[0], POLLIN, 0};
		const int ready = left > 0 ? poll(&pfd, 1, (int)(left * 1000) + 1) : 0;
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0) {
			timed_out = ready == 0;
			break;
		}
		char buf[256];
		const ssize_t r = read(fd[0], buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* the end: the child exited */
		const size_t keep = got + (size_t)r < sizeof out - 1 ? (size_t)r : sizeof out - 1 - got;
		memcpy(out + got, buf, keep);
		got += keep;
	}
	out[got] = 0;
	close(fd[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	char answer[32];
	if (timed_out)
		snprintf(why, 160, "timed out after %g s", timeout_s);
	else if (WIFSIGNALED(st))
		snprintf(why, 160, "the process was killed by signal %d", WTERMSIG(st));
	else if (WEXITSTATUS(st) == 0 && blas_core_parse_answer(out, us, answer) && !strcasecmp(answer, core))
		return true;
	else if (got)
		first_line(why, "", out);
	else
		snprintf(why, 160, "the process exited with status %d", WEXITSTATUS(st));
	return false;
}
