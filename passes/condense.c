/* SPDX-License-Identifier: MIT */
/* condense.c - `condense L on x`: a kernel-side primitive.
 *
 * Marks that the rows of the dense operand X addressed by L's kept indices
 * are gathered into contiguous storage (shared memory on GPUs, a packed
 * buffer on CPUs) so inner loops read them densely.  It changes no mask.
 * Only a perforated loop over k addresses scattered rows of X.
 */
#include "passes.h"

bool pass_condense(Pir *ir, const PirPrim *p, PirReason *why)
{
	const char *name = p->u.condense.loop;
	int li = pass_loop(ir, name, why);
	if (li < 0)
		return false;
	PirLoop *l = &ir->loops[li];
	pir_name_copy(why->subject, name);
	if (!pir_loop_has_axis(l, PIR_AXIS_K))
		return pass_refuse(why, "cannot condense loop '%s': it iterates over m, and condense "
		                        "gathers rows of x addressed by k", name);
	if (!pir_loop_is_perforated(l)) {
		pass_hint(why, "perforate '%s' first", name);
		return pass_refuse(why, "cannot condense loop '%s': it is dense, there is nothing to "
		                        "gather", name);
	}
	if (l->condensed)
		return pass_refuse(why, "loop '%s' is already condensed", name);
	l->condensed = true;
	why->subject[0] = 0;
	return true;
}
