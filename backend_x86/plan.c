/* SPDX-License-Identifier: MIT */
/* plan.c - what the x86 backend chooses for a kernel, without building IR:
 * whether a tile of C is stored rather than added (LowerHooks.stores_c),
 * X's reuse and whether it goes into panels, whether X's rows spread over
 * L1's sets, the m runs' accumulators and whether they go across the k
 * loops, the column chunks of x86_run, and x86_kernel_traits, which reports
 * these to the search.  It calls no other file of the backend (lower_path
 * reads which hooks x86_update_hooks sets). */
#include "x86_impl.h"

/* Whether loops 0..upto-1 are each a dense loop along m only or a loop
 * along k only. */
static bool c_fresh_ok(const Pir *ir, int upto)
{
	for (int j = 0; j < upto; j++) {
		const PirLoop *l = &ir->loops[j];
		const bool has_m = pir_loop_has_axis(l, PIR_AXIS_M), has_k = pir_loop_has_axis(l, PIR_AXIS_K);
		if (has_m && (has_k || pir_loop_is_perforated(l)))
			return false;
	}
	return true;
}

enum { X86_PACK_REUSE = 32 };

/* The stored weights per k of W: how many FMAs (per column) each element
 * of X feeds, on average. */
double x86_x_reuse(const LowerKernel *k)
{
	Nest nest;
	nest_of(k->ir, &nest);
	return (double)nest.nstored / (double)k->shape.K;
}

/* Whether X is worth packing: every element feeds X86_PACK_REUSE or more
 * stored weights (on average) and the tiles are vectors. */
bool x86_panel_pays(const LowerKernel *k)
{
	if (k->sched.stage) /* the schedule's choice */
		return k->sched.stage > 0 && k->vector_width >= 8;
	return k->vector_width >= 8 && x86_x_reuse(k) >= X86_PACK_REUSE;
}

/* Whether consecutive rows of X start in at least 16 different sets of L1
 * (a way: 64 sets of 64 bytes): the rows are N floats apart, and only a
 * multiple of 4 KiB maps them all to one set. */
bool x86_x_rows_spread(const LowerKernel *k)
{
	int64_t a = X86_L1_WAY_BYTES, b = (k->shape.N * 4) % X86_L1_WAY_BYTES;
	while (b) {
		const int64_t r = a % b;
		a = b, b = r;
	}
	return X86_L1_WAY_BYTES / a >= 16;
}

/* Vectors per row in an m run's full tile: 4 x 4 AVX-512 or 4 x 2 AVX2
 * accumulators. */
/* Vector accumulators per row of an m run: 4 of 32 registers (AVX-512) or
 * 2 of 16, fewer where the schedule says so. */
int x86_mrun_nacc(const LowerKernel *k)
{
	const int n = k->vector_width >= 16 ? 4 : 2;
	return k->sched.col_tiles > 0 && k->sched.col_tiles < n ? k->sched.col_tiles : n;
}

/* The m runs going across the k loops above them (mrun.c): the longest m
 * loop they take. */
enum { X86_ACROSS_ROWS = 16 };
/* Each tile of rows reads its whole panel (K x 64 floats) from L2: where
 * that is over X86_ACROSS_PANEL_BYTES the runs go blocked along k instead
 * (the bound measured in docs/design/x86-m-runs.md). */
enum { X86_ACROSS_PANEL_BYTES = 1 << 20 };

/* The loop above the m runs' loop (Nest.mloop) that carries m, when the
 * loops between are k loops, the run below is dense and the m loop short;
 * else -1. */
static int across_outer(const Nest *nest)
{
	const int first = nest->mloop;
	if (first < 0 || nest->ir->loops[first].len > X86_ACROSS_ROWS || !nest->mloop_shares_k)
		return -1;
	const int outer = nest->m_above;
	return outer >= 0 && outer < first - 1 ? outer : -1;
}

/* Where the m runs (from Nest.mloop) go across (x86_mrun_all): the outer
 * loop, or -1. */
int x86_across_for(const LowerKernel *k)
{
	const int vl = k->vector_width;
	if ((double)k->shape.K * 4.0 * vl * x86_mrun_nacc(k) > X86_ACROSS_PANEL_BYTES)
		return -1;
	Nest nest;
	nest_of(k->ir, &nest);
	return x86_panel_pays(k) ? across_outer(&nest) : -1;
}

/* LowerHooks.stores_c: whether every tile of C is first written at a
 * point where x86_c_fresh_at tells so (see "writing C", common.c): the
 * loops above the m runs, the k runs or the m loop innermost are dense
 * along m or along k only.  The point path adds to C, zeroed. */
bool x86_stores_c(const LowerKernel *k)
{
	return !k->shape.accumulate /* C holds what is added to */ && x86_epilogue_fused(k);
}

bool x86_epilogue_fused(const LowerKernel *k)
{
	const Pir *ir = k->ir;
	Nest nest;
	nest_of(ir, &nest);
	const int split = nest.split;
	switch (lower_path(k, &x86_update_hooks)) {
	case LOWER_MRUN: return c_fresh_ok(ir, split - 1);
	case LOWER_KRUN: return c_fresh_ok(ir, split);
	case LOWER_MINNER: return c_fresh_ok(ir, ir->nloops - 2);
	default: return false;
	}
}

/* Column chunks.  Where X is large, a thread's columns are run in chunks
 * whose X (K x chunk floats, about X86_CHUNK_X_BYTES; at least one tile)
 * stays in L2 while every row reads it, instead of streaming all of X from
 * L3 once per block row; the weights are read once per chunk instead.
 * "Large" is X86_CHUNK_MRUN_FROM for the m runs (blocks, 2:4, the hybrid),
 * whose weights are few beside their work, and X86_CHUNK_FROM_BYTES for
 * the rest.  Not where the k run's outer loop is perforated
 * (row-balanced): its X blocks already stay in L1.  A chunk is a multiple
 * of the widest tile (64 columns for the AVX-512 m runs, X86_CHUNK_ALIGN
 * for the rest), so only a slice's last chunk has partial tiles; a
 * remainder under half a chunk goes with the slice's last chunk
 * (x86_chunk_end), since a chunk of a few columns reads all the weights
 * for little work.  The m runs under an outer k loop (blocks, the hybrid)
 * are blocked along it for the chunk's X (mrun_all_blocks), so their
 * chunks keep at least 128 columns; the other m runs (2:4; small blocks
 * going across) take chunks of one tile where that keeps X within
 * X86_CHUNK_X_BYTES.  The bounds are measured in docs/design/x86-chunks.md.
 * Returns N where there are no chunks. */
enum {
	X86_CHUNK_MRUN_FROM = 1 << 20,
	X86_CHUNK_FROM_BYTES = 8 << 20,
	X86_CHUNK_X_BYTES = 1 << 20,
	X86_CHUNK_ALIGN = 128,
	X86_NKDOT_X_BYTES = 8 << 20
};

int64_t x86_chunk_columns(const LowerKernel *k)
{
	/* a kernel for N at run time takes the chunks a large N would */
	const int64_t N = k->n_runtime ? X86_N_ANY : k->shape.N;
	if (k->sched.chunk < 0)
		return N;
	if (k->sched.chunk > 0) { /* the schedule's: whole tiles of the widest kind */
		const int64_t al = (int64_t)k->vector_width * 8 > 0 ? (int64_t)k->vector_width * 8 : 1;
		const int64_t w = (k->sched.chunk + al - 1) / al * al;
		return w < N ? w : N;
	}
	NkPlan pl;
	if (x86_nk_dot(k, &x86_update_hooks) && x86_nkdot_plan(k, &pl) && pl.form == NK_BLOCKS) {
		/* nk in block rows (nkdot.c): each block row reads its tokens' X
		 * at its kept k, so a chunk keeps the tokens' X (chunk x K floats)
		 * within X86_NKDOT_X_BYTES, in L3, rather than streaming it from
		 * memory for every block row; the block rows' transposed weights
		 * are made once per chunk */
		const int64_t w = (int64_t)(X86_NKDOT_X_BYTES / (4.0 * (double)k->shape.K)) / 64 * 64;
		return w < 64 ? 64 : w < N ? w : N;
	}
	const Pir *ir = k->ir;
	Nest nest;
	nest_of(ir, &nest);
	const int split = nest.split;
	const bool mrun = lower_path(k, &x86_update_hooks) == LOWER_MRUN;
	const double from = mrun ? X86_CHUNK_MRUN_FROM : X86_CHUNK_FROM_BYTES;
	if ((double)k->shape.K * (double)N * 4 <= from || k->shape.layout != PAT_LAYOUT_KN ||
	    (split < ir->nloops && pir_loop_is_perforated(&ir->loops[split])))
		return N;
	const int64_t tile = (int64_t)k->vector_width * x86_mrun_nacc(k);
	const bool one_tile = mrun && (double)k->shape.K * 4.0 * (double)tile <= X86_CHUNK_X_BYTES &&
	                      (nest.k_above < 0 || x86_across_for(k) >= 0);
	const int64_t al = one_tile ? tile : X86_CHUNK_ALIGN;
	int64_t w = (int64_t)(X86_CHUNK_X_BYTES / (4.0 * (double)k->shape.K)) / al * al;
	return w < al ? al : w;
}

void x86_kernel_traits(const LowerKernel *k, X86Traits *t)
{
	LowerKernel pk; /* nk on panels: what the panels' kn kernel does */
	if (x86_nk_panels(k, &x86_update_hooks)) {
		pk = x86_nk_panel_kernel(k, k->name);
		k = &pk;
	}
	Nest nest;
	nest_of(k->ir, &nest);
	const int split = nest.split;
	t->path = lower_path(k, &x86_update_hooks);
	t->x_reuse = x86_x_reuse(k);
	t->panel = x86_panel_pays(k);
	t->chunk = x86_chunk_columns(k);
	t->rows_spread = x86_x_rows_spread(k);
	t->across = t->path == LOWER_MRUN && split > 0 && x86_across_for(k) >= 0;
	t->stores_c = x86_stores_c(k);
}
