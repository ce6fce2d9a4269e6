/* SPDX-License-Identifier: MIT */
/* measure.c - one candidate measured in a child process: its kernel
 * compiled (JIT for x86, PTX for a GPU target, or the host emulator), run on
 * a poisoned C, checked against a float64 reference and timed, or the dense
 * baseline (OpenBLAS, cuBLAS) timed; a crash, hang or wrong result is the
 * candidate's, not the search's.  Also the measurement's side of the tuning
 * log: taken over from it (--resume) or appended to it, and recorded into
 * its candidate.  See search.h, steps 4 and 5. */
#define _POSIX_C_SOURCE 200809L
#include "search_impl.h"
#include "../backend_ptx/gpu.h"
#include "../backend_x86/x86.h"
#include "../support/blas_core.h"
#include "../support/util.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- measurement in a child process ---- */

typedef struct KernelRun {
	const X86Kernel *k;
	const float *x, *values;
	float *c;
	const int32_t *const *index;
	int threads;
	double slow_s; /* the tests: a hopeless kernel (PATC_SEARCH_INJECT=slow) */
} KernelRun;

static void kernel_call(void *arg)
{
	const KernelRun *r = arg;
	x86_run(r->k, r->x, r->c, r->values, r->index, NULL, r->k->N, r->threads);
	if (r->slow_s > 0)
		util_sleep(r->slow_s);
}

/* For the tests: $PATC_SEARCH_INJECT = crash, hang or wrong makes the
 * first candidate's measuring process crash, hang or return a wrong C;
 * slow makes the second one's kernel take 20 ms longer a call, and
 * all_slow every one's (on x86: each slower than dense). */
static void inject(int which, float *c, int64_t n)
{
	const char *e = getenv("PATC_SEARCH_INJECT");
	if (!e || which != 0)
		return;
	if (!strcmp(e, "crash"))
		raise(SIGSEGV);
	if (!strcmp(e, "hang"))
		for (;;)
			pause();
	if (!strcmp(e, "wrong"))
		for (int64_t i = 0; i < n; i++)
			c[i] += 1;
}

/* The candidate's mask, packed values and masked dense weight (for the
 * reference); false with m->why.  A measuring child exits after one
 * candidate: what it allocates is freed by its exit. */
static bool pack_candidate(const Problem *p, const Pir *ir, PruneMask *pm, float **dense, float **values,
                           Measured *m)
{
	prune_mask_build(ir, p->imp, p->M, p->K, p->op->rank, pm);
	*dense = malloc((size_t)(p->M * p->K) * sizeof **dense);
	*values = *dense ? prune_pack_new(ir, pm, p->w, p->M, p->K, NULL, *dense) : NULL;
	if (!*values) {
		snprintf(m->why, sizeof m->why, "out of memory");
		return false;
	}
	return true;
}

/* bytes of src in memory from util_alloc_measured; NULL when out of memory. */
static void *measured_copy(const void *src, size_t bytes)
{
	void *q = util_alloc_measured(bytes ? bytes : 1);
	return q ? memcpy(q, src, bytes) : NULL;
}

/* The packed values and index arrays the x86 kernel reads, moved into
 * memory from util_alloc_measured (the child's copies: freed by its exit). */
static bool measured_operands(const Pir *ir, PruneMask *pm, float **values)
{
	PirMetrics mt;
	pir_metrics(ir, &mt);
	if (!(*values = measured_copy(*values, (size_t)mt.values * sizeof **values)))
		return false;
	for (int i = 0; i < ir->nloops; i++) {
		const size_t bytes = (size_t)mt.loop[i].index_len * sizeof(int32_t);
		if (pm->index[i] && !(pm->index[i] = measured_copy(pm->index[i], bytes)))
			return false;
	}
	return true;
}

/* child_measure on the GPU: the candidate compiled to PTX, run on poisoned
 * C, checked against float64 and timed with events (gpu_measure); or (ir
 * NULL) the dense weight through cuBLAS in the op's type (a dense nest run
 * beside it). */
static Measured child_measure_gpu(const Problem *p, const Pir *ir)
{
	Measured m = {0};
	const int64_t M = p->M, K = p->K, N = p->N;
	Pir dense_ir;
	const bool baseline = !ir;
	if (baseline) {
		pir_init(&dense_ir, p->op->name, M, K);
		ir = &dense_ir;
	}
	PruneMask pm;
	float *dense, *values;
	if (!pack_candidate(p, ir, &pm, &dense, &values, &m))
		return m;
	char err[CUDA_ERR_MAX];
	Cuda *cu = p->emulate ? NULL : cuda_open(err);
	if (!cu && !p->emulate) {
		snprintf(m.why, sizeof m.why, "no GPU: %.100s", err);
		return m;
	}
	const KernelSchedule *ks = &p->sched; /* bx 0: patc's mapping (stage -1: without staging) */
	PtxSchedule sched = ptx_schedule_of(ks);
	GpuProblem gp = {ir, {M, K, N, p->op->shape.dtype, p->op->shape.layout, PAT_ACT_NONE, false}, values, &pm, dense, p->x, p->sm, sched,
	                 20, baseline, 64, baseline ? 0 : p->stop_us};
	const char *slow = getenv("PATC_SEARCH_INJECT");
	if (slow && !strcmp(slow, "slow") && p->which == 1 && gp.stop_us > 0)
		gp.stop_us = 1e-9; /* as if a second slower: hopeless */
	GpuResult r;
	/* emulated, the baseline is the dense kernel on the emulator too */
	const bool blas = baseline && !p->emulate;
	if (!(p->emulate ? gpu_emulate(&gp, &r, err) : gpu_measure(cu, &gp, &r, err)))
		snprintf(m.why, sizeof m.why, "on the %s: %.90s", p->emulate ? "host emulator" : "GPU", err);
	else if (r.unwritten || !(r.rel_err < SEARCH_MAX_REL_ERR)) {
		/* the input's where the product itself is past float32's range (as child_measure says) */
		PruneCheck chk;
		prune_check(dense, p->x, NULL, M, K, N, p->op->shape.layout == PAT_LAYOUT_KN, p->op->shape.dtype, 64, &chk);
		if (chk.overflow)
			snprintf(m.why, sizeof m.why, "the product of the weights and the activations overflows float32 "
			         "(C[%lld, %lld]: %.3g in float64)", (long long)chk.m, (long long)chk.n, chk.ref);
		else
			snprintf(m.why, sizeof m.why, "wrong result: relative error %.3g against float64, %lld elements not "
			         "written", r.rel_err, (long long)r.unwritten);
	} else if (blas && r.cublas_us <= 0)
		snprintf(m.why, sizeof m.why, "cuBLAS: %.100s", r.note);
	else if (ks->bx && !r.plan.tc && (r.plan.s.bx != ks->bx || r.plan.s.by != ks->by || r.plan.s.v != ks->v))
		snprintf(m.why, sizeof m.why, "the kernel ran %d x %d threads, %d columns each, not the schedule's",
		         r.plan.s.bx, r.plan.s.by, r.plan.s.v);
	else {
		m.us = blas ? r.cublas_us : r.kernel_us;
		m.rel_err = r.rel_err;
		m.ok = 1;
		m.early = r.early;
		if (r.early)
			snprintf(m.why, sizeof m.why, "stopped early: %.1f us in %s, over %.1f us", r.kernel_us,
			         p->emulate ? "one emulated run" : "3 runs", gp.stop_us);
	}
	if (cu)
		cuda_close(cu);
	return m;
}

/* The child's work: the candidate's kernel (ir) checked and timed, or (ir
 * NULL) the dense sgemm timed; on a GPU target, child_measure_gpu. */
static Measured child_measure(const Problem *p, const Pir *ir)
{
	if (p->sm)
		return child_measure_gpu(p, ir);
	Measured m = {0};
	const int64_t M = p->M, K = p->K, N = p->N;
	float *c = util_alloc_measured((size_t)(M * N) * sizeof *c);
	if (!c) {
		snprintf(m.why, sizeof m.why, "out of memory");
		return m;
	}
	if (!ir) {
		const float *w = measured_copy(p->w, (size_t)(M * K) * sizeof *p->w);
		if (!w) {
			snprintf(m.why, sizeof m.why, "out of memory");
			return m;
		}
		/* (the same sgemm, timed the same way, as a fresh process with the
		 * stronger kernel set times it: search.c's baseline_measure) */
		m.us = blas_time_sgemm_us(BLAS_TIMING_SEARCH, p->op->shape.layout == PAT_LAYOUT_KN, M, K, N, w, p->x, c,
		                          p->threads);
		m.ok = 1;
		return m;
	}
	PruneMask pm;
	float *dense, *values;
	if (!pack_candidate(p, ir, &pm, &dense, &values, &m))
		return m;
	if (!measured_operands(ir, &pm, &values)) {
		snprintf(m.why, sizeof m.why, "out of memory");
		return m;
	}
	const bool kn = p->op->shape.layout == PAT_LAYOUT_KN;
	LowerKernel lk = {ir, {M, K, N, PAT_F32, p->op->shape.layout, PAT_ACT_NONE, false}, "search_kernel", 0, p->sched, false, 0};
	X86Kernel kern;
	char xerr[X86_ERR_MAX];
	if (!x86_jit(&lk, p->cpu, p->cpu ? "" : NULL, &kern, xerr)) {
		snprintf(m.why, sizeof m.why, "compile: %.100s", xerr);
		return m;
	}
	const int32_t *const *index = (const int32_t *const *)pm.index;
	for (int64_t i = 0; i < M * N; i++) /* poisoned: an element the kernel leaves shows */
		c[i] = NAN;
	x86_run(&kern, p->x, c, values, index, NULL, kern.N, p->threads);
	inject(p->which, c, M * N);
	/* check against float64 on up to 64 columns */
	PruneCheck chk;
	prune_check(dense, p->x, c, M, K, N, kn, PAT_F32, 64, &chk);
	m.rel_err = chk.rel;
	if (m.rel_err == -1) {
		snprintf(m.why, sizeof m.why, "out of memory for the float64 reference");
		return m;
	}
	if (chk.overflow) { /* the input's, not the kernel's: every candidate fails so */
		snprintf(m.why, sizeof m.why, "the product of the weights and the activations overflows float32 (C[%lld, "
		         "%lld]: %.3g in float64)", (long long)chk.m, (long long)chk.n, chk.ref_past ? chk.ref : chk.mag);
		return m;
	}
	if (!(m.rel_err < SEARCH_MAX_REL_ERR)) {
		snprintf(m.why, sizeof m.why, "wrong result: relative error %.3g against float64", m.rel_err);
		return m;
	}
	const char *slow = getenv("PATC_SEARCH_INJECT");
	const bool inject_slow = slow && ((!strcmp(slow, "slow") && p->which == 1) || !strcmp(slow, "all_slow"));
	KernelRun r = {&kern, p->x, values, c, index, p->sched.threads > 0 ? p->sched.threads : p->threads,
	               inject_slow ? 0.02 : 0};
	if (p->stop_us > 0) { /* hopeless already? */
		double fastest = 0;
		for (int i = 0; i < 3; i++) {
			double t0 = util_now();
			kernel_call(&r);
			double us = 1e6 * (util_now() - t0);
			fastest = i == 0 || us < fastest ? us : fastest;
		}
		if (fastest > p->stop_us) {
			m.us = fastest;
			m.ok = 1;
			m.early = true;
			snprintf(m.why, sizeof m.why, "stopped early: %.1f us in 3 runs, over %.1f us", fastest, p->stop_us);
			return m;
		}
	}
	m.us = util_time_min_us(kernel_call, &r, 3);
	m.ok = 1;
	return m;
}

/* What a measurement that ran out of time says, then its limit ("%g s"):
 * --resume reads the limit back from the log (search_taken_over). */
#define TIMED_OUT "timed out after "

/* Runs child_measure in a child process with a timeout. */
Measured search_measure(const Problem *p, const Pir *ir, double timeout_s)
{
	Measured m = {0};
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(m.why, sizeof m.why, "pipe: %s", strerror(errno));
		return m;
	}
	fflush(NULL);
	const pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]), close(fd[1]);
		snprintf(m.why, sizeof m.why, "fork: %s", strerror(errno));
		return m;
	}
	if (pid == 0) {
		util_die_with_parent(parent);
		close(fd[0]);
		Measured r = child_measure(p, ir);
		ssize_t wr = write(fd[1], &r, sizeof r);
		_exit(wr == (ssize_t)sizeof r ? 0 : 1);
	}
	close(fd[1]);
	struct pollfd pfd = {fd[0], POLLIN, 0};
	int ready = poll(&pfd, 1, (int)(timeout_s * 1000));
	bool got = false;
	if (ready > 0)
		got = read(fd[0], &m, sizeof m) == (ssize_t)sizeof m;
	close(fd[0]);
	if (!got)
		kill(pid, SIGKILL);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got)
		return m;
	m = (Measured){0};
	if (ready == 0) { /* the limit in the fewest digits that read back as it (search_taken_over compares it) */
		char v[32];
		for (int digits = 6; digits <= 17; digits++) {
			snprintf(v, sizeof v, "%.*g", digits, timeout_s);
			if (strtod(v, NULL) == timeout_s)
				break;
		}
		snprintf(m.why, sizeof m.why, TIMED_OUT "%s s", v);
	}
	else if (WIFSIGNALED(st))
		snprintf(m.why, sizeof m.why, "crashed (signal %d)", WTERMSIG(st));
	else
		snprintf(m.why, sizeof m.why, "the measuring process exited with status %d", WEXITSTATUS(st));
	return m;
}

/* ---- the tuning log ---- */

/* --resume: c's measurement as logged, if it is (the newest by its time,
 * the later line where the times tie, as patc merge keeps).  A timeout
 * under a shorter --timeout than this search's is not: the kernel is given
 * the time again. */
bool search_taken_over(const SearchSettings *s, const SearchCandidate *c, Measured *m)
{
	if (!s->nlogged)
		return false;
	char *text = pir_print_text(&c->ir);
	const SearchLogged *e = NULL;
	for (int i = 0; text && i < s->nlogged; i++) {
		const SearchLogged *l = &s->logged[i];
		if (!strcmp(l->pir, text) && kernel_schedule_equal(&l->sched, &c->sched) &&
		    (!e || strcmp(l->time, e->time) >= 0))
			e = l;
	}
	free(text);
	double limit;
	if (!e || (!strncmp(e->why, TIMED_OUT, strlen(TIMED_OUT)) &&
	           sscanf(e->why + strlen(TIMED_OUT), "%lf", &limit) == 1 && limit < s->timeout_s))
		return false;
	*m = (Measured){.us = e->latency_us, .rel_err = e->rel_err, .ok = e->latency_us >= 0, .early = e->early};
	snprintf(m->why, sizeof m->why, "%.119s", e->why);
	return true;
}

/* Appends c's measurement to the log at once, so that a search killed
 * later keeps it; false where it could not (said on progress). */
bool search_log_measurement(const SearchSettings *s, const SearchCandidate *c, Measured m, double dense_us,
                            const char *blas_core, FILE *progress)
{
	if (!s->log_path || !s->log_info)
		return false;
	SearchCandidate logged = *c;
	logged.status = m.ok ? SEARCH_MEASURED : SEARCH_FAILED;
	logged.measured_us = m.us;
	logged.rel_err = m.rel_err;
	logged.early = m.early;
	snprintf(logged.why, sizeof logged.why, "%s", m.why);
	char *line = search_log_line(s->log_info, &logged, dense_us, blas_core);
	FILE *f = line ? fopen(s->log_path, "a") : NULL;
	bool ok = f && fprintf(f, "%s\n", line) > 0;
	if (f)
		ok = fclose(f) == 0 && ok;
	if (!ok && progress)
		fprintf(progress, "search: warning: cannot append to '%s': %s\n", s->log_path, strerror(errno));
	free(line);
	return ok;
}

/* A measurement's outcome into its candidate. */
void search_record(SearchCandidate *c, const Measured *m)
{
	if (m->ok) {
		c->status = SEARCH_MEASURED;
		c->measured_us = m->us;
		c->rel_err = m->rel_err;
		c->early = m->early;
		if (m->early)
			snprintf(c->why, sizeof c->why, "%s", m->why);
	} else {
		c->status = SEARCH_FAILED;
		snprintf(c->why, sizeof c->why, "%s", m->why);
	}
}
