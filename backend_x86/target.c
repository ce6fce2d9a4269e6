/* SPDX-License-Identifier: MIT */
/* target.c - the x86 targets (see x86.h): the x86-64 psABI levels and the
 * older names, the CPU LLVM compiles each for, the features each needs of
 * the CPU that runs it (checked here before --run and --search, and by the
 * shared library when it is loaded: x86_cpu_check_c writes that check). */
#define _POSIX_C_SOURCE 200809L
#include "x86.h"
#include "../support/util.h"

#include <llvm-c/TargetMachine.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A CPU feature: LLVM's name (as the host's features list it, and as GCC's
 * __builtin_cpu_supports and messages name it), where CPUID reports it, and
 * the register state XCR0 must show enabled by the OS for it. */
typedef struct Feature {
	const char *name;
	unsigned leaf; /* 1, 7 (subleaf 0) or 0x80000001 */
	char reg;      /* 'b', 'c' */
	unsigned char bit;
	unsigned xcr0;
} Feature;

enum { XCR0_AVX = 0x6, XCR0_AVX512 = 0xe6 }; /* SSE+AVX state; and opmask, ZMM_Hi256, Hi16_ZMM */

/* What LLVM's x86-64-vN CPUs may emit beyond x86-64 (SSE2): each level's
 * features after the one's below it (sse4.2 brings crc32). */
static const Feature features[] = {
	/* v2 */
	{"sse3", 1, 'c', 0, 0},
	{"ssse3", 1, 'c', 9, 0},
	{"sse4.1", 1, 'c', 19, 0},
	{"sse4.2", 1, 'c', 20, 0},
	{"popcnt", 1, 'c', 23, 0},
	{"cx16", 1, 'c', 13, 0},
	{"sahf", 0x80000001, 'c', 0, 0},
	/* v3 */
	{"avx", 1, 'c', 28, XCR0_AVX},
	{"avx2", 7, 'b', 5, XCR0_AVX},
	{"fma", 1, 'c', 12, XCR0_AVX},
	{"f16c", 1, 'c', 29, XCR0_AVX},
	{"bmi", 7, 'b', 3, 0},
	{"bmi2", 7, 'b', 8, 0},
	{"lzcnt", 0x80000001, 'c', 5, 0},
	{"movbe", 1, 'c', 22, 0},
	{"xsave", 1, 'c', 26, 0},
	/* v4 */
	{"avx512f", 7, 'b', 16, XCR0_AVX512},
	{"avx512bw", 7, 'b', 30, XCR0_AVX512},
	{"avx512cd", 7, 'b', 28, XCR0_AVX512},
	{"avx512dq", 7, 'b', 17, XCR0_AVX512},
	{"avx512vl", 7, 'b', 31, XCR0_AVX512},
};
enum { NFEATURES = sizeof features / sizeof *features };

/* The levels, lowest first: each needs features[0..nfeat). */
static const X86Level levels[] = {
	{"x86-64-v2", "SSE4.2", "Intel since Nehalem, AMD since Bulldozer", 4, 7},
	{"x86-64-v3", "AVX2, FMA", "Intel Core and Xeon since Haswell, AMD since Zen", 8, 16},
	{"x86-64-v4", "AVX-512", "Intel Xeon since Skylake-SP, AMD since Zen 4", 16, NFEATURES},
};
enum { NLEVELS = sizeof levels / sizeof *levels };

/* The x86 targets that name a CPU: the levels, and the older names of
 * this backend, whose CPUs have their level's features and more (which
 * the kernels do not use: AES, RDRAND and the like). */
static const struct {
	const char *target, *cpu;
	int level; /* in levels[] */
} named[] = {
	{"x86-64-v2", "x86-64-v2", 0},
	{"x86-64-v3", "x86-64-v3", 1},
	{"x86-64-v4", "x86-64-v4", 2},
	{"x86-64-avx2", "haswell", 1},
	{"x86-64-avx512", "skylake-avx512", 2},
};
enum { NNAMED = sizeof named / sizeof *named };

const char *x86_target_cpu(const char *target)
{
	for (int i = 0; i < NNAMED; i++)
		if (!strcmp(named[i].target, target))
			return named[i].cpu;
	return NULL;
}

/* The level of a CPU x86_target_cpu names, or NULL. */
static const X86Level *cpu_level(const char *cpu)
{
	for (int i = 0; i < NNAMED; i++)
		if (!strcmp(named[i].cpu, cpu))
			return &levels[named[i].level];
	return NULL;
}

/* PATC_TEST_CPU_LACKS=F[,F...]: the host is taken to lack those features
 * (tests only). */
static bool test_lacks(const char *name)
{
	const char *v = getenv("PATC_TEST_CPU_LACKS");
	const size_t n = strlen(name);
	for (const char *p = v; p && *p; p += strcspn(p, ","), p += *p == ',') {
		if (strcspn(p, ",") == n && !strncmp(p, name, n))
			return true;
	}
	return false;
}

/* Whether LLVM's host features (a list of +x and -x) hold +name. */
static bool host_has(const char *feat, const char *name)
{
	const size_t n = strlen(name);
	for (const char *at = feat; (at = strstr(at, name)); at += n)
		if (at > feat && at[-1] == '+' && (at - 1 == feat || at[-2] == ',') && (!at[n] || at[n] == ','))
			return !test_lacks(name); /* (not "+avx512f" inside "+avx512fp16") */
	return false;
}

/* The first of level lv's features the host lacks, or NULL. */
static const char *host_lacks_level(const X86Level *lv)
{
	char *feat = LLVMGetHostCPUFeatures();
	const char *lacks = NULL;
	for (int i = 0; i < lv->nfeat && !lacks; i++)
		if (!host_has(feat, features[i].name))
			lacks = features[i].name;
	LLVMDisposeMessage(feat);
	return lacks;
}

const char *x86_host_lacks(const char *cpu)
{
	const X86Level *lv = cpu ? cpu_level(cpu) : NULL;
	return lv ? host_lacks_level(lv) : NULL;
}

const X86Level *x86_host_level(void)
{
	const X86Level *best = NULL;
	for (int i = 0; i < NLEVELS && !host_lacks_level(&levels[i]); i++)
		best = &levels[i];
	return best;
}

const X86Level *x86_target_level(const char *target)
{
	const char *cpu = x86_target_cpu(target);
	return cpu ? cpu_level(cpu) : x86_host_level();
}

int x86_cpu_width(const char *cpu)
{
	const X86Level *lv = cpu_level(cpu);
	return lv ? lv->width : 4;
}

void x86_target_needs(const char *target, char *buf, size_t len)
{
	const X86Level *lv = x86_target_level(target);
	const char *cpu = x86_target_cpu(target);
	char *host = cpu ? NULL : LLVMGetHostCPUName();
	if (!lv)
		snprintf(buf, len, "x86-64 (compiled for %s, the CPU %.40s)", target, host ? host : cpu);
	else if (cpu && !strcmp(cpu, lv->name))
		snprintf(buf, len, "%s (%s)", lv->name, lv->isa);
	else
		snprintf(buf, len, "%s (%s) at least (compiled for %s, the CPU %.40s)", lv->name, lv->isa, target,
		         host ? host : cpu);
	if (host)
		LLVMDisposeMessage(host);
}

void x86_cpu_check_c(StrBuf *out, const char *base, const char *target)
{
	const X86Level *lv = x86_target_level(target);
	if (!lv)
		return; /* (native on a host below x86-64-v2: nothing beyond x86-64 to check) */
	char needs[256];
	x86_target_needs(target, needs, sizeof needs);
	sb_printf(out,
	          "/* %s.so's CPU check, generated by patc: the library's code needs\n"
	          " * %s.  Where the CPU lacks a feature of it, loading the\n"
	          " * library says so and ends the process (status 127) before an illegal\n"
	          " * instruction could. */\n"
	          "#define _POSIX_C_SOURCE 200809L\n"
	          "#include <cpuid.h>\n#include <stdio.h>\n#include <string.h>\n#include <unistd.h>\n\n"
	          "__attribute__((constructor)) static void patc_check_cpu(void)\n{\n"
	          "\t/* each feature: its CPUID leaf, register (1: ebx, 2: ecx) and bit, the\n"
	          "\t * register state the OS must enable for it (XCR0), and 1 where a test\n"
	          "\t * made it missing (PATC_TEST_CPU_LACKS) */\n"
	          "\tstatic const struct { const char *name; unsigned leaf; int reg, bit; unsigned xcr0, lacks; } "
	          "need[] = {\n",
	          base, needs);
	for (int i = 0; i < lv->nfeat; i++) {
		const Feature *f = &features[i];
		sb_printf(out, "\t\t{\"%s\", 0x%x, %d, %d, 0x%x, %d},\n", f->name, f->leaf, f->reg == 'b' ? 1 : 2, f->bit,
		          f->xcr0, test_lacks(f->name));
	}
	sb_printf(out,
	          "\t};\n"
	          "\t/* leaf 1, 7 (subleaf 0) and 0x80000001, eax to edx; a leaf past the\n"
	          "\t * CPU's highest stays 0 */\n"
	          "\tunsigned regs[3][4] = {{0}}, xcr0 = 0;\n"
	          "\tconst unsigned max = __get_cpuid_max(0, NULL), ext = __get_cpuid_max(0x80000000, NULL);\n"
	          "\tif (max >= 1)\n\t\t__cpuid(1, regs[0][0], regs[0][1], regs[0][2], regs[0][3]);\n"
	          "\tif (max >= 7)\n\t\t__cpuid_count(7, 0, regs[1][0], regs[1][1], regs[1][2], regs[1][3]);\n"
	          "\tif (ext >= 0x80000001)\n"
	          "\t\t__cpuid(0x80000001, regs[2][0], regs[2][1], regs[2][2], regs[2][3]);\n"
	          "\tif (regs[0][2] >> 27 & 1) { /* OSXSAVE: XGETBV tells the state the OS saves */\n"
	          "\t\tunsigned hi;\n"
	          "\t\t__asm__ volatile(\"xgetbv\" : \"=a\"(xcr0), \"=d\"(hi) : \"c\"(0));\n"
	          "\t\t(void)hi;\n"
	          "\t}\n"
	          "\tchar lacks[512] = \"\";\n"
	          "\tfor (size_t i = 0; i < sizeof need / sizeof *need; i++) {\n"
	          "\t\tconst unsigned *r = regs[need[i].leaf == 1 ? 0 : need[i].leaf == 7 ? 1 : 2];\n"
	          "\t\tif (need[i].lacks || !(r[need[i].reg] >> need[i].bit & 1) ||\n"
	          "\t\t    (xcr0 & need[i].xcr0) != need[i].xcr0) {\n"
	          "\t\t\tif (lacks[0])\n\t\t\t\tstrcat(lacks, \", \");\n"
	          "\t\t\tstrcat(lacks, need[i].name);\n"
	          "\t\t}\n"
	          "\t}\n"
	          "\tif (lacks[0]) {\n"
	          "\t\tfprintf(stderr, \"%s.so needs %s; this CPU lacks %%s\\n\", lacks);\n"
	          "\t\t_exit(127);\n"
	          "\t}\n"
	          "}\n",
	          base, needs);
}
