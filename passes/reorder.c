/* SPDX-License-Identifier: MIT */
/* reorder.c - `reorder A, B, C ...`: permute loops.
 *
 * A partial list takes the nest positions of the listed loops, in listed
 * order, and leaves every other loop where it is (Halide/TVM semantics).
 * Reordering changes the storage order of the packed tensor, never the mask
 * of a pattern whose perforations are decided afterwards.
 */
#include "passes.h"

#include <string.h>

bool pass_reorder(Pir *ir, const PirPrim *p, PirReason *why)
{
	int n = p->u.reorder.n, pos[PIR_MAX_LOOPS];
	if (n < 2)
		return pass_refuse(why, "reorder needs at least two loops");
	for (int i = 0; i < n; i++) {
		if ((pos[i] = pass_loop(ir, p->u.reorder.loops[i], why)) < 0)
			return false;
		for (int j = 0; j < i; j++)
			if (pos[j] == pos[i]) {
				pir_name_copy(why->subject, p->u.reorder.loops[i]);
				return pass_refuse(why, "reorder lists loop '%s' twice",
				                   p->u.reorder.loops[i]);
			}
	}
	/* The listed loops, in listed order, go to their positions sorted. */
	int slots[PIR_MAX_LOOPS];
	memcpy(slots, pos, (size_t)n * sizeof *pos);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && slots[j - 1] > slots[j]; j--) {
			int t = slots[j];
			slots[j] = slots[j - 1];
			slots[j - 1] = t;
		}
	PirLoop moved[PIR_MAX_LOOPS];
	for (int i = 0; i < n; i++)
		moved[i] = ir->loops[pos[i]];
	for (int i = 0; i < n; i++)
		ir->loops[slots[i]] = moved[i];
	return true;
}
