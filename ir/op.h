/* SPDX-License-Identifier: MIT */
/* op.h - an operator apart from its pattern: the product's shape, the
 * element type of its weights and X, and the layout of X and C.
 *
 * C = W X with W an M x K weight (the pattern covers it) and N tokens.
 * Layout kn: X is K x N and C is M x N (row-major); layout nk, the layout of
 * torch.nn.Linear: X is N x K and C is N x M, so that C = X W^T.
 */
#ifndef PATC_IR_OP_H
#define PATC_IR_OP_H

#include <stdint.h>

typedef enum PatDtype { PAT_F32, PAT_F16, PAT_BF16, PAT_NDTYPES } PatDtype;
typedef enum PatLayout { PAT_LAYOUT_KN, PAT_LAYOUT_NK, PAT_NLAYOUTS } PatLayout;
extern const char *const pat_dtype_names[PAT_NDTYPES];   /* f32 f16 bf16 */
extern const char *const pat_layout_names[PAT_NLAYOUTS]; /* kn nk */

/* One operator's shape: what a kernel is specialised on besides its
 * pattern.  dtype is the type the weights and X are given in (f16 and
 * bf16 compute on the tensor cores where a backend has them, in f32 on
 * their rounded values elsewhere; C is f32 always). */
typedef struct OpShape {
	int64_t M, K, N;
	PatDtype dtype;
	PatLayout layout;
} OpShape;

#endif
