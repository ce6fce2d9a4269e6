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

#include <stdbool.h>
#include <stdint.h>

typedef enum PatDtype { PAT_F32, PAT_F16, PAT_BF16, PAT_NDTYPES } PatDtype;
typedef enum PatLayout { PAT_LAYOUT_KN, PAT_LAYOUT_NK, PAT_NLAYOUTS } PatLayout;
extern const char *const pat_dtype_names[PAT_NDTYPES];   /* f32 f16 bf16 */
extern const char *const pat_layout_names[PAT_NLAYOUTS]; /* kn nk */

/* The activation an op's epilogue applies to each element of C: none,
 * max(x, 0), GELU in its tanh form (PyTorch's approximate='tanh') and in
 * its erf form (the exact one, PyTorch's default), and SiLU x / (1 + e^-x). */
typedef enum PatAct { PAT_ACT_NONE, PAT_ACT_RELU, PAT_ACT_GELU_TANH, PAT_ACT_GELU_ERF, PAT_ACT_SILU, PAT_NACTS } PatAct;
extern const char *const pat_act_names[PAT_NACTS]; /* none relu gelu_tanh gelu_erf silu */

/* One operator's shape: what a kernel is specialised on besides its
 * pattern.  dtype is the type the weights and X are given in (f16 and
 * bf16 compute on the tensor cores where a backend has them, in f32 on
 * their rounded values elsewhere; C is f32 always).
 *
 * The epilogue, fused into the kernel's store of C (cuBLASLt's order):
 *
 *   C = act(W X + bias (+ C, where accumulate))
 *
 * bias (M floats, one per output feature, added to every token) is a
 * pointer the kernel takes at the call, NULL for none; act and accumulate
 * are compiled in.  A residual connection is accumulate with act none. */
typedef struct OpShape {
	int64_t M, K, N;
	PatDtype dtype;
	PatLayout layout;
	PatAct act;
	bool accumulate;
} OpShape;

/* Whether the kernel of s does more at its store than write W X: an
 * activation or accumulate (a bias is known only at the call). */
static inline bool op_epilogue_fixed(const OpShape *s) { return s->act != PAT_ACT_NONE || s->accumulate; }

#endif
