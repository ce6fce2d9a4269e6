/* emulate.c - GPU kernels run on the host; see ptx.h (ptx_emulate).
 *
 * The kernel is lowered with the GPU mapping but with thread and block ids
 * read from globals (plan.emulate) and JIT-compiled for the host.  On CUDA
 * cores every thread of the grid runs in turn to its end (the staged
 * kernels copy their X rows themselves when emulated).  On tensor cores a
 * warp's 32 lanes are host threads taking turns: a lane runs until it ends
 * or reaches an mma or an ldmatrix, whose operands it passes to the host;
 * the last lane to arrive carries it out for the whole warp (fragments laid
 * out as the PTX ISA documents, see tc.c) and the lanes go on.  Shared
 * memory is a plain global there, which the lanes of each warp of a staged
 * kernel fill whole, with the copies of all the block's threads (the warps
 * run one after another).  The kernel flags, in the global patc_emu_bad,
 * an access the GPU would fault on (misaligned, or outside shared memory
 * or X: ptx_emu_check), and counts each thread's barriers in
 * patc_emu_bars (ptx_barrier); either a fault or a block whose threads
 * count different numbers (a GPU would hang) fails the run. */
#define _POSIX_C_SOURCE 200809L
#include "ptx.h"
#include "../backend_x86/x86.h"
#include "../weights/tensor.h"

#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Ids {
	int32_t *tid_x, *tid_y, *ctaid_x, *ctaid_y, *ctaid_z; /* ctaid_z: NULL where unread */
} Ids;

enum { LANES = 32, OP_MMA = 1, OP_LDM = 2, OP_MMASP = 3, OP_WGMMA = 4 };

typedef struct Warp {
	sem_t go[LANES]; /* lane l may run */
	sem_t back;      /* the running lane stopped: the scheduler may run */
	int turn;        /* the lane that runs */
	bool done[LANES], parked[LANES];
	unsigned parked_gen[LANES], gen;
	int arrived;
	int op[LANES]; /* the collective each lane has reached: OP_MMA, OP_LDM */
	bool mixed;    /* lanes reached different collectives */
	bool badmeta;  /* an mma.sp's metadata held a pair the hardware refuses */
	bool baddesc;  /* a wgmma's descriptors read outside shared memory, or asked for swizzling */
	bool stuck;    /* run_warp failed with lanes blocked (w must outlive them) */
	int32_t a[LANES][4], b[LANES][4], e[LANES]; /* b: 2 words for mma, 4 for mma.sp; e: its metadata */
	float c[LANES][4];
	const uint16_t *row[LANES]; /* ldmatrix: the row each lane addresses */
	int32_t got[LANES][4];      /* ldmatrix: what each lane gets */
	float wc[LANES][64];        /* wgmma: each lane's accumulators */
	int64_t wd[LANES][2];       /* wgmma: each lane's descriptors */
	int32_t winfo[LANES];       /* wgmma: each lane's info (PtxEmuWgmma) */
	const uint8_t *wsmem;       /* wgmma: the shared memory, wbytes long */
	int64_t wbytes;
	/* the kernel and its arguments */
	const X86Kernel *kern;
	const void *x, *values;
	float *out;
	const int32_t *const *index;
	int64_t N;
} Warp;

/* The warp being emulated: one emulation at a time in a process. */
static Warp *warp;
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static float half_to_f32(uint16_t h, int32_t f16) { return f16 ? fp16_to_f32(h) : bf16_to_f32(h); }

/* The 16-bit element `hi` of word w as a float. */
static float elem(int32_t w, int hi, int32_t f16) { return half_to_f32((uint16_t)((uint32_t)w >> (hi ? 16 : 0)), f16); }

/* D = A B + C for the warp, A 16 x kdim and B kdim x 8 (row-major), C
 * and D in the lanes' accumulators (rows g and g + 8, columns 2t, 2t + 1). */
static void warp_product(Warp *w, const float *A, const float *B, int kdim)
{
	float D[LANES][4];
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < 4; e++) {
			const int i = g + (e & 2 ? 8 : 0), j = 2 * t + (e & 1);
			float d = w->c[l][e];
			for (int kk = 0; kk < kdim; kk++)
				d += A[i * kdim + kk] * B[kk * 8 + j];
			D[l][e] = d;
		}
	}
	memcpy(w->c, D, sizeof D);
}

/* B's kdim x 8 from the lanes' words (word r: k 8r + 2t, + 1 of column g). */
static void warp_b(const Warp *w, int words, float *B, int32_t f16)
{
	for (int l = 0; l < LANES; l++)
		for (int e = 0; e < words; e++)
			for (int h = 0; h < 2; h++)
				B[(8 * e + 2 * (l % 4) + h) * 8 + l / 4] = elem(w->b[l][e], h, f16);
}

/* mma.m16n8k16: D = A B + C for the warp, from every lane's fragments. */
static void warp_mma(Warp *w, int32_t f16)
{
	float A[16][16], B[16][8];
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < 4; e++)
			for (int h = 0; h < 2; h++)
				A[g + (e & 1 ? 8 : 0)][2 * t + h + (e & 2 ? 8 : 0)] = elem(w->a[l][e], h, f16);
	}
	warp_b(w, 2, &B[0][0], f16);
	warp_product(w, &A[0][0], &B[0][0], 16);
}

/* mma.sp.m16n8k32: the same, A 2:4 sparse (see tc.c). */
static void warp_mma_sp(Warp *w, int32_t f16)
{
	float A[16][32] = {{0}}, B[32][8];
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < 4; e++)
			for (int h = 0; h < 2; h++) {
				const int row = g + (e & 1 ? 8 : 0), chunk = t + (e & 2 ? 4 : 0);
				/* the metadata of the row's chunk: lane 4g + chunk / 4, its half
				 * for the row, the chunk's nibble, the kept k's 2 bits */
				const uint32_t meta = (uint32_t)w->e[4 * (row % 8) + chunk / 4];
				const unsigned nib = (meta >> (16 * (row / 8) + 4 * (chunk % 4))) & 15;
				/* the PTX ISA's valid pairs for 16-bit types: two distinct
				 * k, the first in the low bits (0b0100, 0b1000, ... 0b1110) */
				w->badmeta |= (nib & 3) >= nib >> 2;
				A[row][4 * chunk + (int)(nib >> (2 * h) & 3)] = elem(w->a[l][e], h, f16);
			}
	}
	warp_b(w, 4, &B[0][0], f16);
	warp_product(w, &A[0][0], &B[0][0], 32);
}

/* ldmatrix.x4 for the warp: matrix q is the rows lanes 8q .. 8q + 7
 * address; lane (g, t) gets of each its row g, columns 2t and 2t + 1, or
 * transposed its column g, rows 2t and 2t + 1. */
static void warp_ldm(Warp *w, int32_t trans)
{
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int q = 0; q < 4; q++) {
			const uint16_t *const *r = &w->row[8 * q];
			uint16_t lo = trans ? r[2 * t][g] : r[g][2 * t], hi = trans ? r[2 * t + 1][g] : r[g][2 * t + 1];
			w->got[l][q] = (int32_t)((uint32_t)lo | (uint32_t)hi << 16);
		}
	}
}

/* The element at byte offset (from a descriptor) of shared memory as a
 * float; 0 and w->baddesc set where it lies outside. */
static float wg_elem(Warp *w, int64_t at, int32_t f16)
{
	if (at < 0 || at + 2 > w->wbytes) {
		w->baddesc = true;
		return 0;
	}
	uint16_t h;
	memcpy(&h, w->wsmem + at, 2);
	return half_to_f32(h, f16);
}

/* wgmma.mma_async.m64nNk16 for warp v of its warpgroup (rows 16 v .. 16 v
 * + 15 of D = A B + C), A and B read from shared memory through their
 * descriptors (start address, leading and stride byte offsets, each in
 * 16-byte units, in bits 0-13, 16-29 and 32-45; swizzling, bits 62-63,
 * and the base offset, bits 49-51, must be 0) in the PTX ISA's canonical
 * layouts without swizzling, for 16-bit elements (8 to 16 bytes): K-major
 * ((8,m),(8,2)):((8,SBO),(1,LBO)), element (row i, k j) at 2 (i % 8) 8 +
 * (i / 8) SBO + 2 (j % 8) + (j / 8) LBO bytes, for A without imm-trans-a
 * and B without imm-trans-b; M- or N-major ((8,1,m),(8,k)):((1,8,SBO),(8,LBO)),
 * (row or column i, k j) at 2 (i % 8) + (i / 8) SBO + 2 (j % 8) 8 + (j / 8)
 * LBO.  info as PtxEmuWgmma's, imm-trans-a in bit 13.  The
 * lanes' accumulators: lane (g, t) holds for each 8-column tile i, in
 * 4i .. 4i + 3, rows g and g + 8 of the warp's, columns 8i + 2t, + 1. */
static void warp_wgmma(Warp *w)
{
	const int32_t info = w->winfo[0];
	const int n = info & 511, trans = info >> 9 & 1, v = info >> 10 & 3, f16 = info >> 12 & 1, trans_a = info >> 13 & 1;
	for (int l = 0; l < LANES; l++)
		w->mixed |= w->winfo[l] != info || w->wd[l][0] != w->wd[0][0] || w->wd[l][1] != w->wd[0][1];
	if (n < 8 || n > 128 || n % 8) {
		w->baddesc = true;
		return;
	}
	int64_t start[2], lbo[2], sbo[2];
	for (int d = 0; d < 2; d++) {
		const uint64_t desc = (uint64_t)w->wd[0][d];
		start[d] = (int64_t)(desc & 0x3FFF) << 4;
		lbo[d] = (int64_t)(desc >> 16 & 0x3FFF) << 4;
		sbo[d] = (int64_t)(desc >> 32 & 0x3FFF) << 4;
		w->baddesc |= (desc >> 62) != 0 || (desc >> 49 & 7) != 0;
	}
	float A[16][16], B[16][128];
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			const int r = 16 * v + i;
			const int64_t at = trans_a ? 2 * (r % 8) + (r / 8) * sbo[0] + 16 * (j % 8) + (j / 8) * lbo[0]
			                           : 16 * (r % 8) + (r / 8) * sbo[0] + 2 * (j % 8) + (j / 8) * lbo[0];
			A[i][j] = wg_elem(w, start[0] + at, f16);
		}
	for (int j = 0; j < 16; j++)
		for (int col = 0; col < n; col++) {
			const int64_t at = trans ? 2 * (col % 8) + (col / 8) * sbo[1] + 16 * (j % 8) + (j / 8) * lbo[1]
			                         : 16 * (col % 8) + (col / 8) * sbo[1] + 2 * (j % 8) + (j / 8) * lbo[1];
			B[j][col] = wg_elem(w, start[1] + at, f16);
		}
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < n / 2; e++) {
			const int i = g + (e & 2 ? 8 : 0), col = 8 * (e / 4) + 2 * t + (e & 1);
			float d = w->wc[l][e];
			for (int j = 0; j < 16; j++)
				d += A[i][j] * B[j][col];
			w->wc[l][e] = d;
		}
	}
}

/* The running lane l has reached collective op (its operands recorded):
 * the last of the 32 to arrive carries it out for the warp, the others
 * park until then. */
static void arrive(Warp *w, int l, int op, int32_t flag)
{
	w->op[l] = op;
	if (++w->arrived == LANES) {
		for (int i = 0; i < LANES; i++)
			w->mixed |= w->op[i] != op;
		if (op == OP_MMA)
			warp_mma(w, flag);
		else if (op == OP_MMASP)
			warp_mma_sp(w, flag);
		else if (op == OP_WGMMA)
			warp_wgmma(w);
		else
			warp_ldm(w, flag);
		w->arrived = 0;
		w->gen++;
	} else {
		w->parked[l] = true;
		w->parked_gen[l] = w->gen;
		sem_post(&w->back);
		while (sem_wait(&w->go[l]))
			;
		w->parked[l] = false;
	}
}

/* Called by the running lane (only one runs at a time). */
static void emu_mma(const int32_t *a, const int32_t *b, float *c, int32_t f16)
{
	Warp *w = warp;
	const int l = w->turn;
	memcpy(w->a[l], a, sizeof w->a[l]);
	memcpy(w->b[l], b, 2 * sizeof *b);
	memcpy(w->c[l], c, sizeof w->c[l]);
	arrive(w, l, OP_MMA, f16);
	memcpy(c, w->c[l], sizeof w->c[l]);
}

static void emu_mma_sp(const int32_t *a, const int32_t *b, float *c, int32_t e, int32_t f16)
{
	Warp *w = warp;
	const int l = w->turn;
	memcpy(w->a[l], a, sizeof w->a[l]);
	memcpy(w->b[l], b, sizeof w->b[l]);
	memcpy(w->c[l], c, sizeof w->c[l]);
	w->e[l] = e;
	arrive(w, l, OP_MMASP, f16);
	memcpy(c, w->c[l], sizeof w->c[l]);
}

static void emu_ldm(const uint16_t *row, int32_t *out, int32_t trans)
{
	Warp *w = warp;
	const int l = w->turn;
	w->row[l] = row;
	arrive(w, l, OP_LDM, trans);
	memcpy(out, w->got[l], sizeof w->got[l]);
}

static void emu_wgmma(const void *smem, int64_t bytes, int64_t desc_a, int64_t desc_b, float *c, int32_t info)
{
	Warp *w = warp;
	const int l = w->turn, nacc = (info & 511) / 2;
	w->wsmem = smem, w->wbytes = bytes;
	w->wd[l][0] = desc_a, w->wd[l][1] = desc_b;
	w->winfo[l] = info;
	memcpy(w->wc[l], c, (size_t)(nacc < 64 ? nacc : 64) * sizeof *c);
	arrive(w, l, OP_WGMMA, 0);
	memcpy(c, w->wc[l], (size_t)(nacc < 64 ? nacc : 64) * sizeof *c);
}

typedef struct LaneArg {
	Warp *w;
	int l;
} LaneArg;

static void *lane_main(void *arg)
{
	const LaneArg *la = arg;
	Warp *w = la->w;
	while (sem_wait(&w->go[la->l]))
		;
	w->kern->fn(w->x, w->out, w->values, w->index, 0, w->N);
	w->done[la->l] = true;
	sem_post(&w->back);
	return NULL;
}

/* Runs one warp (ids set but tid.x, the lane) to its end, one lane at a
 * time, each until it ends or parks at an mma.  false with err where the
 * lanes cannot start, or on a deadlock (lanes waiting at an mma that the
 * others never reach): the lanes that started then stay blocked on w's
 * semaphores, so w must outlive the process (w->stuck); and, the lanes
 * ended, where they met at different collectives or passed mma.sp
 * metadata that the hardware refuses. */
static bool run_warp(Warp *w, const Ids *ids, char err[PTX_ERR_MAX])
{
	pthread_t th[LANES];
	LaneArg la[LANES];
	w->arrived = 0;
	w->gen = 0;
	w->mixed = false;
	w->badmeta = false;
	w->baddesc = false;
	memset(w->done, 0, sizeof w->done);
	memset(w->parked, 0, sizeof w->parked);
	int started = 0;
	for (int l = 0; l < LANES; l++) {
		la[l] = (LaneArg){w, l};
		if (pthread_create(&th[l], NULL, lane_main, &la[l]) != 0)
			break;
		started++;
	}
	if (started < LANES) {
		snprintf(err, PTX_ERR_MAX, "tensor-core emulation: cannot start the 32 lanes of a warp");
		w->stuck = true;
		return false;
	}
	for (;;) {
		int ran = 0, left = 0;
		for (int l = 0; l < LANES; l++) {
			if (w->done[l])
				continue;
			left++;
			if (w->parked[l] && w->parked_gen[l] == w->gen)
				continue; /* its mma has not completed */
			*ids->tid_x = l;
			w->turn = l;
			sem_post(&w->go[l]);
			while (sem_wait(&w->back))
				;
			ran++;
		}
		if (!left)
			break;
		if (!ran) {
			snprintf(err, PTX_ERR_MAX, "tensor-core emulation: lanes wait at an mma the others never reach");
			w->stuck = true;
			return false;
		}
	}
	for (int l = 0; l < LANES; l++)
		pthread_join(th[l], NULL);
	if (w->mixed) {
		snprintf(err, PTX_ERR_MAX, "tensor-core emulation: the lanes of a warp reached different collectives");
		return false;
	}
	if (w->badmeta) {
		snprintf(err, PTX_ERR_MAX, "tensor-core emulation: an mma.sp's metadata holds an invalid index pair");
		return false;
	}
	if (w->baddesc) {
		snprintf(err, PTX_ERR_MAX, "tensor-core emulation: a wgmma's descriptors read outside shared memory");
		return false;
	}
	return true;
}

/* Whether a thread reached as many barriers (n) as the block's first
 * (*first, -1 before it: set to n); false with err where not, as such a
 * block would hang on a GPU. */
static bool same_barriers(int64_t *first, int64_t n, char err[PTX_ERR_MAX])
{
	if (*first < 0)
		*first = n;
	if (n == *first)
		return true;
	snprintf(err, PTX_ERR_MAX,
	         "emulation: the threads of a block reach different numbers of barriers (%lld and %lld): a GPU would hang",
	         (long long)*first, (long long)n);
	return false;
}

bool ptx_emulate(const LowerKernel *k, const PtxSchedule *s, const void *x, const void *values,
                 const int32_t *const *index, float *c, PtxPlan *plan_out, double copied[2], char err[PTX_ERR_MAX])
{
	PtxPlan plan;
	ptx_plan(k, s, &plan);
	plan.emulate = true;
	if (plan_out)
		*plan_out = plan;
	if (((uintptr_t)x | (uintptr_t)values | (uintptr_t)c) % 16) {
		snprintf(err, PTX_ERR_MAX, "emulation: X, the values and C must be 16-byte aligned (as cuMemAlloc's are)");
		return false;
	}
	LowerHooks hooks = ptx_hooks(&plan);
	X86Kernel kern;
	char xerr[X86_ERR_MAX];
	if (!x86_jit_hooks(k, &hooks, NULL, NULL, &kern, xerr)) {
		snprintf(err, PTX_ERR_MAX, "emulation: %.400s", xerr);
		return false;
	}
	Ids ids = {x86_lookup(&kern, "patc_emu_tid_x"), x86_lookup(&kern, "patc_emu_tid_y"),
	           x86_lookup(&kern, "patc_emu_ctaid_x"), x86_lookup(&kern, "patc_emu_ctaid_y"),
	           x86_lookup(&kern, "patc_emu_ctaid_z")};
	const bool wg = plan.tc_wg;
	PtxEmuMma *mma = plan.tc && !wg ? x86_lookup(&kern, "patc_emu_mma") : NULL;
	PtxEmuLdm *ldm = plan.tc && plan.stage && !wg ? x86_lookup(&kern, "patc_emu_ldm") : NULL;
	PtxEmuMmaSp *mmasp = plan.tc_sp ? x86_lookup(&kern, "patc_emu_mmasp") : NULL;
	PtxEmuWgmma *wgmma = wg ? x86_lookup(&kern, "patc_emu_wgmma") : NULL;
	if (!ids.tid_x || !ids.tid_y || !ids.ctaid_x || !ids.ctaid_y || (!ids.ctaid_z && plan.nsplit > 1) ||
	    (plan.tc && !plan.tc_sp && !wg && !mma) || (plan.tc && plan.stage && !wg && !ldm) || (plan.tc_sp && !mmasp) ||
	    (wg && !wgmma)) {
		x86_kernel_free(&kern);
		snprintf(err, PTX_ERR_MAX, "emulation: the kernel lacks its thread and block ids");
		return false;
	}
	int64_t *bars = x86_lookup(&kern, "patc_emu_bars"); /* NULL: the kernel has no barrier */
	const int64_t nc = k->M * k->N;
	for (int64_t i = 0; i < nc; i++)
		c[i] = plan.zero ? 0.0f : NAN; /* as the launcher leaves it */
	unsigned grid[3], block[3];
	ptx_grid(&plan, k->N, grid, block);
	bool ok = true;
	if (!plan.tc) {
		for (unsigned cz = 0; ok && cz < grid[2]; cz++)
			for (unsigned cx = 0; ok && cx < grid[0]; cx++)
				for (unsigned cy = 0; ok && cy < grid[1]; cy++) {
					int64_t first = -1; /* the barriers of the block's first thread */
					for (unsigned ty = 0; ok && ty < block[1]; ty++)
						for (unsigned tx = 0; ok && tx < block[0]; tx++) {
							if (ids.ctaid_z)
								*ids.ctaid_z = (int32_t)cz;
							*ids.ctaid_x = (int32_t)cx, *ids.ctaid_y = (int32_t)cy;
							*ids.tid_x = (int32_t)tx, *ids.tid_y = (int32_t)ty;
							if (bars)
								bars[tx % 32] = 0;
							kern.fn(x, c, values, index, 0, k->N);
							if (bars)
								ok = same_barriers(&first, bars[tx % 32], err);
						}
				}
	} else {
		Warp *w = calloc(1, sizeof *w);
		if (!w) {
			x86_kernel_free(&kern);
			snprintf(err, PTX_ERR_MAX, "emulation: out of memory");
			return false;
		}
		*w = (Warp){.kern = &kern, .x = x, .values = values, .out = c, .index = index, .N = k->N};
		for (int l = 0; l < LANES; l++)
			sem_init(&w->go[l], 0, 0);
		sem_init(&w->back, 0, 0);
		pthread_mutex_lock(&one_at_a_time);
		if (mma)
			*mma = emu_mma;
		if (mmasp)
			*mmasp = emu_mma_sp;
		if (ldm)
			*ldm = emu_ldm;
		if (wgmma)
			*wgmma = emu_wgmma;
		warp = w;
		for (unsigned cz = 0; ok && cz < grid[2]; cz++)
			for (unsigned cx = 0; ok && cx < grid[0]; cx++)
				for (unsigned cy = 0; ok && cy < grid[1]; cy++) {
					int64_t first = -1; /* the barriers of the block's first lane */
					for (unsigned ty = 0; ok && ty < block[1]; ty++) {
						if (ids.ctaid_z)
							*ids.ctaid_z = (int32_t)cz;
						*ids.ctaid_x = (int32_t)cx, *ids.ctaid_y = (int32_t)cy, *ids.tid_y = (int32_t)ty;
						if (bars)
							memset(bars, 0, LANES * sizeof *bars);
						ok = run_warp(w, &ids, err);
						for (int l = 0; ok && bars && l < LANES; l++)
							ok = same_barriers(&first, bars[l], err);
					}
				}
		warp = NULL;
		pthread_mutex_unlock(&one_at_a_time);
		if (!ok && w->stuck) /* lanes stay blocked on w's semaphores and in the kernel's code: both are kept */
			return false;
		for (int l = 0; l < LANES; l++)
			sem_destroy(&w->go[l]);
		sem_destroy(&w->back);
		free(w);
	}
	const int64_t *bad = x86_lookup(&kern, "patc_emu_bad");
	if (ok && bad && bad[0]) {
		snprintf(err, PTX_ERR_MAX,
		         "emulation: an access of %lld bytes at an address not a multiple of %lld (a GPU faults on it, or "
		         "a wgmma reads elsewhere)",
		         (long long)bad[0], (long long)bad[0]);
		ok = false;
	} else if (ok && bad && bad[1]) {
		snprintf(err, PTX_ERR_MAX, "emulation: an access outside %s",
		         bad[1] == 1 ? "the block's shared memory" : "X");
		ok = false;
	}
	if (copied) { /* every thread (tensor cores: every warp) copied its block's stages */
		const int64_t *n = x86_lookup(&kern, "patc_emu_copied");
		const double per = plan.tc ? block[1] : (double)block[0] * block[1];
		for (int i = 0; i < 2; i++)
			copied[i] = n ? (double)n[i] / per : 0;
	}
	x86_kernel_free(&kern);
	return ok;
}
