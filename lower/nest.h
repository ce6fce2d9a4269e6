/* SPDX-License-Identifier: MIT */
/* nest.h - what the backends and the cost model need to know about a
 * kernel's loop nest, worked out once from the PatternIR (no LLVM).
 *
 * A kernel walks the PatternIR's loops in storage order (lower.h).  Its
 * shape, as the lowering sees it:
 *
 *   loops 0 .. split-1        the outer part: the last of them has m
 *   loops split .. n-1        the k run: every one along k only (none: split n)
 *
 * and, where loop split-1 is a plain dense m loop (one component, along m,
 * not perforated), the rows of that loop can share the k run's rows of X
 * (an m run).  The stored weights are numbered in storage order: weight
 * (d_0, .., d_{n-1}), d_i < nnz_i the storage digit of loop i, is at
 *
 *   row = sum_i d_i stride_i,   stride_i = nnz_{i+1} ... nnz_{n-1}
 *
 * which nest_encode and nest_decode compute on the host (the emitters build
 * the same arithmetic in IR from these strides and nnz).
 *
 * Where two consumers test a similar but not equal fact (rows sharing the k
 * run in lower_path's sense and in the GPU's), both are kept, under names
 * that say what differs: no consumer's answer changes.
 *
 * A Nest points into its Pir: it lives as long as the Pir, unchanged.
 */
#ifndef PATC_NEST_H
#define PATC_NEST_H

#include "../ir/pir.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct Nest {
	const Pir *ir;
	int nloops;
	/* ---- the k run: the trailing loops that run along k only ---- */
	int split;         /* its first loop; nloops where the last loop has m */
	int64_t run_kept;  /* nnz product over the run (1 without one) */
	int64_t run_len;   /* len product over the run (1 without one) */
	bool run_dense;    /* there is a run and none of its loops is perforated */
	/* lower_path's rule for rows walking the run together (an m run): the
	 * run is dense, or its outermost loop is dense and its perforated loops
	 * (N:M) keep at least half of each group (2 kept >= len) */
	bool run_shared;
	/* The innermost run along k through the run's innermost perforated
	 * loop: loops tail..n-1, tail = max(split, last_perf) (the cost model's
	 * k run: its FMA rate depends on it). */
	int tail;
	/* ---- the m loop above the run ---- */
	int mloop;        /* split-1 where it is a plain dense m loop; else -1 */
	/* mloop >= 0 and no loop after it is perforated, so that the rows of
	 * mloop keep the same k (the GPU's row groups; unlike run_shared, true
	 * where mloop is innermost and false for N:M) */
	bool mloop_shares_k;
	int m_above;      /* the nearest loop above mloop with m (-1: none, or no mloop) */
	int k_above;      /* the nearest loop above split-1 without m (-1: none, or split 0) */
	/* the innermost loop is a plain dense m loop and the loop above it runs
	 * along k only (tile_v, channel_in: the m-inner case, LOWER_MINNER) */
	bool minner;
	/* ---- perforations ---- */
	int nperf;                        /* perforated loops */
	int last_perf;                    /* the innermost perforated loop, -1 */
	bool m_dense;                     /* no loop with m is perforated */
	int next_perf[PIR_MAX_LOOPS + 1]; /* the first perforated loop at or after i, nloops if none */
	/* ---- storage ---- */
	int64_t stride[PIR_MAX_LOOPS]; /* row = sum d_i stride[i]; stride[n-1] = 1 */
	int64_t nstored;               /* the stored weights: the product of every nnz */
} Nest;

/* Whether loop l is a plain dense loop along axis: one component, on
 * axis, not perforated. */
bool nest_loop_plain(const PirLoop *l, PirAxis axis);
/* Fills *nest from ir (nloops >= 1). */
void nest_of(const Pir *ir, Nest *nest);
/* The nnz product over loops from..to-1 (1 where from >= to): the place of
 * loop from-1's digit in a prefix of the storage index over loops ..to-1. */
int64_t nest_kept(const Nest *nest, int from, int to);
/* The len product over loops from..to-1 (1 where from >= to). */
int64_t nest_len(const Nest *nest, int from, int to);
/* The storage index of the weight with storage digits digit[0..n-1]. */
int64_t nest_encode(const Nest *nest, const int64_t *digit);
/* The storage digits of storage index row (0 <= row < nstored). */
void nest_decode(const Nest *nest, int64_t row, int64_t *digit);

#endif
