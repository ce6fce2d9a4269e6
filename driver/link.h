/* SPDX-License-Identifier: MIT */
/* link.h - `--emit=so`: a shared library beside what -o DIR writes.
 *
 * patc emits objects and C through LLVM; linking is the system's.  The C
 * compiler named by $CC (words split at blanks; default cc) links
 * DIR/BASE.o (x86-64: the kernels and their packed weights, compiled PIC) or
 * compiles DIR/BASE_launch.c (GPU targets: the launcher, which loads
 * BASE.ptx and BASE.bin at run time) into DIR/BASE.so, through a temporary
 * file in DIR (BASE.so.tmp.XXXXXX).  Called inside the group (outfile.h)
 * that writes those files, it reads them under their temporary names
 * (outfile_pending) and the library is renamed into place with them: a
 * failed link leaves the earlier set whole, its library included.
 */
#ifndef PATC_LINK_H
#define PATC_LINK_H

#include <stdbool.h>

enum { LINK_ERR_MAX = 6144 }; /* room for a path and $CC */

/* Links DIR/BASE.so; 0, or PATC_EXIT_ENV with err set (no compiler, a
 * failed link: its own messages went to stderr).  check: C compiled into
 * the library beside the object (x86: the constructor that checks the CPU,
 * x86_cpu_check_c), through a temporary file in DIR removed after; NULL:
 * none. */
int link_shared(const char *dir, const char *base, bool gpu, const char *check, char err[LINK_ERR_MAX]);

#endif
