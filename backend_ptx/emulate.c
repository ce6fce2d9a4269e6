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
 * blocks). */
#define _POSIX_C_SOURCE 200809L
#include "ptx.h"
#include "../backend_x86/x86.h"
#include "../weights/tensor.h"

#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Ids {
	int32_t *tid_x, *tid_y, *ctaid_x, *ctaid_y, *ctaid_z; /* ctaid_z: NULL where unread */
} Ids;

enum { LANES = 32, OP_MMA = 1, OP_LDM = 2, OP_MMASP = 3, OP_WGMMA = 4, OP_WGCOMMIT = 5, OP_WGWAIT = 6 };
enum { PARK_WARP = 1, PARK_BAR = 2 };
enum { MAX_REGIONS = 4, MULTI = -2 };

/* A wgmma of a warp's, issued and not yet complete: the group it is in
 * (the warp's committed groups + 1 when issued), its shared memory,
 * descriptors and info (PtxEmuWgmma), and each lane's accumulators. */
typedef struct WgPend {
	int64_t group;
	const uint8_t *smem;
	int64_t bytes;
	int64_t desc[2];
	int32_t info;
	float *c[LANES];
} WgPend;

/* A warp's collective: what its lanes pass and get back. */
typedef struct Warp {
	int arrived;
	unsigned gen; /* collectives carried out */
	int op[LANES]; /* the collective each lane has reached: OP_MMA, OP_LDM */
	bool mixed;    /* lanes reached different collectives */
	bool badmeta;  /* an mma.sp's metadata held a pair the hardware refuses */
	bool baddesc;  /* a wgmma's descriptors read outside shared memory, or asked for swizzling */
	int32_t a[LANES][4], b[LANES][4], e[LANES]; /* b: 2 words for mma, 4 for mma.sp; e: its metadata */
	float c[LANES][4];
	const uint16_t *row[LANES]; /* ldmatrix: the row each lane addresses */
	int32_t got[LANES][4];      /* ldmatrix: what each lane gets */
	float *wc[LANES];           /* wgmma: each lane's accumulators */
	int64_t wd[LANES][2];       /* wgmma: each lane's descriptors */
	int32_t winfo[LANES];       /* wgmma: each lane's info (PtxEmuWgmma) */
	const uint8_t *wsmem;       /* wgmma: the shared memory, wbytes long */
	int64_t wbytes;
	WgPend *wq;                 /* its wgmma in flight, nwq of wqcap, oldest first */
	int64_t nwq, wqcap;
	int64_t wgroups;            /* groups of wgmma it committed */
} Warp;

/* A cp.async in flight: read when issued (its source is never written),
 * written when it lands. */
typedef struct Copy {
	uint8_t *dst;
	int region; /* the shared buffer it writes, -1: none known */
	int bytes;
	int64_t off, group;
	uint8_t data[16];
} Copy;

/* An access of a thread, as counted (PtxEmuStats): the instruction (the
 * address its hook returns to), the thread's how-manyth access, the
 * offset in its shared buffer or global operand, and after sorting, the
 * how-manyth time the thread reached that instruction. */
typedef struct Acc {
	uintptr_t site;
	int64_t seq, at, occ;
	int32_t lane, bytes, kind;
} Acc;

/* A thread of the block. */
typedef struct Lane {
	sem_t go;            /* it may run */
	bool done;           /* it ended */
	int parked;          /* 0, or where it waits: PARK_WARP, PARK_BAR */
	unsigned parked_gen; /* its warp's or the block's gen when it parked */
	int64_t bars;        /* barriers it reached */
	int64_t groups;      /* groups of copies it committed */
	int32_t fences;      /* fence.proxy.async it passed */
	Copy *cp;            /* its copies in flight, ncp of cap */
	int64_t ncp, cap;
	jmp_buf out;         /* where it leaves the kernel on an abort */
	Acc *acc;            /* its accesses since the last barrier, nacc of acccap (counted) */
	int64_t nacc, acccap;
} Lane;

/* A shared buffer's shadow, a word a byte: the interval and thread of the
 * last write and the writer's fences before it, the interval and thread
 * of the last read (MULTI: several threads), the copies in flight to it
 * and the wgmma in flight that read it. */
typedef struct Region {
	const uint8_t *base;
	int64_t size;
	int32_t *w_iv, *w_th, *w_fc, *r_iv, *r_th, *pend, *wgrd;
} Region;
enum { SHADOWS = 7 };

typedef struct Block {
	int n, bx;         /* threads, and along x */
	Lane *lane;        /* n */
	Warp *warp;        /* n / 32, rounded up */
	sem_t back;        /* the running thread stopped: the scheduler may go on */
	int turn;          /* the thread that runs */
	int bar_arrived;   /* threads at the barrier */
	unsigned bar_gen;  /* barriers the block passed */
	int32_t iv, iv0;   /* intervals between barriers so far (all blocks), the block's first */
	Region region[MAX_REGIONS];
	int nregions;
	char race[PTX_ERR_MAX];  /* the block's first race, "" */
	char unwritten[PTX_ERR_MAX]; /* its first read of what no thread wrote (reported where no race is), "" */
	bool oom, quit, abort;   /* abort: a parked thread woken leaves the kernel (Lane.out) */
	PtxEmuStats *stats;      /* where accesses are counted, else NULL */
	double worst;            /* the largest cost / ideal of a request so far */
	Acc *tmp;                /* a warp's accesses, tmpcap */
	int64_t tmpcap;
	pthread_t *th;
	int started;
	/* the kernel and its arguments */
	const X86Kernel *kern;
	const void *x, *values;
	float *out;
	const int32_t *const *index;
	int64_t N;
} Block;

/* The block being emulated: one emulation at a time in a process. */
static Block *blk;
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

/* ---- shared memory's shadow ---- */

/* Thread t as "(tid.x, tid.y)". */
static const char *thread_name(const Block *b, int t, char buf[32])
{
	if (t == MULTI)
		return "another thread";
	snprintf(buf, 32, "thread (%d, %d)", t % b->bx, t / b->bx);
	return buf;
}

/* Records in msg, where empty, the fault of thread t, which `verb`s byte
 * i of r: how that goes wrong, after the name of thread u (a thread, or
 * MULTI; -1: none). */
static void fault(const Block *b, char msg[PTX_ERR_MAX], const Region *r, int64_t i, int t, const char *verb, int u,
                  const char *how)
{
	if (msg[0])
		return;
	char tn[32], un[32];
	snprintf(msg, PTX_ERR_MAX, "emulation: %s %s byte %lld of a %lld-byte shared buffer%s%s%s",
	         thread_name(b, t, tn), verb, (long long)i, (long long)r->size, u != -1 ? " that " : "",
	         u != -1 ? thread_name(b, u, un) : "", how);
}

/* The shadow of the buffer at base (size bytes), made where new; -1 and
 * b->oom where memory or the slots run out (a kernel has 2 buffers at most). */
static int region_of(Block *b, const void *base, int64_t size)
{
	for (int i = 0; i < b->nregions; i++)
		if (b->region[i].base == base)
			return i;
	if (b->nregions == MAX_REGIONS || size <= 0) {
		b->oom = true;
		return -1;
	}
	Region *r = &b->region[b->nregions];
	int32_t **arr[SHADOWS] = {&r->w_iv, &r->w_th, &r->w_fc, &r->r_iv, &r->r_th, &r->pend, &r->wgrd};
	for (int a = 0; a < SHADOWS; a++)
		if (!(*arr[a] = malloc((size_t)size * sizeof(int32_t)))) {
			for (int j = 0; j < a; j++)
				free(*arr[j]);
			b->oom = true;
			return -1;
		}
	for (int64_t i = 0; i < size; i++)
		r->w_iv[i] = r->r_iv[i] = -1, r->pend[i] = r->wgrd[i] = 0;
	r->base = base, r->size = size;
	return b->nregions++;
}

/* Thread t reads bytes off .. off + bytes - 1 of r; async: through the
 * tensor cores (wgmma), which see a write only after its writer's
 * fence.proxy.async. */
static void sh_read(Block *b, Region *r, int64_t off, int64_t bytes, int t, bool async)
{
	for (int64_t i = off; i < off + bytes && i < r->size; i++) {
		if (async && r->w_iv[i] >= b->iv0 && b->lane[r->w_th[i]].fences <= r->w_fc[i])
			fault(b, b->race, r, i, t, "passes to a wgmma", r->w_th[i],
			      " wrote with no fence.proxy.async after (the tensor cores may read it stale)");
		if (r->pend[i])
			fault(b, b->race, r, i, t, "reads", -1,
			      " while a cp.async to it is in flight (before its wait_group): a race");
		else if (r->w_iv[i] < b->iv0)
			fault(b, b->unwritten, r, i, t, "reads", -1, ", which no thread of its block wrote");
		else if (r->w_iv[i] == b->iv && r->w_th[i] != t)
			fault(b, b->race, r, i, t, "reads", r->w_th[i], " writes between the same two barriers: a race");
		r->r_th[i] = r->r_iv[i] == b->iv && r->r_th[i] != t ? MULTI : t;
		r->r_iv[i] = b->iv;
	}
}

enum { WRITE, ISSUE, LAND };

/* Thread t writes bytes off .. off + bytes - 1 of r: a store (WRITE), or
 * a cp.async, issued (ISSUE: in flight until it lands) or landing (LAND). */
static void sh_write(Block *b, Region *r, int64_t off, int64_t bytes, int t, int how)
{
	const char *verb = how == WRITE ? "writes" : "copies to";
	for (int64_t i = off; i < off + bytes && i < r->size; i++) {
		if (how == LAND)
			r->pend[i]--;
		if (r->r_iv[i] == b->iv && r->r_th[i] != t)
			fault(b, b->race, r, i, t, verb, r->r_th[i], " reads between the same two barriers: a race");
		else if (r->w_iv[i] == b->iv && r->w_th[i] != t)
			fault(b, b->race, r, i, t, verb, r->w_th[i], " also writes between the same two barriers: a race");
		else if (how != LAND && r->pend[i])
			fault(b, b->race, r, i, t, verb, -1, " while a cp.async to it is in flight: a race");
		else if (how != LAND && r->wgrd[i])
			fault(b, b->race, r, i, t, verb, -1,
			      " while a wgmma that reads it is in flight (before the wgmma.wait_group that completes it): a race");
		if (how == ISSUE)
			r->pend[i]++;
		else
			r->w_iv[i] = b->iv, r->w_th[i] = t, r->w_fc[i] = b->lane[t].fences;
	}
}

/* Lands thread t's copies of groups up to `upto`. */
static void land(Block *b, int t, int64_t upto)
{
	Lane *ln = &b->lane[t];
	int keep = 0;
	for (int i = 0; i < ln->ncp; i++) {
		Copy *cp = &ln->cp[i];
		if (cp->group > upto) {
			ln->cp[keep++] = *cp;
			continue;
		}
		memcpy(cp->dst, cp->data, (size_t)cp->bytes);
		if (cp->region >= 0)
			sh_write(b, &b->region[cp->region], cp->off, cp->bytes, t, LAND);
	}
	ln->ncp = keep;
}

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

/* The byte offset in shared memory of element (row or column i, k j) of
 * a wgmma operand through its descriptor's start address, leading and
 * stride byte offsets, M- or N-major (mn) or K-major: see wg_offsets. */
static int64_t wg_at(const int64_t d[3], int mn, int i, int j)
{
	return d[0] + (mn ? 2 * (i % 8) + (i / 8) * d[2] + 16 * (j % 8) + (j / 8) * d[1]
	                  : 16 * (i % 8) + (i / 8) * d[2] + 2 * (j % 8) + (j / 8) * d[1]);
}

enum { WG_READS = 16 * 16 + 16 * 128 };

static void *room(Block *b, void *arr, int64_t n, int64_t *cap, size_t size);

/* The offsets in shared memory of what wgmma.mma_async.m64nNk16 p reads
 * for warp v of its warpgroup (rows 16 v .. 16 v + 15 of D = A B + C): A's
 * 16 x 16, row by row, then B's 16 x N, k by k, into at; how many, or -1
 * where p asks what the hardware refuses or reads past shared memory.
 * The descriptors hold the start address, the leading and the stride byte
 * offsets, each in 16-byte units, in bits 0-13, 16-29 and 32-45
 * (swizzling, bits 62-63, and the base offset, bits 49-51, must be 0); the
 * PTX ISA's canonical layouts without swizzling, for 16-bit elements (8
 * to 16 bytes): K-major ((8,m),(8,2)):((8,SBO),(1,LBO)), element (row i,
 * k j) at 2 (i % 8) 8 + (i / 8) SBO + 2 (j % 8) + (j / 8) LBO bytes, for A
 * without imm-trans-a and B without imm-trans-b; M- or N-major
 * ((8,1,m),(8,k)):((1,8,SBO),(8,LBO)), (row or column i, k j) at 2 (i % 8)
 * + (i / 8) SBO + 2 (j % 8) 8 + (j / 8) LBO.  info as PtxEmuWgmma's:
 * N in bits 0-8, imm-trans-b bit 9, v bits 10-11, f16 bit 12, imm-trans-a
 * bit 13. */
static int wg_offsets(const WgPend *p, int64_t at[WG_READS])
{
	const int32_t info = p->info;
	const int n = info & 511, trans = info >> 9 & 1, v = info >> 10 & 3, trans_a = info >> 13 & 1;
	if (n < 8 || n > 128 || n % 8)
		return -1;
	int64_t d[2][3];
	for (int o = 0; o < 2; o++) {
		const uint64_t desc = (uint64_t)p->desc[o];
		if ((desc >> 62) != 0 || (desc >> 49 & 7) != 0)
			return -1;
		d[o][0] = (int64_t)(desc & 0x3FFF) << 4;
		d[o][1] = (int64_t)(desc >> 16 & 0x3FFF) << 4;
		d[o][2] = (int64_t)(desc >> 32 & 0x3FFF) << 4;
	}
	int k = 0;
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++)
			at[k++] = wg_at(d[0], trans_a, 16 * v + i, j);
	for (int j = 0; j < 16; j++)
		for (int col = 0; col < n; col++)
			at[k++] = wg_at(d[1], trans, col, j);
	for (int i = 0; i < k; i++)
		if (at[i] < 0 || at[i] + 2 > p->bytes)
			return -1;
	return k;
}

/* The warp's wgmma.mma_async, from what its lanes passed: queued until
 * a wgmma.wait_group completes it (wg_complete), what it reads checked now
 * (a copy in flight to it, a write not fenced for the tensor cores: the
 * warp's first thread, reader, reads it) and marked as read by a wgmma in
 * flight, so that a write to it before then is a race. */
static void warp_wgmma(Block *b, Warp *w, int reader)
{
	const int32_t info = w->winfo[0];
	for (int l = 0; l < LANES; l++)
		w->mixed |= w->winfo[l] != info || w->wd[l][0] != w->wd[0][0] || w->wd[l][1] != w->wd[0][1];
	WgPend p = {.group = w->wgroups + 1,
	            .smem = w->wsmem,
	            .bytes = w->wbytes,
	            .desc = {w->wd[0][0], w->wd[0][1]},
	            .info = info};
	memcpy(p.c, w->wc, sizeof p.c);
	int64_t at[WG_READS];
	const int n = wg_offsets(&p, at);
	if (n < 0) {
		w->baddesc = true;
		return;
	}
	WgPend *q = room(b, w->wq, w->nwq, &w->wqcap, sizeof *q);
	if (!q)
		return;
	w->wq = q; /* (room may have moved it) */
	const int ri = region_of(b, p.smem, p.bytes);
	if (ri < 0)
		return;
	w->wq[w->nwq++] = p;
	Region *r = &b->region[ri];
	for (int i = 0; i < n; i++) {
		sh_read(b, r, at[i], 2, reader, true);
		r->wgrd[at[i]]++, r->wgrd[at[i] + 1]++;
	}
}

/* Completes the warp's wgmma p (D = A B + C into its lanes'
 * accumulators: lane (g, t) holds for each 8-column tile i, in 4i .. 4i +
 * 3, rows g and g + 8 of the warp's, columns 8i + 2t, + 1), reading
 * shared memory now (warp_wgmma made sure no one wrote it since), or,
 * with !run, drops it. */
static void wg_complete(Block *b, const WgPend *p, bool run)
{
	int64_t at[WG_READS];
	const int n = wg_offsets(p, at), cols = p->info & 511, f16 = p->info >> 12 & 1;
	Region *r = &b->region[region_of(b, p->smem, p->bytes)]; /* (found when it was queued) */
	for (int i = 0; i < n; i++)
		r->wgrd[at[i]]--, r->wgrd[at[i] + 1]--;
	if (!run)
		return;
	float v[WG_READS];
	for (int i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, p->smem + at[i], 2);
		v[i] = half_to_f32(h, f16);
	}
	const float *A = v, *B = v + 16 * 16;
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < cols / 2; e++) {
			const int i = g + (e & 2 ? 8 : 0), col = 8 * (e / 4) + 2 * t + (e & 1);
			float d = p->c[l][e];
			for (int j = 0; j < 16; j++)
				d += A[i * 16 + j] * B[j * cols + col];
			p->c[l][e] = d;
		}
	}
}

/* wgmma.wait_group pending for the warp: its wgmma of the groups but the
 * last `pending` it committed complete, in order. */
static void warp_wgwait(Block *b, Warp *w, int32_t pending)
{
	int64_t keep = 0;
	for (int64_t i = 0; i < w->nwq; i++) {
		if (w->wq[i].group <= w->wgroups - pending)
			wg_complete(b, &w->wq[i], true);
		else
			w->wq[keep++] = w->wq[i];
	}
	w->nwq = keep;
}

/* Thread t waits (kind PARK_WARP or PARK_BAR, at gen) until the
 * scheduler runs it again. */
static void park(Block *b, int t, int kind, unsigned gen)
{
	Lane *ln = &b->lane[t];
	ln->parked = kind, ln->parked_gen = gen;
	sem_post(&b->back);
	while (sem_wait(&ln->go))
		;
	ln->parked = 0;
	if (b->abort) /* the block waits forever: out of the kernel (its frames need no unwinding) */
		longjmp(ln->out, 1);
}

/* The running thread t has reached collective op (its operands recorded):
 * the last of its warp's 32 to arrive carries it out for the warp, the
 * others park until then. */
static void arrive(Block *b, int t, int op, int32_t flag)
{
	Warp *w = &b->warp[t / LANES];
	w->op[t % LANES] = op;
	if (++w->arrived == LANES) {
		for (int i = 0; i < LANES; i++)
			w->mixed |= w->op[i] != op;
		if (op == OP_MMA)
			warp_mma(w, flag);
		else if (op == OP_MMASP)
			warp_mma_sp(w, flag);
		else if (op == OP_WGMMA)
			warp_wgmma(b, w, t / LANES * LANES);
		else if (op == OP_WGCOMMIT)
			w->wgroups++;
		else if (op == OP_WGWAIT)
			warp_wgwait(b, w, flag);
		else
			warp_ldm(w, flag);
		w->arrived = 0;
		w->gen++;
	} else {
		park(b, t, PARK_WARP, w->gen);
	}
}

/* ---- the accesses counted, per warp-wide request ---- */

const char *const ptx_acc_names[PTX_ACC_KINDS] = {"shared loads",
                                                  "shared stores",
                                                  "copies into shared memory",
                                                  "copies' reads of global memory",
                                                  "loads of global memory",
                                                  "stores to global memory"};

/* arr (n of *cap elements of `size` bytes), moved where needed to have
 * room for one more; NULL and b->oom where memory runs out (arr kept). */
static void *room(Block *b, void *arr, int64_t n, int64_t *cap, size_t size)
{
	if (n < *cap)
		return arr;
	const int64_t more = *cap ? 2 * *cap : 64;
	void *p = realloc(arr, (size_t)more * size);
	if (!p) {
		b->oom = true;
		return NULL;
	}
	*cap = more;
	return p;
}

/* Notes thread t's access (kind PTX_ACC_*) at `at` at the instruction
 * returning to site. */
static void note_access(Block *b, int t, uintptr_t site, int kind, int64_t at, int bytes)
{
	Lane *ln = &b->lane[t];
	Acc *acc = room(b, ln->acc, ln->nacc, &ln->acccap, sizeof *acc);
	if (!acc)
		return;
	ln->acc = acc;
	ln->acc[ln->nacc] = (Acc){site, ln->nacc, at, 0, t % LANES, bytes, kind};
	ln->nacc++;
}

static int cmp_i64(const void *a, const void *b)
{
	const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* By instruction, then thread, then order. */
static int by_lane(const void *a, const void *b)
{
	const Acc *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->lane != y->lane)
		return x->lane - y->lane;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* By instruction, then the how-manyth time, then thread. */
static int by_request(const void *a, const void *b)
{
	const Acc *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->occ != y->occ)
		return (x->occ > y->occ) - (x->occ < y->occ);
	return x->lane - y->lane;
}

/* The distinct values of v[0 .. n-1], sorted into its front. */
static int uniq(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_i64);
	int u = 0;
	for (int i = 0; i < n; i++)
		if (!u || v[i] != v[u - 1])
			v[u++] = v[i];
	return u;
}

/* One warp-wide request, the n (<= 32) accesses of a, into b->stats. */
static void count_request(Block *b, const Acc *a, int n)
{
	const int kind = a[0].kind, bytes = a[0].bytes;
	int64_t cost = 0, ideal = 0, v[4 * LANES];
	if (kind >= PTX_ACC_SRC) { /* global memory: sectors touched; the fewest that hold the bytes */
		int nv = 0;
		for (int i = 0; i < n; i++)
			for (int64_t s = a[i].at / 32; s <= (a[i].at + a[i].bytes - 1) / 32 && nv < 4 * LANES; s++)
				v[nv++] = s;
		cost = uniq(v, nv);
		int64_t lo[LANES], len = 0, end = INT64_MIN;
		for (int i = 0; i < n; i++)
			lo[i] = a[i].at;
		qsort(lo, (size_t)n, sizeof *lo, cmp_i64); /* (one size a request: the union's length) */
		for (int i = 0; i < n; i++) {
			const int64_t s = lo[i] > end ? lo[i] : end, e = lo[i] + bytes;
			len += e > s ? e - s : 0;
			end = e > end ? e : end;
		}
		ideal = (len + 31) / 32;
	} else { /* wavefronts: per group of lanes served together, the most distinct words of a bank */
		const int per = bytes > 8 ? 8 : bytes > 4 ? 16 : 32;
		for (int g = 0; g < LANES / per; g++) {
			int nv = 0;
			for (int i = 0; i < n; i++)
				if (a[i].lane / per == g)
					for (int64_t w = a[i].at / 4; w <= (a[i].at + a[i].bytes - 1) / 4 && nv < 4 * LANES; w++)
						v[nv++] = w;
			if (!nv)
				continue;
			const int u = uniq(v, nv);
			int bank[32] = {0}, most = 0;
			for (int i = 0; i < u; i++) {
				const int k = (int)(v[i] % 32);
				most = ++bank[k] > most ? bank[k] : most;
			}
			cost += most;
			ideal += (u + 31) / 32;
		}
	}
	PtxAccCount *cnt = &b->stats->acc[kind];
	cnt->requests++, cnt->cost += cost, cnt->ideal += ideal;
	const double over = (double)cost / (double)(ideal ? ideal : 1);
	const bool global = kind >= PTX_ACC_SRC;
	if (cost > ideal && over > b->worst) {
		b->worst = over;
		char at[160] = "";
		for (int i = 0, len = 0; i < n && i < 8 && len < (int)sizeof at - 24; i++)
			len += snprintf(at + len, sizeof at - (size_t)len, "%s%lld", i ? ", " : "", (long long)a[i].at);
		snprintf(b->stats->worst, sizeof b->stats->worst,
		         "%s of %d bytes by %d lanes of a warp take %lld %s where %lld would do (at bytes %s%s of %s)",
		         ptx_acc_names[kind], bytes, n, (long long)cost, global ? "sectors" : "wavefronts", (long long)ideal,
		         at, n > 8 ? ", ..." : "", global ? "the operand" : "the buffer");
	}
}

/* Counts the requests of the accesses the threads noted since the last
 * barrier, and forgets them. */
static void count_interval(Block *b)
{
	for (int w = 0; w < (b->n + LANES - 1) / LANES; w++) {
		int64_t n = 0;
		for (int t = w * LANES; t < b->n && t < (w + 1) * LANES; t++)
			n += b->lane[t].nacc;
		if (!n)
			continue;
		if (n > b->tmpcap) {
			Acc *more = realloc(b->tmp, (size_t)n * sizeof *more);
			if (!more) {
				b->oom = true;
				break;
			}
			b->tmp = more, b->tmpcap = n;
		}
		Acc *a = b->tmp;
		n = 0;
		for (int t = w * LANES; t < b->n && t < (w + 1) * LANES; t++) {
			memcpy(a + n, b->lane[t].acc, (size_t)b->lane[t].nacc * sizeof *a);
			n += b->lane[t].nacc;
		}
		qsort(a, (size_t)n, sizeof *a, by_lane);
		for (int64_t i = 0; i < n; i++)
			a[i].occ = i && a[i].site == a[i - 1].site && a[i].lane == a[i - 1].lane ? a[i - 1].occ + 1 : 0;
		qsort(a, (size_t)n, sizeof *a, by_request);
		for (int64_t i = 0, j; i < n; i = j) {
			for (j = i + 1; j < n && a[j].site == a[i].site && a[j].occ == a[i].occ; j++)
				;
			count_request(b, a + i, (int)(j - i));
		}
	}
	for (int t = 0; t < b->n; t++)
		b->lane[t].nacc = 0;
}

/* ---- what the kernel calls (PtxEmu*), from the running thread ---- */

static void emu_mma(const int32_t *a, const int32_t *b, float *c, int32_t f16)
{
	const int t = blk->turn, l = t % LANES;
	Warp *w = &blk->warp[t / LANES];
	memcpy(w->a[l], a, sizeof w->a[l]);
	memcpy(w->b[l], b, 2 * sizeof *b);
	memcpy(w->c[l], c, sizeof w->c[l]);
	arrive(blk, t, OP_MMA, f16);
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
	arrive(blk, t, OP_MMASP, f16);
	memcpy(c, w->c[l], sizeof w->c[l]);
}

static void emu_ldm(const uint16_t *row, int32_t *out, int32_t trans)
{
	const int t = blk->turn, l = t % LANES;
	Warp *w = &blk->warp[t / LANES];
	w->row[l] = row;
	arrive(blk, t, OP_LDM, trans);
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
	arrive(blk, t, OP_WGMMA, 0);
}

static void emu_wgcommit(void) { arrive(blk, blk->turn, OP_WGCOMMIT, 0); }

static void emu_wgwait(int32_t pending) { arrive(blk, blk->turn, OP_WGWAIT, pending); }

/* bar.sync 0: the last of the block's threads to arrive goes on, the
 * others park until then. */
static void emu_sync(void)
{
	Block *b = blk;
	const int t = b->turn;
	b->lane[t].bars++;
	if (++b->bar_arrived == b->n) {
		if (b->stats)
			count_interval(b);
		b->bar_arrived = 0;
		b->bar_gen++;
		b->iv++;
	} else {
		park(b, t, PARK_BAR, b->bar_gen);
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
			note_access(b, t, site, PTX_ACC_CP, (const uint8_t *)dst - (const uint8_t *)base, bytes);
		if (ok)
			note_access(b, t, site, PTX_ACC_SRC, (int64_t)((uintptr_t)src - (uintptr_t)from), bytes);
	}
	Copy *cps = room(b, ln->cp, ln->ncp, &ln->cap, sizeof *cps);
	if (!cps)
		return;
	ln->cp = cps;
	Copy *cp = &ln->cp[ln->ncp++];
	cp->dst = dst, cp->bytes = bytes > 16 ? 16 : bytes, cp->group = ln->groups + 1;
	if (ok)
		memcpy(cp->data, src, (size_t)cp->bytes);
	else
		memset(cp->data, 0, sizeof cp->data);
	cp->region = base ? region_of(b, base, size) : -1;
	cp->off = 0;
	if (cp->region >= 0) {
		cp->off = (const uint8_t *)dst - (const uint8_t *)base;
		sh_write(b, &b->region[cp->region], cp->off, cp->bytes, t, ISSUE);
	}
}

static void emu_commit(void) { blk->lane[blk->turn].groups++; }

static void emu_fence(void) { blk->lane[blk->turn].fences++; }

static void emu_wait(int32_t pending) { land(blk, blk->turn, blk->lane[blk->turn].groups - pending); }

static void emu_touch(const void *p, int64_t bytes, int32_t write, const void *base, int64_t size)
{
	Block *b = blk;
	const int ri = region_of(b, base, size);
	if (ri < 0)
		return;
	const int64_t off = (const uint8_t *)p - (const uint8_t *)base;
	if (b->stats)
		note_access(b, b->turn, (uintptr_t)__builtin_return_address(0), write ? PTX_ACC_STORE : PTX_ACC_LOAD, off,
		            (int)bytes);
	if (write)
		sh_write(b, &b->region[ri], off, bytes, b->turn, WRITE);
	else
		sh_read(b, &b->region[ri], off, bytes, b->turn, false);
}

static void emu_global_access(const void *p, int64_t bytes, int32_t write, const void *from)
{
	Block *b = blk;
	if (b->stats)
		note_access(b, b->turn, (uintptr_t)__builtin_return_address(0), write ? PTX_ACC_GSTORE : PTX_ACC_GLOAD,
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
			b->kern->fn(b->x, b->out, b->values, b->index, 0, b->N);
			land(b, la->t, INT64_MAX); /* what it left in flight lands anyway */
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
		count_interval(b);
	bool inflight = false; /* (their accumulators are gone with the threads) */
	for (int i = 0; i < (b->n + LANES - 1) / LANES; i++) {
		Warp *w = &b->warp[i];
		inflight |= w->nwq > 0;
		for (int64_t j = 0; j < w->nwq; j++)
			wg_complete(b, &w->wq[j], false);
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

bool ptx_emulate(const LowerKernel *k, const PtxSchedule *s, const char *sm, const void *x, const void *values,
                 const int32_t *const *index, float *c, PtxPlan *plan_out, PtxEmuStats *stats, char err[PTX_ERR_MAX])
{
	if (stats) {
		const bool count = stats->count_access;
		*stats = (PtxEmuStats){.count_access = count};
	}
	PtxPlan plan;
	ptx_plan_target(k, s, sm, &plan);
	plan.emulate = true;
	plan.emu_count = stats && stats->count_access;
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
	if (!ids.tid_x || !ids.tid_y || !ids.ctaid_x || !ids.ctaid_y || (!ids.ctaid_z && plan.nsplit > 1)) {
		x86_kernel_free(&kern);
		snprintf(err, PTX_ERR_MAX, "emulation: the kernel lacks its thread and block ids");
		return false;
	}
	unsigned grid[3], block[3];
	ptx_grid(&plan, k->N, grid, block);
	bool ok = true;
	/* Kernels that sum split parts through the module's workspace run
	 * twice, C poisoned again, the counts taken from the last: the first
	 * launch must leave the workspace's counters as it found them, and it
	 * reads an X of NaN, so that a part that sums before the others have
	 * stored their slices finds NaN there. */
	int64_t *copied = x86_lookup(&kern, "patc_emu_copied");
	float *nan_x = NULL;
	if (plan.wsum) {
		const size_t nx = (size_t)(k->K * k->N);
		nan_x = aligned_alloc(16, (nx * sizeof *nan_x + 15) / 16 * 16);
		if (!nan_x) {
			x86_kernel_free(&kern);
			snprintf(err, PTX_ERR_MAX, "emulation: out of memory");
			return false;
		}
		for (size_t i = 0; i < nx; i++)
			nan_x[i] = NAN;
	}
	const void *x_given = x;
	for (int launch = 0; ok && launch < (plan.wsum ? 2 : 1); launch++) {
		x = plan.wsum && launch == 0 ? nan_x : x_given;
		if (stats)
			*stats = (PtxEmuStats){.count_access = stats->count_access};
		if (copied)
			copied[0] = copied[1] = 0;
		const int64_t nc = k->M * k->N;
		for (int64_t i = 0; i < nc; i++)
			c[i] = plan.zero ? 0.0f : NAN; /* as the launcher leaves it */
		if (!plan.tc && !plan.stage && !plan.emu_count) { /* no shared memory, nothing counted: thread after thread */
			/* the split walk's parts from the second on, the first last: on a
			 * GPU any part may finish last (PtxPlan.wsum) */
			for (unsigned cz = 0; cz < grid[2]; cz++)
				for (unsigned cx = 0; cx < grid[0]; cx++)
					for (unsigned cy = 0; cy < grid[1]; cy++)
						for (unsigned ty = 0; ty < block[1]; ty++)
							for (unsigned tx = 0; tx < block[0]; tx++) {
								if (ids.ctaid_z)
									*ids.ctaid_z = (int32_t)((cz + 1) % grid[2]);
								*ids.ctaid_x = (int32_t)cx, *ids.ctaid_y = (int32_t)cy;
								*ids.tid_x = (int32_t)tx, *ids.tid_y = (int32_t)ty;
								kern.fn(x, c, values, index, 0, k->N);
							}
		} else {
			LaneArg *la = NULL;
			Block *b = block_new((int)(block[0] * block[1]), (int)block[0], &la, err);
			if (!b || b->started < b->n) {
				if (b)
					block_free(b, la);
				x86_kernel_free(&kern);
				free(nan_x);
				return false;
			}
			b->kern = &kern, b->x = x, b->values = values, b->out = c, b->index = index, b->N = k->N;
			b->stats = stats && stats->count_access ? stats : NULL;
			pthread_mutex_lock(&one_at_a_time);
			set_hook(&kern, "patc_emu_mma", (AnyFn)emu_mma);
			set_hook(&kern, "patc_emu_mmasp", (AnyFn)emu_mma_sp);
			set_hook(&kern, "patc_emu_ldm", (AnyFn)emu_ldm);
			set_hook(&kern, "patc_emu_wgmma", (AnyFn)emu_wgmma);
			set_hook(&kern, "patc_emu_wgcommit", (AnyFn)emu_wgcommit);
			set_hook(&kern, "patc_emu_wgwait", (AnyFn)emu_wgwait);
			set_hook(&kern, "patc_emu_sync", (AnyFn)emu_sync);
			set_hook(&kern, "patc_emu_cp", (AnyFn)emu_cp);
			set_hook(&kern, "patc_emu_commit", (AnyFn)emu_commit);
			set_hook(&kern, "patc_emu_fence", (AnyFn)emu_fence);
			set_hook(&kern, "patc_emu_wait", (AnyFn)emu_wait);
			set_hook(&kern, "patc_emu_touch", (AnyFn)emu_touch);
			set_hook(&kern, "patc_emu_global", (AnyFn)emu_global_access);
			blk = b;
			for (unsigned cz = 0; ok && cz < grid[2]; cz++)
				for (unsigned cx = 0; ok && cx < grid[0]; cx++)
					for (unsigned cy = 0; ok && cy < grid[1]; cy++) {
						if (ids.ctaid_z) /* (the parts in the order above) */
							*ids.ctaid_z = (int32_t)((cz + 1) % grid[2]);
						*ids.ctaid_x = (int32_t)cx, *ids.ctaid_y = (int32_t)cy;
						ok = run_block(b, &ids, err);
					}
			blk = NULL;
			pthread_mutex_unlock(&one_at_a_time);
			block_free(b, la);
		}
	}
	free(nan_x);
	x = x_given;
	const int64_t *bad = x86_lookup(&kern, "patc_emu_bad"); /* (the cause, where a race followed) */
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
	if (stats) { /* the bytes every thread's copies read */
		const int64_t *n = x86_lookup(&kern, "patc_emu_copied");
		for (int i = 0; i < 2; i++)
			stats->copied[i] = n ? (double)n[i] : 0;
	}
	x86_kernel_free(&kern);
	return ok;
}
