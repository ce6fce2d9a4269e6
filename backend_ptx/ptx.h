/* SPDX-License-Identifier: MIT */
/* ptx.h - the NVPTX backend: kernels lowered by lower/ with a GPU mapping,
 * optimised at O3 for an sm_XX target and printed as PTX.
 *
 * The mapping (fp32 on CUDA cores).  The loops of the nest up to the
 * last one that carries m are spread over thread blocks, one storage
 * digit each, so that every thread has one row of C (or a group of R
 * rows, below) for its whole life; the loops after them run along k only
 * and each thread walks them itself, accumulating in registers.  When the
 * last loop carrying m is a dense m loop and only dense loops follow it
 * (blocks, tile_v, channel_in), a thread takes R of its rows at once: the
 * rows keep the same k, so each X element it loads feeds R FMAs.  Threads
 * run along the token columns (coalesced in layout kn), V columns each,
 * blockDim.x apart.  When a loop spread over blocks carries k (tile_h,
 * joins), several threads add to one row of C: they add with atomics into
 * a zeroed C; otherwise every element of C has one owner, which stores it
 * once.  When the grid would still be too small to fill the GPU, the
 * outermost loop a thread walks is split over blockIdx.z (split-K) and the
 * parts add with atomics.  Where the rows of a block keep the same k (row
 * groups), the block stages the X rows of the next few kept k in shared
 * memory with cp.async while it computes on the current ones (two
 * buffers; layout kn in 16-byte pieces, layout nk element by element down
 * X's columns), and threads read X from there; where they walk the
 * weights along k 4 at a time and their row group inside the staged loop
 * (blocks), or along the rows of an innermost group (tile_v), the block's
 * weights of those k are staged beside X (wstage).
 *
 * The kernel has the signature of lower.h (X, C, values, index, n0, n1),
 * with device pointers (index: a device array of device pointers); it is
 * launched with ptx_grid's grid and block.
 */
#ifndef PATC_PTX_H
#define PATC_PTX_H

#include "../lower/lower.h"
#include "../prune/prune.h"

#include <stdbool.h>
#include <stdint.h>

enum { PTX_ERR_MAX = 512 };

/* The largest workspace of split parts a kernel keeps in its module, and
 * the most parts it sums (each an unrolled load a thread's element), for
 * PtxPlan.wsum. */
#define PTX_WSUM_BYTES (64.0 * 1024 * 1024)
enum { PTX_WSUM_PARTS = 16 };

/* A kernel schedule: bx threads along the columns (16, a warp's two
 * halves taking consecutive row sets, or a multiple of 32), by row groups
 * per block, v columns per thread, r rows per thread (the largest divisor
 * of the row loop's length up to r is taken), ksplit parts of the walk
 * along k (over blockIdx.z, adding with atomics).  All zero: patc chooses:
 * where X is staged and the grid fills the GPU without splitting k, a wide
 * register tile, 8 rows x 8 columns a thread (bx 16: a block reads 128
 * columns of X) or else 8 x 4, so that a thread's shared-memory loads of X
 * keep pace with its FMAs; otherwise ptx_default_schedule, with the walk
 * split and fewer rows per thread when the grid would be too small.  With
 * bx 0, a nonzero r caps the rows a thread takes (4: no wide tiles) and
 * stage -1 turns staging off. */
typedef struct PtxSchedule {
	int bx, by, v, r;
	int ksplit; /* parts the walk along k is split into (1: none) */
	int stage;  /* > 0: stage X in shared memory (cp.async, two buffers) where it
	             * applies; with bx = 0 (patc's choice), -1 turns it off */
	int wg;     /* > 0: on sm_90, a staged tensor-core kernel of dense kept
	             * tiles runs on Hopper's warpgroup mma (wgmma, target
	             * sm_90a; see tc_stage.c); else mma.sync, patc's choice until
	             * wgmma has been measured on a GPU */
	int wsum;   /* > 0: where the walk along k is split (CUDA cores), the parts
	             * sum through a workspace instead of adding to a zeroed C with
	             * atomics (PtxPlan.wsum); patc's choice: atomics, since with
	             * the workspace two launches of one loaded op must not overlap */
	int tcs;    /* > 0: the staged tensor-core kernels walk their steps through
	             * tcs shared-memory buffers (2 .. PTX_TC_MAX_STAGES), the
	             * copies of tcs - 1 steps ahead in flight (tcs - 2 on wgmma);
	             * 32-k steps only where tcs of them fit, and fewer buffers
	             * where not even 16-k ones do (PtxPlan.tc_stages); 0:
	             * PTX_TC_STAGES (on wgmma one more where it fits) */
	int tcw;    /* > 0: the staged tensor-core kernels on mma.sync or mma.sp take
	             * blocks of at most tcw warps (1 .. PTX_TC_MAX_WARPS): up to
	             * tcw 16-row chunks that keep the same k, so that more rows
	             * share each row of X a block stages (PtxPlan.tc_rows), then
	             * column slices up to PTX_TC_WARPS warps (tc_cols);
	             * 0: PTX_TC_WARPS */
	int smem;   /* > 0: bytes of shared memory a staged tensor-core block may
	             * take, past PTX_STATIC_SMEM dynamic (PtxPlan.smem_dyn; at most
	             * the target's limit, ptx_smem_limit); 0: PTX_STATIC_SMEM, or
	             * under ptx_plan_target the target's limit where tcs or tcw
	             * ask for buffers or warps */
} PtxSchedule;

/* A block's static shared memory (the most without opting in). */
enum { PTX_STATIC_SMEM = 48 << 10 };

/* The most shared memory a block can opt in to on target sm (sm_80 163
 * KiB, sm_86 and sm_89 99 KiB, sm_90 227 KiB). */
int ptx_smem_limit(const char *sm);

extern const PtxSchedule ptx_default_schedule;

/* The GPU schedule of a target-independent one (the search's and the tune
 * log's): its fields, the shared memory left to patc (ptx_plan_target). */
PtxSchedule ptx_schedule_of(const KernelSchedule *ks);

/* Whether bx is a schedule's legal threads along the columns: 16 or a
 * multiple of 32 (ptx_plan takes 32 for any other). */
bool ptx_bx_legal(int bx);

/* How a kernel is mapped; ptx_plan fills it from the IR and a schedule. */
typedef struct PtxPlan {
	PtxSchedule s;      /* with r as used */
	int group;          /* the loop whose rows a thread takes r at a time, -1: none */
	int nspread;        /* loops 0..nspread-1 (but group) are spread over blocks */
	int64_t nsets;      /* row sets: one per (spread digits, group chunk) */
	bool atomic;        /* threads add to C with atomics */
	bool vred;          /* atomic, on sm_90: a thread's adjacent elements of C (on
	                     * CUDA cores 4 columns with xvec or mvec rows, on the
	                     * tensor cores 2 columns in layout kn, N even) added by
	                     * one vector red (PTX ISA 8.1; ptx_plan_target) */
	bool zero;          /* C must be zeroed before the launch */
	bool wsum;          /* the walk along k is split and no other loop spread over
	                     * blocks runs along k (CUDA cores, schedule wsum, at most
	                     * PTX_WSUM_PARTS parts, the workspace at most
	                     * PTX_WSUM_BYTES): each part stores its
	                     * sums to its own slice of a workspace in the module (a
	                     * .global array, zero at load), then adds one to its
	                     * thread's counter there; the part that finds the others
	                     * done adds the slices in part order, stores C and resets
	                     * the counter.  No atomics on C, no zeroing launch (but
	                     * where rows are perforated: zero), and C's bits do not
	                     * depend on the order the parts finish; but launches of
	                     * one loaded module must not overlap */
	const char *why;    /* one line for --explain */
	const char *tile_why; /* patc's choice where X is staged: why a wide register tile
	                       * or why not (NULL: no wide tile was considered) */
	int split;          /* the loop walked along k that blockIdx.z splits, -1: none */
	int64_t nsplit, split_chunk; /* its parts, and digits per part */
	bool stage;         /* X staged in shared memory, see ptx_plan.c */
	bool wstage;        /* stage: the weights staged beside X (wk, or wr) */
	int outer;          /* stage: the first loop the threads walk */
	int64_t stage_u, stage_p; /* stage: iterations of it per stage, points per iteration */
	bool xvec, wk, wr;  /* 16-byte loads of X, of weights along k, along rows */
	int mvec;           /* layout nk: a thread's rows in runs of mvec (4 or 2; 0:
	                     * not), each run's adjacent elements of C stored (or
	                     * added, vred) as one vector */
	bool emulate;       /* thread and block ids from globals patc_emu_tid_x, ..
	                     * (i32), for running the mapping on the host; on
	                     * tensor cores each mma calls the host function that
	                     * the global patc_emu_mma points to (PtxEmuMma) */
	bool emu_count;     /* emulated, and the loads of X and the values and
	                     * the stores to C call patc_emu_global (PtxEmuGlobal) */
	bool tc;            /* tensor cores (tc.c): 16-bit X and weights, mma.sync */
	bool tc_sp;         /* the sparse tensor cores: 2:4 along k, mma.sp */
	const char *tc_why; /* why the tensor cores are used or not, for --explain */
	int tc_rows, tc_cols; /* tensor cores: a block takes tc_rows 16-row chunks
	                       * (which keep the same k) x tc_cols column slices */
	int tc_wm;            /* tensor cores: chunks a warp takes (staged: 2 where
	                       * tc_rows is even, else 1); a block has tc_rows /
	                       * tc_wm x tc_cols warps */
	int64_t tc_steps;     /* tensor cores, staged: k steps of a block's walk (16 k
	                       * tc_ku or tc_wgu, or 32 on the sparse tensor cores) */
	const char *stage_why; /* tensor cores: why X is staged or not, for --explain */
	bool tc_wg;           /* tensor cores, staged: a warpgroup of 4 warps per block,
	                       * wgmma.m64nNk16 (N = tc_wgn) for each 16 k of a step
	                       * (tc_wgu; transposed, for each 64 columns too), both
	                       * operands read from shared memory by the tensor
	                       * cores through descriptors (schedule wg > 0, sm_90) */
	int tc_wgn;           /* tc_wg: the wgmma's N: the block's columns, 64 tc_cols
	                       * (transposed: the kept tiles' rows, 16 tc_rows) */
	int tc_wgu;           /* tc_wg: 16-k wgmma a step (2 where the kept tiles' k
	                       * loop is a multiple of 32 long and the stages fit, else 1) */
	int tc_ku;            /* mma.sync, staged: 16-k mma a step (2 where the kept
	                       * tiles' k loop is a multiple of 32 long, the walk is
	                       * not split and the stages fit, else 1; 0 reads as 1) */
	int tc_stages;        /* tensor cores, staged: the shared-memory buffers of the
	                       * walk (schedule tcs, else PTX_TC_STAGES, on wgmma
	                       * PTX_TC_STAGES + 1 where they fit) */
	int smem_dyn;         /* bytes of dynamic shared memory the launch must give
	                       * (and, past PTX_STATIC_SMEM, the kernel opt in to
	                       * with cuFuncSetAttribute); 0: all static */
	bool tc_wgt;          /* tc_wg, transposed: kept tiles of 16 tc_rows < 64 rows; the
	                       * wgmma computes C^T = X^T W^T, 64 columns (tokens) x
	                       * tc_wgn = 16 tc_rows rows, tc_cols of them a block */
	bool bias;            /* the op has a bias (the kernel's 8th argument, NULL
	                       * allowed): added at the stores of C, or by the
	                       * epilogue kernel (ptx_plan_epilogue) */
	bool epi_after;       /* the op's epilogue (its activation, its bias) waits
	                       * for the launch to end, and a second kernel, NAME_epi
	                       * (ptx_epi_hooks), applies it to all of C: where the
	                       * plan's threads add to C with atomics, or leave rows
	                       * no thread owns, an element is final only then.
	                       * Otherwise each element's one store applies it (and
	                       * where the op accumulates, adds the old C) */
	bool tc_wga;          /* tc_wg with 3 buffers or more: a step's wgmma stay in
	                       * flight through the next step's barrier and copies
	                       * (wgmma.wait_group 1 before each barrier), the copies
	                       * tc_stages - 2 steps ahead; else each step waits for
	                       * its wgmma, the copies tc_stages - 1 ahead */
} PtxPlan;

/* The k of one step of a staged tensor-core plan's walk (for --explain). */
int ptx_tc_step_k(const PtxPlan *plan);

/* The tensor-core mapping (tc.c), for a kernel whose dtype is f16 or bf16.
 * The nest must end in a dense loop along m and a dense loop along k, each
 * a multiple of 16 long (blocks of 16 x 16 and up: the kept tiles are
 * dense 16 x 16 tiles of W), with no loop along both axes before them.  A
 * warp owns 16 consecutive rows of that m loop (the loops along m before
 * it spread over thread blocks, one digit each) and PTX_TC_COLS columns,
 * and walks the loops along k: for every kept tile, every 16 k of it is
 * one mma.sync.m16n8k16 per 8 columns, C accumulated in f32 registers and
 * stored once.  X and the weights are f16 or bf16 in memory; C is f32.
 *
 * Staged (where X's rows are 16-byte aligned: N a multiple of 8 in layout
 * kn; K a multiple of 8 and the kept tiles' k contiguous in layout nk): a
 * block is tc_rows chunks of 16 rows of one kept tile, which keep the same
 * k (at most PTX_TC_WARPS, or the schedule's tcw), times tc_cols slices of
 * PTX_TC_COLS columns; a warp takes tc_wm
 * (PTX_TC_WM where tc_rows is even) chunks of one slice, so that each B
 * fragment it reads from shared memory feeds tc_wm mma.  The block
 * walks its 16-k steps as a pipeline of tc_stages (PTX_TC_STAGES unless
 * the schedule's tcs says otherwise) shared-memory
 * buffers: cp.async copies the weights' 16 x 16 tiles and X's 16 rows of
 * the block's columns (zero-filled past K and N) of the steps ahead while
 * the warps compute on the current one, reading their fragments with
 * ldmatrix (.trans for layout kn).  So every X element the block loads
 * feeds 16 tc_rows rows.  Otherwise (the plain form) each warp reads the
 * weights as 16-bit pairs along k and X element by element from global
 * memory, tc_rows = 1.
 *
 * The sparse tensor cores (tc_sp): where the nest ends in a dense m loop, a
 * dense k loop of stride 4 and a k loop of 4 keeping 2 (2:4 along k), a
 * warp takes 16 rows of the m loop (the last 16 may run past its end) and
 * PTX_TC_COLS columns as above, and every 32 k is one mma.sp.m16n8k32 per 8
 * columns, the kept values being the compressed A and the metadata made
 * from the last loop's index, both laid out for the warps on the host
 * (ptx_weights, see tc.c).  Staged where X's rows are
 * aligned, as above but with 32-k steps of X alone: a block takes tc_rows
 * 16-row chunks of the m loop times tc_cols column slices, tc_wm chunks a
 * warp, and each warp reads its A fragments and metadata from global
 * memory.
 *
 * Hopper's warpgroup mma (tc_wg: schedule wg > 0 on sm_90): a staged
 * kernel of dense kept tiles runs one warpgroup per block.  Where the
 * kept tiles give 64 rows the same k (tc_rows 4), over those 64 rows and
 * tc_wgn columns, a step of 16 tc_wgu k being tc_wgu
 * wgmma.mma_async.m64nNk16 that read the weights and X from the stage,
 * laid out as 8 x 8 core matrices, through descriptors (tc_stage.c), each warp
 * holding its 16 rows' accumulators; otherwise transposed (tc_wgt), over
 * the kept tile's 16 tc_rows rows and 64 tc_cols columns, one wgmma of
 * C^T's 64 columns x tc_wgn rows for each 16 k and 64 columns. */
enum { PTX_TC_WARPS = 4, PTX_TC_TILES = 8, PTX_TC_COLS = 8 * PTX_TC_TILES, PTX_TC_STAGES = 3, PTX_TC_WM = 2,
       PTX_TC_MAX_STAGES = 6, PTX_TC_MAX_WARPS = 8 };

/* In emulation: the host runs the threads of a block; each lane's mma
 * passes its fragments (a: 4 words, b: 2 words of two 16-bit values each)
 * and its accumulators c, which it gets back as D = A B + C once all 32
 * lanes have passed theirs.  f16: the elements are f16, else bf16. */
typedef void (*PtxEmuMma)(const int32_t *a, const int32_t *b, float *c, int32_t f16);
/* In emulation, ldmatrix.x4 (staged tensor-core kernels): each lane passes
 * the row of 8 16-bit values it addresses and gets its 4 words back once
 * all 32 lanes have passed theirs (trans: .trans). */
typedef void (*PtxEmuLdm)(const uint16_t *row, int32_t *out, int32_t trans);
/* In emulation, mma.sp (the sparse tensor cores): a as for mma (the
 * compressed 16 x 16), b 4 words, c the accumulators, e the metadata (see
 * tc_mma.c). */
typedef void (*PtxEmuMmaSp)(const int32_t *a, const int32_t *b, float *c, int32_t e, int32_t f16);
/* In emulation, wgmma.mma_async (tc_wg): each lane passes the shared
 * memory (smem, bytes long; the descriptors' addresses are offsets into
 * it), the two descriptors, its tc_wgn / 2 accumulators c and info: the
 * wgmma's N in bits 0-8, imm-trans-b in bit 9, the warp's place in its
 * warpgroup in bits 10-11, f16 in bit 12, imm-trans-a in bit 13.  Its
 * rows of D = A B + C land in c at the warp's wgmma.wait_group that
 * covers the wgmma's group (patc_emu_wgwait, a PtxEmuWait; the groups
 * committed by patc_emu_wgcommit, a PtxEmuCommit), so c must stay put
 * until then. */
typedef void (*PtxEmuWgmma)(const void *smem, int64_t bytes, int64_t desc_a, int64_t desc_b, float *c, int32_t info);
/* In emulation, the rest of what only a GPU has (ptx_emulate runs a
 * block's threads and shadows its shared memory): bar.sync 0 (PtxEmuSync),
 * fence.proxy.async (the same type, patc_emu_fence); a cp.async
 * of `bytes` from src to dst in the shared buffer at base (size bytes),
 * zeros where !ok, landing at the wait_group that covers it; commit_group;
 * wait_group pending; and a load (write 0) or store of bytes at p in the
 * shared buffer at base.  A cp.async also passes the operand src lies in
 * (X or the values, else NULL), whose start a GPU aligns to 256 bytes:
 * its sectors are counted from there (PtxEmuStats). */
typedef void (*PtxEmuSync)(void);
typedef void (*PtxEmuCp)(void *dst, const void *src, int32_t bytes, int32_t ok, const void *base, int64_t size,
                         const void *from);
typedef void (*PtxEmuCommit)(void);
typedef void (*PtxEmuWait)(int32_t pending);
typedef void (*PtxEmuTouch)(const void *p, int64_t bytes, int32_t write, const void *base, int64_t size);
/* In emulation with plan->emu_count: a load (write 0) or store of bytes at
 * p in the operand at `from` (X, the values, C). */
typedef void (*PtxEmuGlobal)(const void *p, int64_t bytes, int32_t write, const void *from);

/* Kernel k's weights as its plan takes them on the device, from the packed
 * Fractal-ELL values (nvalues floats) and the mask's index arrays: on CUDA
 * cores as they are; on tensor
 * cores the values in the kernel's 16-bit dtype; on the sparse tensor
 * cores (tc_sp) the values in the order the warps read their A fragments
 * and the last loop's index as mma.sp metadata words, padded where a
 * 16-row chunk or an 8-chunk step runs past the m loop's end or K0, so
 * that the kernel checks no bounds for them (see tc.c).  What `values` and
 * `index` point to is read-only, owned by the caller or by w (own, freed
 * by ptx_weights_free).  false: out of memory, nothing to free. */
typedef struct PtxWeights {
	const void *values;
	size_t values_bytes;
	const int32_t *index[PIR_MAX_LOOPS];
	size_t index_bytes[PIR_MAX_LOOPS];
	void *own[2];
} PtxWeights;
bool ptx_weights(const LowerKernel *k, const PtxPlan *plan, const float *values, int64_t nvalues,
                 const PruneMask *mask, PtxWeights *w);
void ptx_weights_free(PtxWeights *w);

/* Whether kernel k may take its N to be a multiple of q (the vector
 * loads and stores that need C's and X's rows aligned): specialised on
 * shape.N, where that N is; compiled for N at run time (n_runtime), where
 * q divides the N its caller promises (LowerKernel.n_align; the -o
 * launcher has a second kernel for other N).  shape.N then only tunes the
 * plan (its tiles and split), and every address and bound is the run's N. */
bool ptx_n_multiple(const LowerKernel *k, int64_t q);

/* Fills plan for kernel k under schedule s (NULL or all zero: patc's
 * choice).  The kernel must be launched with n0 = 0 and n1 = N. */
void ptx_plan(const LowerKernel *k, const PtxSchedule *s, PtxPlan *plan);
/* ptx_plan as ptx_compile and ptx_emulate take it for target sm: s (NULL:
 * patc's choice) with wg dropped off sm_90, smem within the target's limit
 * (the limit where tcs or tcw are set and smem is not), and vred where it
 * applies on sm_90. */
void ptx_plan_target(const LowerKernel *k, const PtxSchedule *s, const char *sm, PtxPlan *plan);
/* The columns a block takes: the grid along N is n of them, rounded up
 * (ptx_grid; the -o launcher counts it at each launch). */
int64_t ptx_grid_cols(const PtxPlan *plan);
/* Sets plan's bias and epi_after for kernel k's epilogue (OpShape's act
 * and accumulate, and bias: whether the op has one). */
void ptx_plan_epilogue(const LowerKernel *k, bool bias, PtxPlan *plan);
/* The epilogue kernel of a plan with epi_after (k's name + "_epi", the
 * kernel signature of lower.h): C = act(C + bias) for all of C, one
 * element a thread, PTX_EPI_THREADS threads a block, along C's storage. */
enum { PTX_EPI_THREADS = 256 };
LowerHooks ptx_epi_hooks(PtxPlan *plan);
/* Its grid for n columns: blocks of PTX_EPI_THREADS elements of C's M n. */
unsigned ptx_epi_blocks(const LowerKernel *k, int64_t n);
/* The launch shape for n columns. */
void ptx_grid(const PtxPlan *plan, int64_t n, unsigned grid[3], unsigned block[3]);
/* Whether that grid is within CUDA's limits (x below 2^31, y and z at
 * most 65535); false with a message naming the tokens or rows too many. */
bool ptx_grid_fits(const PtxPlan *plan, int64_t n, char err[PTX_ERR_MAX]);

/* What a kernel's blocks move between the GPU's L2 and its multiprocessors
 * under plan (for n = k->N columns): the bytes of X the blocks stage, of
 * the weights they stage (w_staged) or load themselves (w_direct: the
 * sparse tensor cores' A and metadata, or weights a block's threads read
 * from global memory, counted once a block), and of C (stored, or read and
 * written by atomics, and zeroed).  Each block of a staged kernel copies
 * the X rows of its kept k once: `rows` rows of W share each of them, and
 * `cols` columns each weight it holds.  macs: the kernel's multiply-adds,
 * stored values (padding included) times N.  false where X is not staged
 * (its reads go through L1, which may merge those of a block's threads:
 * not counted). */
typedef struct PtxTraffic {
	double x, w_staged, w_direct, c, macs;
	int64_t rows, cols;
} PtxTraffic;
bool ptx_traffic(const LowerKernel *k, const PtxPlan *plan, PtxTraffic *t);

/* Whether kernel k runs on tensor cores; fills plan's tensor-core fields
 * (plan->tc_why either way), staged unless s says stage < 0.  Called by
 * ptx_plan. */
bool ptx_tc_plan(const LowerKernel *k, const PtxSchedule *s, PtxPlan *plan);

/* The lowering hooks of the GPU mapping for plan (filled by ptx_plan).
 * With plan->emulate the kernel compiles for any target (ptx_emulate runs
 * it on the host). */
LowerHooks ptx_hooks(PtxPlan *plan);

/* What ptx_emulate counts of a kernel's accesses (kinds PTX_ACC_*: loads
 * and stores of shared memory by the threads, ldmatrix's rows among the
 * loads; cp.async's writes to it; cp.async's reads of global memory; the
 * threads' loads of X and the weights' values, and their stores to C), per
 * warp-wide request: the accesses the lanes of a warp make at one
 * instruction, matched by the order in which each lane reaches it.  cost
 * and ideal: shared memory's wavefronts (32 banks of 4 bytes; a request
 * of 16-byte accesses is served 8 lanes at a time, of 8-byte ones 16 at a
 * time, and each group takes as many wavefronts as the most distinct
 * words it asks of one bank) against the fewest its distinct words need;
 * for global memory, the 32-byte sectors the lanes' bytes lie in against
 * the fewest that could hold them.  cost > ideal: bank conflicts, or
 * uncoalesced accesses.  Not counted: wgmma's reads (the async proxy) and
 * the index loads. */
enum { PTX_ACC_LOAD, PTX_ACC_STORE, PTX_ACC_CP, PTX_ACC_SRC, PTX_ACC_GLOAD, PTX_ACC_GSTORE, PTX_ACC_KINDS };
extern const char *const ptx_acc_names[PTX_ACC_KINDS];
typedef struct PtxAccCount {
	int64_t requests, cost, ideal;
} PtxAccCount;
typedef struct PtxEmuStats {
	bool count_access;   /* in: count accesses (acc, worst; slower) */
	double copied[2];    /* the bytes the stage copies read: of X, of the weights */
	PtxAccCount acc[PTX_ACC_KINDS];
	char worst[PTX_ERR_MAX]; /* the request furthest over its ideal, "" where none is */
} PtxEmuStats;

/* Runs kernel k under schedule s (NULL: patc's choice), as compiled for
 * target sm (ptx_plan_target), on the host over its whole grid
 * (emulate.c): X, C, values and index as the kernel takes them
 * (X and the values 16-bit where plan_out->tc; X, the values and C 16-byte
 * aligned, as cuMemAlloc's are), C poisoned with NaN first (zeroed where
 * the plan adds into it).  Slow: for tests and for checking kernels
 * without a GPU, never for timing.  A block's threads run as on a GPU
 * (cp.async landing at its wait_group, barriers meeting), their shared
 * memory shadowed.  false with err where the kernel does not compile; a
 * block's threads wait for one another forever (different numbers of
 * barriers, an mma some lanes never reach), as a GPU would hang; a warp's
 * lanes meet at different collectives or pass mma.sp metadata the
 * hardware refuses; an access that must be aligned (a vector load or
 * store, cp.async, ldmatrix, a wgmma operand) is not, or one reads or
 * writes outside shared memory or X, as the GPU would fault; two threads
 * touch a byte of shared memory between the same two barriers, one of
 * them writing, or a thread reads one while a cp.async to it is in flight
 * (a race: the GPU's result would depend on timing); or a thread reads
 * shared memory no thread of its block wrote.  plan_out is the plan
 * either way.  stats (NULL: not wanted): the bytes the grid's stage
 * copies read from global memory, as the GPU would copy them (ptx_traffic's
 * x and w_staged, counted), and where stats->count_access, its accesses
 * (PtxEmuStats). */
bool ptx_emulate(const LowerKernel *k, const PtxSchedule *s, const char *sm, const void *x, const void *values,
                 const int32_t *const *index, float *c, PtxPlan *plan_out, PtxEmuStats *stats, char err[PTX_ERR_MAX]);

/* ptx_emulate in parts, so that one compiled kernel runs at several N
 * (k->n_runtime) and with a bias: ptx_emu_open compiles k for the host
 * (count: stats->count_access of the runs), plan_out as above; ptx_emu_run
 * runs it over the grid for N columns (N must be shape.N where the kernel
 * is specialised; N <= 0 runs nothing), bias the kernel's 8th argument
 * (M floats or NULL; bias at ptx_emu_open: the op has one), C as
 * ptx_emulate leaves it first but where the op accumulates (C then holds
 * the old C, as the launcher leaves it), then the epilogue kernel where
 * the plan has one (epi_after); ptx_emu_close frees it (NULL: nothing). */
typedef struct PtxEmuKernel PtxEmuKernel;
PtxEmuKernel *ptx_emu_open(const LowerKernel *k, const PtxSchedule *s, const char *sm, bool count, bool bias,
                           PtxPlan *plan_out, char err[PTX_ERR_MAX]);
bool ptx_emu_run(PtxEmuKernel *e, int64_t N, const void *x, const void *values, const int32_t *const *index,
                 const float *bias, float *c, PtxEmuStats *stats, char err[PTX_ERR_MAX]);
void ptx_emu_close(PtxEmuKernel *e);

/* GPU targets: sm_80, sm_86, sm_89, sm_90.  The PTX ISA version patc
 * writes is PTX_ISA_VERSION, PTX_ISA_VERSION_VRED for a module with a
 * vector red (PtxPlan's vred, sm_90 only); a module with a wgmma kernel
 * (schedule wg, sm_90 only) is for sm_90a. */
#define PTX_ISA_VERSION "8.0"
#define PTX_ISA_VERSION_VRED "8.1"
bool ptx_target_known(const char *sm);

/* One kernel of a module. */
typedef struct PtxKernelSpec {
	LowerKernel k;
	PtxSchedule s;
	bool bias;    /* the op has a bias (PtxPlan.bias); with plan.epi_after the
	               * module has k's epilogue kernel too, k.name + "_epi" */
	PtxPlan plan; /* filled by ptx_compile */
} PtxKernelSpec;

/* Lowers the kernels into one module for sm, optimises it at O3 and
 * prints it as PTX (*ptx, malloc'd; *llvm too when llvm is not NULL).
 * A schedule's wg is dropped on targets other than sm_90. */
bool ptx_compile(PtxKernelSpec *ks, int nk, const char *sm, char **ptx, char **llvm,
                 char err[PTX_ERR_MAX]);

#endif
