/* SPDX-License-Identifier: MIT */
/* op.c - the names of an operator's dtypes, layouts and activations, as the .pat
 * language, the reports and the tune log spell them. */
#include "op.h"

const char *const pat_dtype_names[PAT_NDTYPES] = {"f32", "f16", "bf16"};
const char *const pat_layout_names[PAT_NLAYOUTS] = {"kn", "nk"};
const char *const pat_act_names[PAT_NACTS] = {"none", "relu", "gelu_tanh", "gelu_erf", "silu"};
