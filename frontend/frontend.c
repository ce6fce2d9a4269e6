/* SPDX-License-Identifier: MIT */
/* frontend.c - the front end's stages in order: source.c loads the program
 * (parse, includes), sema.c checks it and builds each op's PatternIR. */
#include "frontend.h"

int frontend_compile(const FrontendOptions *opt, Diag *diag, Arena *arena, const char *path,
                     const char *text, Program *prog)
{
	Item *items = NULL;
	prog->nops = 0;
	prog->ops = NULL;
	int errors = frontend_load(opt, diag, arena, path, text, &items);
	if (errors)
		return errors; /* no semantic checks on text that did not parse */
	return sema_run(opt, diag, arena, items, prog);
}
