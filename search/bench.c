/* SPDX-License-Identifier: MIT */
/* bench.c - the search's measuring rounds: each candidate measured (or
 * taken over from the tuning log), recorded, logged and shown on the
 * progress line (a bar on a terminal, lines otherwise), the fastest kept
 * up to date; and the kernel-schedule tuning of the best and the fastest,
 * the backend's knobs one at a time (tune_x86, tune_gpu).  See search.h,
 * steps 4 and 5. */
#define _POSIX_C_SOURCE 200809L
#include "search_impl.h"
#include "../backend_ptx/gpu.h"
#include "../backend_x86/x86.h"
#include "../support/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- progress: a one-line bar on a terminal, lines otherwise ---- */

/* A line that stays (a round's summary, a failure), clearing the bar. */
void search_progress_line(Progress *pr, const char *fmt, ...)
{
	if (!pr->f)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (pr->tty)
		fputs("\r\033[K", pr->f);
	vfprintf(pr->f, fmt, ap);
	fputc('\n', pr->f);
	va_end(ap);
}

/* On a terminal, the bar: done of total, the fastest so far and the current
 * candidate. */
static void progress_bar(const Progress *pr, const char *what)
{
	if (!pr->f || !pr->tty || pr->total <= 0)
		return;
	enum { WIDTH = 24 };
	int fill = (int)((double)WIDTH * pr->done / pr->total);
	char bar[WIDTH + 1];
	for (int i = 0; i < WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[WIDTH] = 0;
	fprintf(pr->f, "\r\033[Ksearch [%s] %d/%d", bar, pr->done, pr->total);
	if (pr->fastest_us > 0)
		fprintf(pr->f, "  fastest %.1f us", pr->fastest_us);
	fprintf(pr->f, "  %.40s", what);
	fflush(pr->f);
}

/* ---- measuring candidates ---- */

/* Whether c counts for the best: measured in full within the budget, at
 * the target's density (a reference pattern's may be another: it is still
 * measured, to be drawn). */
bool search_eligible(const SearchCandidate *c, const SearchSettings *s)
{
	return c->status == SEARCH_MEASURED && !c->early && !c->off_target && c->metrics.loss_over_bound <= s->budget;
}

/* Candidate i as the fastest so far, the standard library's patterns
 * included (the search measured them; a user wants the best pattern,
 * wherever it came from). */
void search_consider_fastest(Bench *b, int i)
{
	SearchResult *r = b->r;
	const SearchCandidate *c = &r->c[i];
	if (!search_eligible(c, b->s))
		return;
	if (r->fastest < 0 || c->measured_us < r->c[r->fastest].measured_us) {
		r->fastest = i;
		b->pr.fastest_us = c->measured_us;
	}
}
/* Measures candidate i (or takes its measurement over from the log),
 * records and logs it; the best is updated for searched candidates. */
void search_bench_one(Bench *b, int i, const char *kind)
{
	SearchResult *r = b->r;
	SearchCandidate *c = &r->c[i];
	progress_bar(&b->pr, c->notation);
	/* hopeless: a few runs already this much slower than the fastest */
	/* (not the references: the comparison with them wants their full measurement) */
	b->p.stop_us =
	        b->s->stop_ratio > 0 && r->fastest >= 0 && !c->ref[0] ? b->s->stop_ratio * r->c[r->fastest].measured_us : 0;
	b->p.sched = c->sched;
	Measured m;
	if (search_taken_over(b->s, c, &m))
		r->resumed++;
	else {
		m = search_measure(&b->p, &c->ir, b->s->timeout_s);
		if (search_log_measurement(b->s, c, m, r->dense_us, r->blas_core, b->pr.f))
			r->logged++;
		else if (b->s->log_path)
			r->unlogged++;
	}
	search_record(c, &m);
	b->pr.done++;
	r->stopped += m.ok && m.early;
	search_consider_fastest(b, i);
	char sched[128];
	kernel_schedule_text(&c->sched, sched, sizeof sched);
	if (!m.ok)
		search_progress_line(&b->pr, "search: %s%s (%s) FAILED: %s", kind, c->notation, sched, m.why);
	else if (!b->pr.tty)
		search_progress_line(&b->pr, "search: %s%-40s %-22s predicted %9.1f us, measured %9.1f us%s", kind,
		                     c->notation, sched, c->predicted_us, m.us, m.early ? " (stopped early)" : "");
}

/* Candidate `from` again under schedule sc: appended, measured (or taken
 * from the log); *cur becomes it where it is faster than *cur.  A kernel
 * measured already (a standard-library pattern the search also found,
 * tuned from both) is not measured again.  Returns 1 (measured or taken
 * from the log), 0 (measured already) or -1 (out of memory). */
static int bench_variant(Bench *b, int from, const KernelSchedule *sc, int *cur)
{
	SearchResult *r = b->r;
	for (int i = 0; i < r->n; i++) {
		const SearchCandidate *t = &r->c[i];
		if ((t->status == SEARCH_MEASURED || t->status == SEARCH_FAILED) && kernel_schedule_equal(&t->sched, sc) &&
		    pir_equal(&t->ir, &r->c[from].ir)) {
			if (t->status == SEARCH_MEASURED && !t->early && t->measured_us < r->c[*cur].measured_us)
				*cur = i;
			return 0;
		}
	}
	if (r->n % 64 == 0) {
		SearchCandidate *nc = realloc(r->c, (size_t)(r->n + 64) * sizeof *nc);
		if (!nc)
			return -1;
		r->c = nc;
	}
	SearchCandidate v = r->c[from];
	v.sched = *sc;
	v.status = SEARCH_RANKED, v.measured_us = -1, v.early = false, v.pareto = false, v.why[0] = 0;
	r->c[r->n++] = v;
	b->p.which = -1;
	search_bench_one(b, r->n - 1, "schedule ");
	const SearchCandidate *t = &r->c[r->n - 1];
	if (t->status == SEARCH_MEASURED && !t->early && t->measured_us < r->c[*cur].measured_us)
		*cur = r->n - 1;
	return 1;
}

/* The x86 backend's knobs, one at a time from each base: the vector width
 * (8 floats instead of the host's 16), accumulators along N, column
 * chunks, X in panels, one thread.  Returns the number measured, -1 when
 * out of memory. */
static int tune_x86(Bench *b, const int *base, int nbase)
{
	SearchResult *r = b->r;
	char terr[X86_ERR_MAX];
	LLVMTargetMachineRef tm = x86_target_machine(b->p.cpu, b->p.cpu ? "" : NULL, false, terr);
	const int host = tm ? x86_vector_width(tm) : 8;
	if (tm)
		LLVMDisposeTargetMachine(tm);
	int measured = 0;
	/* the bar's total: at most this many alternatives per candidate (the
	 * chunks offered depend on the shape) */
	b->pr.done = 0, b->pr.total = nbase * ((host > 8) + 2 + 3 + 1 + (b->p.threads > 1));
	search_progress_line(&b->pr, "search: tuning the kernel schedules of the %d fastest", nbase);
	for (int n = 0; n < nbase; n++) {
		int cur = base[n];
		for (int knob = 0; knob < 5; knob++) {
			int64_t alts[3];
			int na = 0;
			LowerKernel lk = {&r->c[cur].ir, {b->p.M, b->p.K, b->p.N, PAT_F32, b->p.op->shape.layout, PAT_ACT_NONE, false}, "k", host, r->c[cur].sched, false, 0};
			lk.vector_width = lk.sched.vector_width ? lk.sched.vector_width : host;
			if (knob == 0 && host > 8)
				alts[na++] = 8;
			if (knob == 1)
				alts[na++] = 2, alts[na++] = 1;
			if (knob == 2) {
				const int64_t own = x86_chunk_columns(&lk);
				if (own < b->p.N)
					alts[na++] = -1;
				for (int64_t w = 128; w <= 512; w *= 4)
					if (w < b->p.N && w != own)
						alts[na++] = w;
			}
			if (knob == 3) { /* X in panels: the other way from the backend's rule */
				X86Traits tr;
				x86_kernel_traits(&lk, &tr);
				if (lk.vector_width >= 8)
					alts[na++] = tr.panel ? -1 : 1;
			}
			if (knob == 4 && b->p.threads > 1) /* fewer threads: small kernels pay for starting them */
				alts[na++] = 1;
			const int from = cur;
			for (int a = 0; a < na; a++) {
				KernelSchedule v = r->c[from].sched;
				if (knob == 0)
					v.vector_width = (int)alts[a];
				else if (knob == 1)
					v.col_tiles = (int)alts[a];
				else if (knob == 2)
					v.chunk = alts[a];
				else if (knob == 3)
					v.stage = (int)alts[a];
				else
					v.threads = (int)alts[a];
				const int got = bench_variant(b, from, &v, &cur);
				if (got < 0)
					return -1;
				measured += got;
			}
		}
	}
	return measured;
}

/* Whether two plans of one kernel map it alike. */
static bool same_kernel(const PtxPlan *x, const PtxPlan *y)
{
	return !memcmp(&x->s, &y->s, sizeof x->s) && x->stage == y->stage && x->nsplit == y->nsplit &&
	       x->tc_rows == y->tc_rows && x->tc_cols == y->tc_cols && x->tc_stages == y->tc_stages &&
	       x->tc_ku == y->tc_ku && x->smem_dyn == y->smem_dyn;
}

/* The GPU mapping's knobs (PtxSchedule), one at a time from each base:
 * half or twice the threads along the columns, 1, 2, 4 or 8 columns and 1
 * to 8 rows a thread, the walk along k split in two (or not), X staged in
 * shared memory (or not), a split walk's parts summed through a
 * workspace instead of atomics (or not), on sm_90 the tensor-core
 * kernels on wgmma (or not), and the staged tensor-core kernels through 6
 * buffers (or patc's) and in blocks of up to 8 warps (or patc's 4), past
 * 48 KiB of shared memory where they need it.  Variants that map to the
 * same kernel (as ptx_plan_target plans it for the target) are not
 * measured; the tensor-core mapping has only staging and the last three.
 * Returns the number measured, -1 when out of memory. */
static int tune_gpu(Bench *b, const int *base, int nbase)
{
	SearchResult *r = b->r;
	int measured = 0;
	b->pr.done = 0, b->pr.total = nbase * 9;
	search_progress_line(&b->pr, "search: tuning the GPU schedules of %d", nbase);
	for (int n = 0; n < nbase; n++) {
		int cur = base[n];
		PtxPlan tried[24]; /* the kernels measured from this base */
		int ntried = 0;
		for (int knob = 0; knob < 4; knob++) {
			const KernelSchedule *cs = &r->c[cur].sched;
			const Pir ir = r->c[cur].ir; /* a copy: measuring a variant may move r->c */
			LowerKernel lk = {&ir, {b->p.M, b->p.K, b->p.N, b->p.op->shape.dtype, b->p.op->shape.layout, PAT_ACT_NONE, false}, "k", 1, {0}, false, 0};
			PtxSchedule given = ptx_schedule_of(cs), alts[5];
			PtxPlan plan;
			ptx_plan_target(&lk, &given, b->p.sm, &plan);
			if (plan.tc && knob != 3)
				continue; /* tensor cores: only staging, wgmma, buffers and warps */
			PtxSchedule now = plan.s;
			now.ksplit = (int)plan.nsplit, now.stage = plan.stage, now.tcs = given.tcs, now.tcw = given.tcw;
			int na = 0;
			if (knob == 0 && now.bx >= 32)
				alts[na] = now, alts[na++].bx = now.bx / 2;
			if (knob == 0 && now.bx <= 128 && 2 * now.bx * now.by <= 1024)
				alts[na] = now, alts[na++].bx = 2 * now.bx;
			for (int v = 1; knob == 1 && v <= 8; v *= 2)
				if (v != now.v)
					alts[na] = now, alts[na++].v = v;
			for (int rr = 1; knob == 2 && plan.group >= 0 && rr <= 8 && na < 4; rr *= 2)
				if (rr != now.r)
					alts[na] = now, alts[na++].r = rr;
			if (knob == 3) {
				if (!plan.tc)
					alts[na] = now, alts[na++].ksplit = plan.nsplit > 1 ? 1 : 2;
				if (!plan.tc && plan.nsplit > 1)
					alts[na] = now, alts[na++].wsum = !now.wsum;
				alts[na] = now, alts[na++].stage = !now.stage;
				/* on Hopper, wgmma (or mma.sync) where the kernel qualifies */
				if (plan.tc && !strcmp(b->p.sm, "sm_90"))
					alts[na] = now, alts[na++].wg = !now.wg;
				if (plan.tc && plan.stage) {
					alts[na] = now, alts[na++].tcs = now.tcs ? 0 : 6;
					if (!plan.tc_wg)
						alts[na] = now, alts[na++].tcw = now.tcw ? 0 : 8;
				}
			}
			const int from = cur;
			for (int a = 0; a < na; a++) {
				PtxPlan ap;
				ptx_plan_target(&lk, &alts[a], b->p.sm, &ap);
				bool same = same_kernel(&ap, &plan);
				for (int i = 0; i < ntried && !same; i++)
					same = same_kernel(&ap, &tried[i]);
				if (same || ntried == (int)(sizeof tried / sizeof *tried))
					continue; /* the same kernel (the knob does not apply, or maps as another did) */
				tried[ntried++] = ap;
				/* the schedule as the plan applies it (rows and blocks that
				 * divide the loops): what the kernel runs and the log says */
				KernelSchedule v = r->c[from].sched;
				if (plan.tc) /* patc's mapping, staged or not, on wgmma or not, its buffers and warps */
					v.bx = v.by = v.v = v.r = v.ksplit = 0, v.stage = ap.stage ? 1 : -1, v.wg = ap.tc_wg,
					v.tcs = ap.stage ? alts[a].tcs : 0, v.tcw = ap.stage && !ap.tc_wg ? alts[a].tcw : 0;
				else
					v.bx = ap.s.bx, v.by = ap.s.by, v.v = ap.s.v, v.r = ap.s.r, v.ksplit = (int)ap.nsplit,
					v.stage = ap.stage, v.wsum = ap.wsum;
				const int got = bench_variant(b, from, &v, &cur);
				if (got < 0)
					return -1;
				measured += got;
			}
		}
	}
	return measured;
}

/* Kernel-schedule tuning: for the best so far (choose_best) and the
 * fastest others measured within the budget, s->tune in all (the standard
 * library's patterns among them), the backend's knobs one at a time
 * (tune_x86, tune_gpu), each alternative measured and kept where it is
 * faster.  The variants are new candidates (same pattern, other schedule).
 * Returns the number measured, -1 when out of memory. */
int search_tune_schedules(Bench *b)
{
	SearchResult *r = b->r;
	const SearchSettings *s = b->s;
	if (s->tune <= 0 || s->shards > 1)
		return 0; /* a shard does not know the fastest: resuming the merged log tunes */
	int *base = malloc((size_t)(s->tune > 0 ? s->tune : 1) * sizeof *base), nbase = 0;
	if (!base)
		return -1;
	for (int n = 0; n < s->tune; n++) { /* the best, then the fastest in order */
		int pick = -1;
		for (int i = 0; i < r->n && !(n == 0 && r->best >= 0); i++) {
			const SearchCandidate *c = &r->c[i];
			bool taken = false;
			for (int j = 0; j < nbase; j++)
				taken |= base[j] == i || pir_equal(&r->c[base[j]].ir, &c->ir);
			if (!taken && search_eligible(c, s) && (pick < 0 || c->measured_us < r->c[pick].measured_us))
				pick = i;
		}
		if (n == 0 && r->best >= 0)
			pick = r->best;
		if (pick < 0)
			break;
		base[nbase++] = pick;
	}
	const int measured = s->gpu ? tune_gpu(b, base, nbase) : tune_x86(b, base, nbase);
	free(base);
	if (measured < 0)
		return -1;
	r->tuned = measured;
	if (nbase)
		search_progress_line(&b->pr, "search: %d schedules measured; the fastest %.1f us", measured,
		                     r->fastest >= 0 ? r->c[r->fastest].measured_us : 0.0);
	return measured;
}
