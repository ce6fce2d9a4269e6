/* SPDX-License-Identifier: MIT */
/* pir_print.c - the two printed forms of PatternIR.
 *
 * Paper notation (one line, lossy): each loop as NAME_len, with ^nnz when
 * perforated, names upper-cased: `M0_96 K0_24^12 K1_8 M1_32 K2_4^2`.
 *
 * Text form (lossless, docs/pir.md), read back by pir_read.c:
 *   pir OP m=M k=K {
 *     split PARENT -> C1, C2 : F1, F2 [pad P]      provenance, in order
 *     join A, B -> AB
 *     loop NAME LEN [keep NNZ] = AXIS[EXT]*STRIDE [. AXIS[EXT]*STRIDE]... [condense on x]
 *   }
 * Loop lines appear in nest order, outermost first.
 */
#include "pir.h"
#include "../support/util.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void pir_print_paper(const Pir *ir, char *buf, size_t len)
{
	StrBuf sb;
	sb_init(&sb);
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		if (i)
			sb_putc(&sb, ' ');
		for (const char *p = l->name; *p; p++)
			sb_putc(&sb, (char)toupper((unsigned char)*p));
		sb_printf(&sb, "_%lld", (long long)l->len);
		if (pir_loop_is_perforated(l))
			sb_printf(&sb, "^%lld", (long long)l->nnz);
	}
	snprintf(buf, len, "%s", sb.data ? sb.data : "");
	sb_free(&sb);
}

static void print_names(StrBuf *sb, int n, char names[][PIR_NAME_MAX])
{
	for (int i = 0; i < n; i++)
		sb_printf(sb, "%s%s", i ? ", " : "", names[i]);
}

static void print_rel(StrBuf *sb, const PirRel *r)
{
	PirRel copy = *r; /* print_names takes non-const rows */
	if (r->kind == PIR_REL_SPLIT) {
		sb_printf(sb, "  split %s -> ", r->from[0]);
		print_names(sb, r->nto, copy.to);
		sb_puts(sb, " : ");
		for (int i = 0; i < r->nto; i++)
			sb_printf(sb, "%s%lld", i ? ", " : "", (long long)r->factor[i]);
		if (r->pad)
			sb_printf(sb, " pad %lld", (long long)r->pad);
	} else {
		sb_puts(sb, "  join ");
		print_names(sb, r->nfrom, copy.from);
		sb_printf(sb, " -> %s", r->to[0]);
	}
	sb_putc(sb, '\n');
}

char *pir_print_text(const Pir *ir)
{
	StrBuf sb;
	sb_init(&sb);
	sb_printf(&sb, "pir %s m=%lld k=%lld {\n", ir->op, (long long)ir->len[PIR_AXIS_M],
	          (long long)ir->len[PIR_AXIS_K]);
	for (int r = 0; r < ir->nrels; r++)
		print_rel(&sb, &ir->rels[r]);
	for (int i = 0; i < ir->nloops; i++) {
		const PirLoop *l = &ir->loops[i];
		sb_printf(&sb, "  loop %s %lld", l->name, (long long)l->len);
		if (pir_loop_is_perforated(l))
			sb_printf(&sb, " keep %lld", (long long)l->nnz);
		sb_puts(&sb, " =");
		for (int c = 0; c < l->ncomp; c++)
			sb_printf(&sb, "%s %s[%lld]*%lld", c ? " ." : "", pir_axis_names[l->comp[c].axis],
			          (long long)l->comp[c].extent, (long long)l->comp[c].stride);
		if (l->condensed)
			sb_puts(&sb, " condense on x");
		sb_putc(&sb, '\n');
	}
	sb_puts(&sb, "}\n");
	return sb_take(&sb);
}

void pir_percent_format(PirPercent p, char *buf, size_t len)
{
	int64_t scale = 1;
	for (int i = 0; i < p.decimals; i++)
		scale *= 10;
	if (p.decimals == 0)
		snprintf(buf, len, "%lld", (long long)p.num);
	else
		snprintf(buf, len, "%lld.%0*lld", (long long)(p.num / scale), p.decimals,
		         (long long)(p.num % scale));
}

void pir_prim_format(const PirPrim *p, char *buf, size_t len)
{
	StrBuf sb;
	sb_init(&sb);
	sb_puts(&sb, pir_prim_names[p->kind]);
	switch (p->kind) {
	case PIR_PRIM_SPLIT:
		sb_printf(&sb, " %s -> ", p->u.split.loop);
		for (int i = 0; i < p->u.split.n; i++)
			sb_printf(&sb, "%s%s", i ? ", " : "", p->u.split.names[i]);
		sb_puts(&sb, " : ");
		for (int i = 0; i < p->u.split.n; i++) {
			if (p->u.split.factor[i])
				sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)p->u.split.factor[i]);
			else
				sb_printf(&sb, "%s_", i ? ", " : "");
		}
		if (p->u.split.pad && p->u.split.pad_amount >= 0)
			sb_printf(&sb, " pad %lld", (long long)p->u.split.pad_amount);
		else if (p->u.split.pad)
			sb_puts(&sb, " pad");
		break;
	case PIR_PRIM_REORDER:
		for (int i = 0; i < p->u.reorder.n; i++)
			sb_printf(&sb, "%s%s", i ? ", " : " ", p->u.reorder.loops[i]);
		break;
	case PIR_PRIM_JOIN:
		for (int i = 0; i < p->u.join.n; i++)
			sb_printf(&sb, "%s%s", i ? ", " : " ", p->u.join.loops[i]);
		sb_printf(&sb, " -> %s", p->u.join.name);
		break;
	case PIR_PRIM_PERFORATE:
		if (p->u.perforate.is_percent) {
			char pct[64];
			pir_percent_format(p->u.perforate.percent, pct, sizeof pct);
			sb_printf(&sb, " %s keep %s%%", p->u.perforate.loop, pct);
		}
		else
			sb_printf(&sb, " %s keep %lld", p->u.perforate.loop, (long long)p->u.perforate.keep);
		break;
	case PIR_PRIM_CONDENSE:
		sb_printf(&sb, " %s on x", p->u.condense.loop);
		break;
	case PIR_NPRIMS:
		break;
	}
	snprintf(buf, len, "%s", sb.data);
	sb_free(&sb);
}
