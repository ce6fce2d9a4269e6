/* SPDX-License-Identifier: MIT */
/* emit_weights.h - writing the packed weights of a program. */
#ifndef PATC_EMIT_WEIGHTS_H
#define PATC_EMIT_WEIGHTS_H

#include "../prune/prune.h"

/* Packs every op (pruned[i] belongs to prog->ops[i]) into one safetensors
 * file at path, atomically. */
bool emit_weights(const char *path, const Program *prog, const PruneOp *pruned, bool with_mask,
                  const char *version, char err[TENSOR_ERR_MAX]);

#endif
