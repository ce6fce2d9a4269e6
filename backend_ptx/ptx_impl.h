/* ptx_impl.h - what ptx.c and tc.c share inside the NVPTX backend. */
#ifndef PATC_PTX_IMPL_H
#define PATC_PTX_IMPL_H

#include "ptx.h"

/* The special register `name` (tid.x, ctaid.y, ...) as an i64; under
 * emulation, the global patc_emu_NAME (dots as underscores). */
LLVMValueRef ptx_sreg(LowerCtx *c, const char *name);

/* The tensor-core kernel body (tc.c). */
void ptx_tc_body(LowerCtx *c);

#endif
