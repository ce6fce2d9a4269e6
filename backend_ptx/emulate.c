/* SPDX-License-Identifier: MIT */
/* emulate.c - GPU kernels run on the host; see ptx.h (ptx_emulate).
 *
 * The kernel is lowered with the GPU mapping but with thread and block ids
 * read from globals (plan.emulate) and what only a GPU has (bar.sync,
 * cp.async and its groups, mma, ldmatrix, wgmma) calls to the host, and
 * JIT-compiled for the host; the code between is the GPU's.  Kernels
 * without shared memory run thread after thread.  In the others every
 * thread of a block is a host thread, one running at a time: a thread runs
 * until it ends or parks at a barrier (until the whole block is there) or
 * at a warp's collective (until its 32 lanes are; the last to arrive
 * carries it out for the warp, fragments laid out as the PTX ISA documents,
 * see tc.c).  A cp.async reads its source when issued and lands at the
 * thread's cp.async.wait_group that covers its group (or when the thread
 * ends); a wgmma is carried out at the warp's wgmma.wait_group that
 * covers its group, reading shared memory then.  Shared memory is a plain
 * global, shadowed byte by byte: who wrote it last and in which interval
 * between two barriers, who read it there, the copies in flight to it,
 * the wgmma in flight that read it, and whether its writer has passed a
 * fence.proxy.async since.  So the run fails where a GPU's result would
 * depend on timing (a race: two threads touch a byte between the same two
 * barriers, one writing, or a byte is read while a copy to it is in
 * flight, or by a wgmma before its writer's fence, or written while a
 * wgmma that reads it is in flight), where a wgmma is left in flight at
 * the kernel's end, where a thread reads
 * what no thread of its block wrote, where an access would fault
 * (misaligned, or outside shared memory or X: ptx_emu_check, flagged in
 * the global patc_emu_bad), and where the block's threads wait for one
 * another forever (a GPU would hang).  Where asked, each thread's
 * accesses (shared memory, copies, X, the values, C) are noted between
 * barriers and counted at each barrier and at the block's end, a warp's
 * lanes matched by instruction (PtxEmuStats; every kernel then runs in
 * blocks).
 *
 * This file holds what the kernel calls (the PtxEmu* hooks), the block's
 * threads and their scheduler, and ptx_emulate; the shadow of shared
 * memory is in emulate_shadow.c, the warp's collectives in
 * emulate_warp.c and the access counts in emulate_count.c
 * (emulate_impl.h). */
#define _POSIX_C_SOURCE 200809L
#include "emulate_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Ids {
	int32_t *tid_x, *tid_y, *ctaid_x, *ctaid_y, *ctaid_z; /* ctaid_z: NULL where unread */
} Ids;

/* The block being emulated: one emulation at a time in a process. */
static Block *blk;
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
/* ---- what the kernel calls (PtxEmu*), from the running thread ---- */

static void emu_mma(const int32_t *a, const int32_t *b, float *c, int32_t f16)
{
	const int t = blk->turn, l = t % LANES;
	Warp *w = &blk->warp[t / LANES];
	memcpy(w->a[l], a, sizeof w->a[l]);
	memcpy(w->b[l], b, 2 * sizeof *b);
	memcpy(w->c[l], c, sizeof w->c[l]);
	emu_arrive(blk, t, OP_MMA, f16);
	memcpy(c, w->c[l], sizeof w->c[l]);
}

static void emu_mma_sp(const int32_t *a, const int32_t *b, float *c, int32_t e, int32_t f16)
{
	const int t = blk->turn, l = t % LANES;
	Warp *w = &blk->warp[t / LANES];
	memcpy(w->a[l], a, sizeof w->a[l]);
	memcpy(w->b[l], b, sizeof w->b[l]);
	memcpy(w->c[l], c, sizeof w->c[l]);
	w->e[l] = e;
	emu_arrive(blk, t, OP_MMASP, f16);
	memcpy(c, w->c[l], sizeof w->c[l]);
}

static void emu_ldm(const uint16_t *row, int32_t *out, int32_t trans)
{
	const int t = blk->turn, l = t % LANES;
	Warp *w = &blk->warp[t / LANES];
	w->row[l] = row;
	emu_arrive(blk, t, OP_LDM, trans);
	memcpy(out, w->got[l], sizeof w->got[l]);
}

static void emu_wgmma(const void *smem, int64_t bytes, int64_t desc_a, int64_t desc_b, float *c, int32_t info)
{
	const int t = blk->turn, l = t % LANES;
	Warp *w = &blk->warp[t / LANES];
	w->wsmem = smem, w->wbytes = bytes;
	w->wd[l][0] = desc_a, w->wd[l][1] = desc_b;
	w->winfo[l] = info;
	w->wc[l] = c;
	emu_arrive(blk, t, OP_WGMMA, 0);
}

static void emu_wgcommit(void) { emu_arrive(blk, blk->turn, OP_WGCOMMIT, 0); }

static void emu_wgwait(int32_t pending) { emu_arrive(blk, blk->turn, OP_WGWAIT, pending); }

/* bar.sync 0: the last of the block's threads to arrive goes on, the
 * others park until then. */
static void emu_sync(void)
{
	Block *b = blk;
	const int t = b->turn;
	b->lane[t].bars++;
	if (++b->bar_arrived == b->n) {
		if (b->stats)
			emu_count_interval(b);
		b->bar_arrived = 0;
		b->bar_gen++;
		b->iv++;
	} else {
		emu_park(b, t, PARK_BAR, b->bar_gen);
	}
}

static void emu_cp(void *dst, const void *src, int32_t bytes, int32_t ok, const void *base, int64_t size,
                   const void *from)
{
	Block *b = blk;
	const int t = b->turn;
	Lane *ln = &b->lane[t];
	if (b->stats) {
		const uintptr_t site = (uintptr_t)__builtin_return_address(0);
		if (base)
			emu_note_access(b, t, site, PTX_ACC_CP, (const uint8_t *)dst - (const uint8_t *)base, bytes);
		if (ok)
			emu_note_access(b, t, site, PTX_ACC_SRC, (int64_t)((uintptr_t)src - (uintptr_t)from), bytes);
	}
	Copy *cps = emu_room(b, ln->cp, ln->ncp, &ln->cap, sizeof *cps);
	if (!cps)
		return;
	ln->cp = cps;
	Copy *cp = &ln->cp[ln->ncp++];
	cp->dst = dst, cp->bytes = bytes > 16 ? 16 : bytes, cp->group = ln->groups + 1;
	if (ok)
		memcpy(cp->data, src, (size_t)cp->bytes);
	else
		memset(cp->data, 0, sizeof cp->data);
	cp->region = base ? emu_region_of(b, base, size) : -1;
	cp->off = 0;
	if (cp->region >= 0) {
		cp->off = (const uint8_t *)dst - (const uint8_t *)base;
		emu_sh_write(b, &b->region[cp->region], cp->off, cp->bytes, t, ISSUE);
	}
}

static void emu_commit(void) { blk->lane[blk->turn].groups++; }

static void emu_fence(void) { blk->lane[blk->turn].fences++; }

static void emu_wait(int32_t pending) { emu_land(blk, blk->turn, blk->lane[blk->turn].groups - pending); }

static void emu_touch(const void *p, int64_t bytes, int32_t write, const void *base, int64_t size)
{
	Block *b = blk;
	const int ri = emu_region_of(b, base, size);
	if (ri < 0)
		return;
	const int64_t off = (const uint8_t *)p - (const uint8_t *)base;
	if (b->stats)
		emu_note_access(b, b->turn, (uintptr_t)__builtin_return_address(0), write ? PTX_ACC_STORE : PTX_ACC_LOAD, off,
		                (int)bytes);
	if (write)
		emu_sh_write(b, &b->region[ri], off, bytes, b->turn, WRITE);
	else
		emu_sh_read(b, &b->region[ri], off, bytes, b->turn, false);
}

static void emu_global_access(const void *p, int64_t bytes, int32_t write, const void *from)
{
	Block *b = blk;
	if (b->stats)
		emu_note_access(b, b->turn, (uintptr_t)__builtin_return_address(0), write ? PTX_ACC_GSTORE : PTX_ACC_GLOAD,
		                (int64_t)((uintptr_t)p - (uintptr_t)from), (int)bytes);
}

/* ---- the block's threads ---- */

typedef struct LaneArg {
	Block *b;
	int t;
} LaneArg;

/* Thread t of every block, until b->quit. */
static void *lane_main(void *arg)
{
	const LaneArg *la = arg;
	Block *b = la->b;
	Lane *ln = &b->lane[la->t];
	for (;;) {
		while (sem_wait(&ln->go))
			;
		if (b->quit)
			return NULL;
		if (!setjmp(ln->out)) {
			b->kern->fn(b->x, b->out, b->values, b->index, 0, b->N, b->N, b->bias);
			emu_land(b, la->t, INT64_MAX); /* what it left in flight lands anyway */
		}
		ln->done = true;
		sem_post(&b->back);
	}
}

/* The threads of n: bx x (n / bx), each waiting to run; false with err. */
static Block *block_new(int n, int bx, LaneArg **args, char err[PTX_ERR_MAX])
{
	Block *b = calloc(1, sizeof *b);
	Lane *lane = calloc((size_t)n, sizeof *lane);
	Warp *warp = calloc((size_t)(n + LANES - 1) / LANES, sizeof *warp);
	pthread_t *th = calloc((size_t)n, sizeof *th);
	LaneArg *la = calloc((size_t)n, sizeof *la);
	if (!b || !lane || !warp || !th || !la) {
		free(b), free(lane), free(warp), free(th), free(la);
		snprintf(err, PTX_ERR_MAX, "emulation: out of memory");
		return NULL;
	}
	*b = (Block){.n = n, .bx = bx, .lane = lane, .warp = warp, .th = th};
	sem_init(&b->back, 0, 0);
	for (int t = 0; t < n; t++)
		sem_init(&lane[t].go, 0, 0);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, (size_t)1 << 20);
	for (int t = 0; t < n; t++) {
		la[t] = (LaneArg){b, t};
		if (pthread_create(&th[t], &attr, lane_main, &la[t]) != 0)
			break;
		b->started++;
	}
	pthread_attr_destroy(&attr);
	*args = la;
	if (b->started < n)
		snprintf(err, PTX_ERR_MAX, "emulation: cannot start the %d threads of a block", n);
	return b;
}

/* Ends b's threads and frees it. */
static void block_free(Block *b, LaneArg *la)
{
	b->quit = true;
	for (int t = 0; t < b->started; t++) {
		sem_post(&b->lane[t].go);
		pthread_join(b->th[t], NULL);
	}
	for (int t = 0; t < b->n; t++) {
		sem_destroy(&b->lane[t].go);
		free(b->lane[t].cp);
		free(b->lane[t].acc);
	}
	sem_destroy(&b->back);
	for (int i = 0; i < b->nregions; i++) {
		Region *r = &b->region[i];
		free(r->w_iv), free(r->w_th), free(r->w_fc), free(r->r_iv), free(r->r_th), free(r->pend), free(r->wgrd);
	}
	for (int i = 0; i < (b->n + LANES - 1) / LANES; i++)
		free(b->warp[i].wq);
	free(b->tmp), free(b->lane), free(b->warp), free(b->th), free(la), free(b);
}

/* Runs the block (its ids set but the threads') to its end, one thread at
 * a time, each until it ends or parks.  false with err where its threads
 * wait for one another forever (they are then taken out of the kernel), where a
 * warp's lanes met at different collectives or passed what the hardware
 * refuses, on a race or a read of unwritten shared memory, or where
 * memory runs out. */
static bool run_block(Block *b, const Ids *ids, char err[PTX_ERR_MAX])
{
	for (int t = 0; t < b->n; t++) {
		Lane *ln = &b->lane[t];
		ln->done = false, ln->parked = 0, ln->bars = 0, ln->groups = 0, ln->fences = 0, ln->ncp = 0, ln->nacc = 0;
	}
	for (int i = 0; i < (b->n + LANES - 1) / LANES; i++) {
		Warp *w = &b->warp[i];
		w->arrived = 0, w->gen = 0, w->mixed = w->badmeta = w->baddesc = false;
		w->nwq = 0, w->wgroups = 0;
	}
	b->bar_arrived = 0;
	b->iv0 = ++b->iv;
	for (;;) {
		int ran = 0, left = 0;
		for (int t = 0; t < b->n; t++) {
			Lane *ln = &b->lane[t];
			if (ln->done)
				continue;
			left++;
			if ((ln->parked == PARK_WARP && ln->parked_gen == b->warp[t / LANES].gen) ||
			    (ln->parked == PARK_BAR && ln->parked_gen == b->bar_gen))
				continue; /* what it waits for is not done */
			*ids->tid_x = t % b->bx, *ids->tid_y = t / b->bx;
			b->turn = t;
			sem_post(&ln->go);
			while (sem_wait(&b->back))
				;
			ran++;
		}
		if (!left)
			break;
		if (!ran) {
			int64_t lo = INT64_MAX, hi = 0;
			bool bar = false;
			for (int t = 0; t < b->n; t++) {
				const Lane *ln = &b->lane[t];
				lo = ln->bars < lo ? ln->bars : lo, hi = ln->bars > hi ? ln->bars : hi;
				bar |= !ln->done && ln->parked == PARK_BAR;
			}
			if (bar && lo != hi)
				snprintf(err, PTX_ERR_MAX,
				         "emulation: the threads of a block reach different numbers of barriers (%lld and %lld): a "
				         "GPU would hang",
				         (long long)lo, (long long)hi);
			else
				snprintf(err, PTX_ERR_MAX,
				         "emulation: threads wait at a barrier or an mma that others never reach: a GPU would hang");
			b->abort = true; /* each parked thread leaves the kernel */
			for (int t = 0; t < b->n; t++)
				if (!b->lane[t].done) {
					b->turn = t;
					sem_post(&b->lane[t].go);
					while (sem_wait(&b->back))
						;
				}
			b->abort = false;
			return false;
		}
	}
	if (b->stats)
		emu_count_interval(b);
	bool inflight = false; /* (their accumulators are gone with the threads) */
	for (int i = 0; i < (b->n + LANES - 1) / LANES; i++) {
		Warp *w = &b->warp[i];
		inflight |= w->nwq > 0;
		for (int64_t j = 0; j < w->nwq; j++)
			emu_wg_complete(b, &w->wq[j], false);
		w->nwq = 0;
	}
	for (int i = 0; i < (b->n + LANES - 1) / LANES; i++) {
		const Warp *w = &b->warp[i];
		const char *why = w->mixed     ? "the lanes of a warp reached different collectives"
		                  : w->badmeta ? "an mma.sp's metadata holds an invalid index pair"
		                  : w->baddesc ? "a wgmma's descriptors read outside shared memory"
		                               : NULL;
		if (why) {
			snprintf(err, PTX_ERR_MAX, "tensor-core emulation: %s", why);
			return false;
		}
	}
	if (b->oom) {
		snprintf(err, PTX_ERR_MAX, "emulation: out of memory (or more shared buffers than the shadow holds)");
		return false;
	}
	if (b->race[0] || b->unwritten[0]) {
		snprintf(err, PTX_ERR_MAX, "%s", b->race[0] ? b->race : b->unwritten);
		return false;
	}
	if (inflight) {
		snprintf(err, PTX_ERR_MAX, "emulation: a wgmma still in flight at the kernel's end (no wgmma.wait_group "
		                           "completed it before C was stored)");
		return false;
	}
	return true;
}

/* Points the kernel's global `name`, where it has it, to fn. */
typedef void (*AnyFn)(void);
static void set_hook(X86Kernel *kern, const char *name, AnyFn fn)
{
	AnyFn *g = x86_lookup(kern, name);
	if (g)
		*g = fn;
}

struct PtxEmuKernel {
	LowerKernel k;
	PtxPlan plan;
	X86Kernel kern;
	Ids ids;
	X86Kernel epi; /* plan.epi_after: the epilogue kernel */
	Ids epi_ids;
	char epi_name[PIR_NAME_MAX + 200];
};

PtxEmuKernel *ptx_emu_open(const LowerKernel *k, const PtxSchedule *s, const char *sm, bool count, bool bias,
                           PtxPlan *plan_out, char err[PTX_ERR_MAX])
{
	PtxEmuKernel *e = calloc(1, sizeof *e);
	if (!e) {
		snprintf(err, PTX_ERR_MAX, "emulation: out of memory");
		return NULL;
	}
	e->k = *k;
	ptx_plan_target(k, s, sm, &e->plan);
	ptx_plan_epilogue(k, bias, &e->plan);
	e->plan.emulate = true;
	e->plan.emu_count = count;
	if (plan_out)
		*plan_out = e->plan;
	LowerHooks hooks = ptx_hooks(&e->plan);
	char xerr[X86_ERR_MAX];
	if (!x86_jit_hooks(&e->k, &hooks, NULL, NULL, &e->kern, xerr)) {
		snprintf(err, PTX_ERR_MAX, "emulation: %.400s", xerr);
		free(e);
		return NULL;
	}
	if (e->plan.epi_after) {
		LowerKernel ek = e->k;
		snprintf(e->epi_name, sizeof e->epi_name, "%s_epi", k->name);
		ek.name = e->epi_name;
		LowerHooks eh = ptx_epi_hooks(&e->plan);
		if (!x86_jit_hooks(&ek, &eh, NULL, NULL, &e->epi, xerr)) {
			snprintf(err, PTX_ERR_MAX, "emulation: %.400s", xerr);
			x86_kernel_free(&e->kern);
			free(e);
			return NULL;
		}
		e->epi_ids = (Ids){x86_lookup(&e->epi, "patc_emu_tid_x"), NULL, x86_lookup(&e->epi, "patc_emu_ctaid_x"), NULL, NULL};
		if (!e->epi_ids.tid_x || !e->epi_ids.ctaid_x) {
			ptx_emu_close(e);
			snprintf(err, PTX_ERR_MAX, "emulation: the epilogue kernel lacks its thread and block ids");
			return NULL;
		}
	}
	X86Kernel *kern = &e->kern;
	e->ids = (Ids){x86_lookup(kern, "patc_emu_tid_x"), x86_lookup(kern, "patc_emu_tid_y"),
	               x86_lookup(kern, "patc_emu_ctaid_x"), x86_lookup(kern, "patc_emu_ctaid_y"),
	               x86_lookup(kern, "patc_emu_ctaid_z")};
	const Ids *ids = &e->ids;
	if (!ids->tid_x || !ids->tid_y || !ids->ctaid_x || !ids->ctaid_y || (!ids->ctaid_z && e->plan.nsplit > 1)) {
		ptx_emu_close(e);
		snprintf(err, PTX_ERR_MAX, "emulation: the kernel lacks its thread and block ids");
		return NULL;
	}
	return e;
}

void ptx_emu_close(PtxEmuKernel *e)
{
	if (!e)
		return;
	x86_kernel_free(&e->kern);
	if (e->plan.epi_after)
		x86_kernel_free(&e->epi);
	free(e);
}

bool ptx_emu_run(PtxEmuKernel *e, int64_t N, const void *x, const void *values, const int32_t *const *index,
                 const float *bias, float *c, PtxEmuStats *stats, char err[PTX_ERR_MAX])
{
	const LowerKernel *k = &e->k;
	const PtxPlan plan = e->plan;
	X86Kernel *kern = &e->kern;
	const Ids *ids = &e->ids;
	if (stats) {
		const bool count = stats->count_access;
		*stats = (PtxEmuStats){.count_access = count};
	}
	if (((uintptr_t)x | (uintptr_t)values | (uintptr_t)c) % 16) {
		snprintf(err, PTX_ERR_MAX, "emulation: X, the values and C must be 16-byte aligned (as cuMemAlloc's are)");
		return false;
	}
	if (N != k->shape.N && !k->n_runtime) {
		snprintf(err, PTX_ERR_MAX, "emulation: the kernel is compiled for N = %lld, not %lld", (long long)k->shape.N,
		         (long long)N);
		return false;
	}
	if (N <= 0) /* (as the launcher: nothing to launch) */
		return true;
	unsigned grid[3], block[3];
	ptx_grid(&plan, N, grid, block);
	bool ok = true;
	/* Kernels that sum split parts through the module's workspace run
	 * twice, C poisoned again, the counts taken from the last: the first
	 * launch must leave the workspace's counters as it found them, and it
	 * reads an X of NaN, so that a part that sums before the others have
	 * stored their slices finds NaN there. */
	int64_t *copied = x86_lookup(kern, "patc_emu_copied");
	float *nan_x = NULL;
	if (plan.wsum) {
		const size_t nx = (size_t)(k->shape.K * N);
		nan_x = aligned_alloc(16, (nx * sizeof *nan_x + 15) / 16 * 16);
		if (!nan_x) {
			snprintf(err, PTX_ERR_MAX, "emulation: out of memory");
			return false;
		}
		for (size_t i = 0; i < nx; i++)
			nan_x[i] = NAN;
	}
	/* (accumulating, the second launch starts from the old C again) */
	float *old_c = plan.wsum && k->shape.accumulate ? malloc((size_t)(k->shape.M * N) * sizeof *old_c) : NULL;
	if (old_c)
		memcpy(old_c, c, (size_t)(k->shape.M * N) * sizeof *old_c);
	else if (plan.wsum && k->shape.accumulate) {
		free(nan_x);
		snprintf(err, PTX_ERR_MAX, "emulation: out of memory");
		return false;
	}
	const void *x_given = x;
	for (int launch = 0; ok && launch < (plan.wsum ? 2 : 1); launch++) {
		x = plan.wsum && launch == 0 ? nan_x : x_given;
		if (stats)
			*stats = (PtxEmuStats){.count_access = stats->count_access};
		if (copied)
			copied[0] = copied[1] = 0;
		const int64_t nc = k->shape.M * N;
		for (int64_t i = 0; i < nc; i++) /* as the launcher leaves it; accumulating, the old C */
			c[i] = old_c ? old_c[i] : k->shape.accumulate ? c[i] : plan.zero ? 0.0f : NAN;
		if (!plan.tc && !plan.stage && !plan.emu_count) { /* no shared memory, nothing counted: thread after thread */
			/* the split walk's parts from the second on, the first last: on a
			 * GPU any part may finish last (PtxPlan.wsum) */
			for (unsigned cz = 0; cz < grid[2]; cz++)
				for (unsigned cx = 0; cx < grid[0]; cx++)
					for (unsigned cy = 0; cy < grid[1]; cy++)
						for (unsigned ty = 0; ty < block[1]; ty++)
							for (unsigned tx = 0; tx < block[0]; tx++) {
								if (ids->ctaid_z)
									*ids->ctaid_z = (int32_t)((cz + 1) % grid[2]);
								*ids->ctaid_x = (int32_t)cx, *ids->ctaid_y = (int32_t)cy;
								*ids->tid_x = (int32_t)tx, *ids->tid_y = (int32_t)ty;
								kern->fn(x, c, values, index, 0, N, N, bias);
							}
		} else {
			LaneArg *la = NULL;
			Block *b = block_new((int)(block[0] * block[1]), (int)block[0], &la, err);
			if (!b || b->started < b->n) {
				if (b)
					block_free(b, la);
				free(nan_x), free(old_c);
				return false;
			}
			b->kern = kern, b->x = x, b->values = values, b->out = c, b->index = index, b->N = N, b->bias = bias;
			b->stats = stats && stats->count_access ? stats : NULL;
			pthread_mutex_lock(&one_at_a_time);
			set_hook(kern, "patc_emu_mma", (AnyFn)emu_mma);
			set_hook(kern, "patc_emu_mmasp", (AnyFn)emu_mma_sp);
			set_hook(kern, "patc_emu_ldm", (AnyFn)emu_ldm);
			set_hook(kern, "patc_emu_wgmma", (AnyFn)emu_wgmma);
			set_hook(kern, "patc_emu_wgcommit", (AnyFn)emu_wgcommit);
			set_hook(kern, "patc_emu_wgwait", (AnyFn)emu_wgwait);
			set_hook(kern, "patc_emu_sync", (AnyFn)emu_sync);
			set_hook(kern, "patc_emu_cp", (AnyFn)emu_cp);
			set_hook(kern, "patc_emu_commit", (AnyFn)emu_commit);
			set_hook(kern, "patc_emu_fence", (AnyFn)emu_fence);
			set_hook(kern, "patc_emu_wait", (AnyFn)emu_wait);
			set_hook(kern, "patc_emu_touch", (AnyFn)emu_touch);
			set_hook(kern, "patc_emu_global", (AnyFn)emu_global_access);
			blk = b;
			for (unsigned cz = 0; ok && cz < grid[2]; cz++)
				for (unsigned cx = 0; ok && cx < grid[0]; cx++)
					for (unsigned cy = 0; ok && cy < grid[1]; cy++) {
						if (ids->ctaid_z) /* (the parts in the order above) */
							*ids->ctaid_z = (int32_t)((cz + 1) % grid[2]);
						*ids->ctaid_x = (int32_t)cx, *ids->ctaid_y = (int32_t)cy;
						ok = run_block(b, ids, err);
					}
			blk = NULL;
			pthread_mutex_unlock(&one_at_a_time);
			block_free(b, la);
		}
	}
	free(nan_x), free(old_c);
	int64_t *bad = x86_lookup(kern, "patc_emu_bad"); /* (the cause, where a race followed) */
	if (bad && bad[0]) {
		snprintf(err, PTX_ERR_MAX,
		         "emulation: an access of %lld bytes at an address not a multiple of %lld (a GPU faults on it, or "
		         "a wgmma reads elsewhere)",
		         (long long)bad[0], (long long)bad[0]);
		ok = false;
	} else if (bad && bad[1]) {
		snprintf(err, PTX_ERR_MAX, "emulation: an access outside %s",
		         bad[1] == 1 ? "the block's shared memory" : "X");
		ok = false;
	}
	if (bad) /* (for the next run of the kernel) */
		bad[0] = bad[1] = 0;
	/* the epilogue kernel, after the launch (a launch on the same stream) */
	for (unsigned bx = 0; ok && plan.epi_after && bx < ptx_epi_blocks(k, N); bx++)
		for (unsigned tx = 0; tx < PTX_EPI_THREADS; tx++) {
			*e->epi_ids.ctaid_x = (int32_t)bx, *e->epi_ids.tid_x = (int32_t)tx;
			e->epi.fn(x, c, values, index, 0, N, N, bias);
		}
	if (stats) { /* the bytes every thread's copies read */
		const int64_t *n = x86_lookup(kern, "patc_emu_copied");
		for (int i = 0; i < 2; i++)
			stats->copied[i] = n ? (double)n[i] : 0;
	}
	return ok;
}

bool ptx_emulate(const LowerKernel *k, const PtxSchedule *s, const char *sm, const void *x, const void *values,
                 const int32_t *const *index, float *c, PtxPlan *plan_out, PtxEmuStats *stats, char err[PTX_ERR_MAX])
{
	if (stats)
		*stats = (PtxEmuStats){.count_access = stats->count_access};
	PtxEmuKernel *e = ptx_emu_open(k, s, sm, stats && stats->count_access, false, plan_out, err);
	if (!e)
		return false;
	bool ok = ptx_emu_run(e, k->shape.N, x, values, index, NULL, c, stats, err);
	ptx_emu_close(e);
	return ok;
}
