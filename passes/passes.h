/* SPDX-License-Identifier: MIT */
/* passes.h - the primitive passes and their registration table.
 *
 * Each primitive lives in its own file and has the signature PirPassFn: it
 * works on a scratch copy of the IR, so refusing never needs undoing, and
 * pir_apply (passes.c) installs the copy only when the pass succeeded and the
 * verifier accepts the result.
 */
#ifndef PATC_PASSES_H
#define PATC_PASSES_H

#include "../ir/pir.h"

typedef bool (*PirPassFn)(Pir *ir, const PirPrim *p, PirReason *why);

#define X(e, name, fn) bool fn(Pir *ir, const PirPrim *p, PirReason *why);
#include "../ir/primitives.def"
#undef X

extern const PirPassFn pir_passes[PIR_NPRIMS];

/* Shared helpers for pass files. */
bool pass_refuse(PirReason *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pass_hint(PirReason *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pass_warn(PirReason *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Finds loop `name` or refuses with "no loop named ..." listing the loops. */
int pass_loop(const Pir *ir, const char *name, PirReason *why);
/* Refuses when `name` is not a valid fresh loop name. */
bool pass_fresh_name(const Pir *ir, const char *name, PirReason *why);

#endif
