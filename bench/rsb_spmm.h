/* SPDX-License-Identifier: MIT */
/* rsb_spmm.h - librsb as a baseline of cpu_bench (rsb_spmm.c). */
#ifndef PATC_BENCH_RSB_SPMM_H
#define PATC_BENCH_RSB_SPMM_H

#include <stdbool.h>
#include <stdint.h>

/* librsb's library state; false where it does not start. */
bool rsb_bench_init(void);
void rsb_bench_exit(void);

/* W (M x K, zeros where pruned) times X (K x N) into C (M x N, row-major)
 * with `threads` threads: librsb's matrix of W's nonzeros, autotuned for
 * this product (rsb_tune_spmm, not timed), timed as util_time_us times (the
 * median after a warm-up, at least reps calls); C holds the product
 * afterwards.  -1 on failure (out of memory, a librsb error). */
double rsb_spmm_us(const float *w, int64_t M, int64_t K, const float *x, int64_t N, int threads, int reps,
                   float *c);

#endif
