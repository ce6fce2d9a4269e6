/* SPDX-License-Identifier: MIT */
/* legality.c - target legality of a PatternIR, separate from the passes.
 *
 * GPU rules (the Fractal paper's, which keep every output element owned by
 * one thread, so no atomics are needed):
 *   - no perforated spatial (m) loop nested inside a reduction (k) loop:
 *     otherwise different reduction steps would write different output rows;
 *   - no loop that joins m and k.
 * Length-1 loops iterate once and do not count.  The x86 backend has no
 * such rule.
 */
#include "../ir/pir.h"

#include <stdio.h>

int pir_check_gpu(const Pir *ir, PirViolation *out, int max)
{
	int n = 0;
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		bool m = pir_loop_spans_axis(l, PIR_AXIS_M), k = pir_loop_spans_axis(l, PIR_AXIS_K);
		if (m && k) {
			if (n < max) {
				out[n] = (PirViolation){PIR_VIOL_JOIN_MK, i, -1, ""};
				snprintf(out[n].text, sizeof out[n].text,
				         "loop '%s' joins m and k loops, which GPU targets do not allow",
				         l->name);
			}
			n++;
			continue;
		}
		if (!m || !pir_loop_is_perforated(l))
			continue;
		for (int j = 0; j < i; j++) {
			if (!pir_loop_spans_axis(&ir->loops[j], PIR_AXIS_K))
				continue;
			if (n < max) {
				out[n] = (PirViolation){PIR_VIOL_SPATIAL_IN_REDUCTION, i, j, ""};
				snprintf(out[n].text, sizeof out[n].text,
				         "perforated spatial loop '%s' is nested inside reduction loop '%s', "
				         "which GPU targets do not allow",
				         l->name, ir->loops[j].name);
			}
			n++;
			break;
		}
	}
	return n;
}
