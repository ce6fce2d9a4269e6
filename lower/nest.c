/* SPDX-License-Identifier: MIT */
/* nest.c - the facts of a kernel's loop nest, worked out once; see nest.h. */
#include "nest.h"

#include <string.h>

bool nest_loop_plain(const PirLoop *l, PirAxis axis)
{
	return !pir_loop_is_perforated(l) && l->ncomp == 1 && l->comp[0].axis == axis;
}

int64_t nest_kept(const Nest *nest, int from, int to)
{
	int64_t p = 1;
	for (int i = from; i < to; i++)
		p *= nest->ir->loops[i].nnz;
	return p;
}

int64_t nest_len(const Nest *nest, int from, int to)
{
	int64_t p = 1;
	for (int i = from; i < to; i++)
		p *= nest->ir->loops[i].len;
	return p;
}

void nest_of(const Pir *ir, Nest *nest)
{
	memset(nest, 0, sizeof *nest);
	const int n = ir->nloops;
	nest->ir = ir;
	nest->nloops = n;

	int split = n;
	while (split > 0 && !pir_loop_has_axis(&ir->loops[split - 1], PIR_AXIS_M))
		split--;
	nest->split = split;
	nest->run_kept = nest_kept(nest, split, n);
	nest->run_len = nest_len(nest, split, n);
	nest->run_dense = split < n;
	for (int i = split; i < n; i++)
		nest->run_dense &= !pir_loop_is_perforated(&ir->loops[i]);
	/* N:M pays only where a block of rows reads most of each group's X rows
	 * (measured: 2:4 gains ~30%, 1:4 and 1:16 lose) */
	nest->run_shared = nest->run_dense || (split < n && !pir_loop_is_perforated(&ir->loops[split]) &&
	                                        2 * nest->run_kept >= nest->run_len);

	nest->last_perf = -1;
	nest->m_dense = true;
	nest->next_perf[n] = n;
	for (int i = n - 1; i >= 0; i--) {
		const PirLoop *l = &ir->loops[i];
		const bool perf = pir_loop_is_perforated(l);
		nest->next_perf[i] = perf ? i : nest->next_perf[i + 1];
		if (perf) {
			nest->nperf++;
			if (nest->last_perf < 0)
				nest->last_perf = i;
			if (pir_loop_has_axis(l, PIR_AXIS_M))
				nest->m_dense = false;
		}
	}
	nest->tail = nest->last_perf > split ? nest->last_perf : split;

	nest->mloop = split > 0 && nest_loop_plain(&ir->loops[split - 1], PIR_AXIS_M) ? split - 1 : -1;
	nest->mloop_shares_k = nest->mloop >= 0 && nest->next_perf[nest->mloop + 1] == n;
	nest->m_above = -1;
	if (nest->mloop >= 0) {
		int j = nest->mloop - 1;
		while (j >= 0 && !pir_loop_has_axis(&ir->loops[j], PIR_AXIS_M))
			j--;
		nest->m_above = j;
	}
	nest->k_above = -1;
	if (split > 0) {
		int j = split - 2;
		while (j >= 0 && pir_loop_has_axis(&ir->loops[j], PIR_AXIS_M))
			j--;
		nest->k_above = j;
	}
	nest->minner = n >= 2 && nest_loop_plain(&ir->loops[n - 1], PIR_AXIS_M) &&
	               !pir_loop_has_axis(&ir->loops[n - 2], PIR_AXIS_M);

	int64_t s = 1;
	for (int i = n - 1; i >= 0; i--) {
		nest->stride[i] = s;
		s *= ir->loops[i].nnz;
	}
	nest->nstored = s;
}

int64_t nest_encode(const Nest *nest, const int64_t *digit)
{
	int64_t row = 0;
	for (int i = 0; i < nest->nloops; i++)
		row += digit[i] * nest->stride[i];
	return row;
}

void nest_decode(const Nest *nest, int64_t row, int64_t *digit)
{
	for (int i = nest->nloops - 1; i >= 0; i--) {
		const int64_t nnz = nest->ir->loops[i].nnz;
		digit[i] = row % nnz;
		row /= nnz;
	}
}
