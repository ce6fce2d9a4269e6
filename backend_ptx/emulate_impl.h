/* SPDX-License-Identifier: MIT */
/* emulate_impl.h - what the GPU emulator's files share inside
 * backend_ptx/ (see emulate.c): the emulated block, its threads (lanes),
 * warps and shared buffers, and the functions of emulate_shadow.c (shared
 * memory's shadow and the copies in flight), emulate_warp.c (a warp's
 * collectives: mma, mma.sp, ldmatrix, wgmma; a thread parked until they or
 * a barrier are done) and emulate_count.c (the accesses counted per
 * warp-wide request), which emulate.c calls.  The calls go one way:
 * emulate.c calls the other three, emulate_warp.c calls emulate_shadow.c
 * and emulate_count.c, and those two call none of them. */
#ifndef PATC_EMULATE_IMPL_H
#define PATC_EMULATE_IMPL_H

#include "ptx.h"
#include "../backend_x86/x86.h"

#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>

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
	const float *bias;
	int64_t N;
} Block;

/* ---- shared memory's shadow (emulate_shadow.c) ---- */

/* The shadow of the buffer at base (size bytes), made where new; -1 and
 * b->oom where memory or the slots run out (a kernel has 2 buffers at most). */
int emu_region_of(Block *b, const void *base, int64_t size);
/* Thread t reads bytes off .. off + bytes - 1 of r; async: through the
 * tensor cores (wgmma), which see a write only after its writer's
 * fence.proxy.async. */
void emu_sh_read(Block *b, Region *r, int64_t off, int64_t bytes, int t, bool async);
enum { WRITE, ISSUE, LAND };
/* Thread t writes bytes off .. off + bytes - 1 of r: a store (WRITE), or
 * a cp.async, issued (ISSUE: in flight until it lands) or landing (LAND). */
void emu_sh_write(Block *b, Region *r, int64_t off, int64_t bytes, int t, int how);
/* Lands thread t's copies of groups up to `upto`. */
void emu_land(Block *b, int t, int64_t upto);

/* ---- a warp's collectives (emulate_warp.c) ---- */

/* Thread t waits (kind PARK_WARP or PARK_BAR, at gen) until the
 * scheduler runs it again. */
void emu_park(Block *b, int t, int kind, unsigned gen);
/* The running thread t has reached collective op (its operands recorded):
 * the last of its warp's 32 to arrive carries it out for the warp, the
 * others park until then. */
void emu_arrive(Block *b, int t, int op, int32_t flag);
/* Completes the warp's wgmma p (into its lanes' accumulators), or, with
 * !run, drops it. */
void emu_wg_complete(Block *b, const WgPend *p, bool run);

/* ---- the accesses counted (emulate_count.c) ---- */

/* arr (n of *cap elements of `size` bytes), moved where needed to have
 * room for one more; NULL and b->oom where memory runs out (arr kept). */
void *emu_room(Block *b, void *arr, int64_t n, int64_t *cap, size_t size);
/* Notes thread t's access (kind PTX_ACC_*) at `at` at the instruction
 * returning to site. */
void emu_note_access(Block *b, int t, uintptr_t site, int kind, int64_t at, int bytes);
/* Counts the requests of the accesses the threads noted since the last
 * barrier, and forgets them. */
void emu_count_interval(Block *b);

#endif
