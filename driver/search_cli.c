/* SPDX-License-Identifier: MIT */
/* search_cli.c - `patc FILE.pat --search`; see search_cli.h. */
#define _POSIX_C_SOURCE 200809L
#include "search_cli.h"
#include "../backend_ptx/cuda.h"
#include "../backend_x86/x86.h"
#include "../support/outfile.h"
#include "../weights/tensor.h"
#include "emit_cuda.h"
#include "emit_kernels.h"
#include "emit_weights.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Ends the log with a newline if a killed search left its last line cut
 * short, so that the next line starts on its own; creates it empty where
 * there is none. */
static bool log_terminated(const char *path)
{
	/* opened for appending first: a directory, or a file that cannot be
	 * appended to, fails here and not at every measurement (an empty file
	 * is made where none is: a shard that measures nothing still leaves
	 * one for merge) */
	FILE *a = fopen(path, "a");
	if (!a)
		return false;
	FILE *f = fopen(path, "r");
	int last = EOF;
	if (f && fseek(f, -1, SEEK_END) == 0)
		last = fgetc(f);
	if (f)
		fclose(f);
	bool ok = last == EOF || last == '\n' || fputc('\n', a) != EOF;
	return fclose(a) == 0 && ok;
}

/* The standard library's patterns at the target density for an M x K op,
 * as reference points: their IRs in refs and names in names (arena). */
static int reference_patterns(const SearchCli *c, const OpResult *op, double sparsity, Arena *arena, Pir *refs,
                              const char **names, int max)
{
	char d[32], d2[32];
	snprintf(d, sizeof d, "%.6g%%", 100 * (1 - sparsity));
	snprintf(d2, sizeof d2, "%.6g%%", 200 * (1 - sparsity));
	const double dens = 1 - sparsity;
	const char *nm = fabs(dens - 0.5) < 1e-9      ? "nm(2, 4)"
	                 : fabs(dens - 0.25) < 1e-9   ? "nm(1, 4)"
	                 : fabs(dens - 0.125) < 1e-9  ? "nm(1, 8)"
	                 : fabs(dens - 0.0625) < 1e-9 ? "nm(1, 16)"
	                                              : NULL;
	const char *forms[] = {"block(8, 8, %s)", "block(32, 32, %s)", "tile_v(32, %s)", "tile_h(32, %s)",
	                       "channel(%s)", "row_balanced(%s)", "hybrid(32, 32, %s, 2, 4)", nm};
	int n = 0;
	for (size_t i = 0; i < sizeof forms / sizeof *forms && n < max; i++) {
		if (!forms[i] || (strstr(forms[i], "hybrid") && 2 * dens > 1))
			continue;
		char *name = arena_printf(arena, forms[i], strstr(forms[i], "hybrid") ? d2 : d);
		char *text = arena_printf(arena,
		                          "include \"all.pat\";\nop %s: spmm(M = %lld, K = %lld, N = %lld) { apply %s; }\n",
		                          op->name, (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N, name);
		Diag diag;
		FILE *sink = fopen("/dev/null", "w");
		diag_init(&diag, arena, sink ? sink : stderr);
		FrontendOptions fo = {.stdlib_dir = c->stdlib, .gpu = c->gpu, .target = c->target};
		Program p;
		bool ok = frontend_compile(&fo, &diag, arena, "reference.pat", text, &p) == 0 && p.nops == 1 && p.ops[0].ok;
		if (sink)
			fclose(sink);
		if (!ok)
			continue; /* it does not fit this shape or target */
		refs[n] = *p.ops[0].ir;
		names[n++] = name;
	}
	return n;
}

/* The kernel files of an earlier search in dir: the names its report.json
 * lists under "kernel" (plain names, no path), at most 8.  None where dir
 * has no report, or one from before the list was written. */
static int earlier_kernel(const char *dir, char names[8][160])
{
	char path[4096];
	snprintf(path, sizeof path, "%s/report.json", dir);
	size_t len;
	char *text = util_read_file_max(path, (size_t)256 << 20, &len); /* (none where it is no report patc wrote) */
	cJSON *root = text ? cJSON_Parse(text) : NULL;
	free(text);
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "kernel"), *f;
	int n = 0;
	cJSON_ArrayForEach(f, files) {
		const char *name = cJSON_GetStringValue(f);
		if (n < 8 && name && name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 160)
			snprintf(names[n++], 160, "%s", name);
	}
	cJSON_Delete(root);
	return n;
}

/* The earlier search's kernel files (old) that this one does not write
 * again (now, NULL-terminated), removed at the end of the output group, so
 * that the reports never sit beside a kernel they do not describe. */
static void remove_stale_kernel(const char *dir, char old[8][160], int nold, const char *const *now)
{
	for (int i = 0; i < nold; i++) {
		bool kept = false;
		for (int j = 0; now && now[j]; j++)
			kept |= !strcmp(old[i], now[j]);
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, old[i]);
		if (!kept)
			outfile_group_remove(path);
	}
}

/* Whether the GPU of target sm can measure: the driver opened in a child
 * process (CUDA must not be initialised in a process that forks the
 * measuring children), its device's name into name.  Says why not. */
static bool gpu_probe(const char *sm, bool emulate, char *name, size_t len)
{
	if (emulate) {
		snprintf(name, len, "host emulator");
		return true;
	}
	int fd[2];
	if (pipe(fd) != 0) {
		fprintf(stderr, "patc: error: pipe: %s\n", strerror(errno));
		return false;
	}
	fflush(NULL);
	const pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]), close(fd[1]);
		fprintf(stderr, "patc: error: fork: %s\n", strerror(errno));
		return false;
	}
	if (pid == 0) {
		util_die_with_parent(parent);
		close(fd[0]);
		char msg[CUDA_ERR_MAX + 8];
		Cuda *cu = cuda_open(msg + 1);
		msg[0] = cu ? '+' : '-';
		if (cu) {
			int want = atoi(sm + 3), have = cuda_compute_capability(cu);
			snprintf(msg + 1, sizeof msg - 1, "%s", cuda_device_name(cu));
			if (want > have) {
				msg[0] = '-';
				snprintf(msg + 1, sizeof msg - 1, "the GPU (%.200s) has compute capability %d.%d, under %d.%d",
				         cuda_device_name(cu), have / 10, have % 10, want / 10, want % 10);
			}
			cuda_close(cu);
		}
		ssize_t wr = write(fd[1], msg, strlen(msg) + 1);
		_exit(wr > 0 ? 0 : 1);
	}
	close(fd[1]);
	char msg[CUDA_ERR_MAX + 8] = "";
	ssize_t got = read(fd[0], msg, sizeof msg - 1);
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got > 1 && msg[0] == '+') {
		snprintf(name, len, "%.200s", msg + 1);
		return true;
	}
	fprintf(stderr, "patc: error: --search --target=%s measures candidates on the GPU, and there is none to use: "
	                "%s; add --no-measure to rank them by the cost model alone\n",
	        sm, got > 1 ? msg + 1 : "the probe failed");
	return false;
}

/* Writes the search's best kernel b as -o writes it for the target (inside
 * the caller's group of output files), its files named in out; returns
 * PATC_EXIT_OK or the error's code. */
static int write_kernel(const SearchCli *c, const OpResult *op, const PruneOp *p, const SearchCandidate *b,
                        StrBuf *out)
{
	OpResult best = *op;
	Pir ir = b->ir;
	best.ir = &ir;
	PruneOp bp = *p;
	memset(&bp.mask, 0, sizeof bp.mask);
	prune_mask_build(&ir, p->imp, op->shape.M, op->shape.K, op->rank, &bp.mask);
	/* from the full mask (the search may have scored it on block sums: the same numbers) */
	prune_metrics(&ir, &bp.mask, p->imp, NULL, p->w, NULL, 0, op->shape.M, op->shape.K, &bp.metrics);
	bp.values = NULL;
	prune_op_pack(&ir, &bp); /* (this mask's) */
	Program one = {1, &best};
	const KernelFiles kf = {c->dir, c->base, c->input, c->target, c->gpu, &one, &bp, &b->sched, false, false, false};
	const int rc = emit_kernels(&kf);
	if (rc == PATC_EXIT_OK && c->gpu)
		sb_printf(out, "  kernel: %s/%s.ptx, %s/%s.h, %s/%s_launch.c, %s/%s.bin, %s/%s.safetensors\n", c->dir,
		          c->base, c->dir, c->base, c->dir, c->base, c->dir, c->base, c->dir, c->base);
	else if (rc == PATC_EXIT_OK)
		sb_printf(out, "  kernel: %s/%s.o, %s/%s.h, %s/%s.safetensors\n", c->dir, c->base, c->dir, c->base, c->dir,
		          c->base);
	prune_mask_free(&bp.mask);
	free(bp.values);
	return rc;
}

/* The op the search is for: --op's, else the one with weights; its index
 * into *op_at, or an error said. */
static int pick_op(const SearchCli *c, const Program *prog, int *op_at)
{
	int which = -1, with_weights = 0;
	for (int i = 0; i < prog->nops; i++) {
		if (prog->ops[i].weights.kind == WEIGHTS_NONE)
			continue;
		with_weights++;
		if (c->op ? !strcmp(prog->ops[i].name, c->op) : which < 0)
			which = i;
	}
	if (which < 0 || (!c->op && with_weights > 1)) {
		bool named = false; /* (an op of that name without weights: the input's, as below) */
		for (int i = 0; c->op && i < prog->nops; i++)
			named = named || !strcmp(prog->ops[i].name, c->op);
		if (named) {
			fprintf(stderr, "patc: error: --op=%s: op '%s' in '%s' has no weights (weights = ...)\n", c->op,
			        c->op, c->input);
			return PATC_EXIT_INPUT;
		}
		if (c->op)
			fprintf(stderr, "patc: error: --op=%s: no op of that name with weights in '%s'\n", c->op, c->input);
		else if (with_weights > 1)
			fprintf(stderr, "patc: error: '%s' has %d ops with weights; --search takes one: name it with "
			                "--op=NAME\n",
			        c->input, with_weights);
		else { /* (the input's: as --run and --emit=weights say of an op without weights) */
			fprintf(stderr, "patc: error: --search needs an op with weights in '%s' (weights = ...)\n",
			        c->input);
			return PATC_EXIT_INPUT;
		}
		return PATC_EXIT_USAGE;
	}
	*op_at = which;
	return PATC_EXIT_OK;
}

/* The cost model (before the directory: a bad one leaves none):
 * --cost-model's, else the standard library's for x86, else the analytic
 * one (model->gbt NULL); its file in model_path[4096] ("" for none). */
static int load_model(const SearchCli *c, CostModel *model, char *model_path)
{
	char err[256];
	*model = (CostModel){0};
	model_path[0] = 0;
	if (c->cost_model && strcmp(c->cost_model, "analytic"))
		snprintf(model_path, 4096, "%s", c->cost_model);
	else if (!c->cost_model && !c->gpu && c->stdlib) {
		snprintf(model_path, 4096, "%s/cost-x86-64.model", c->stdlib);
		struct stat mst;
		if (lstat(model_path, &mst) != 0 && errno == ENOENT)
			model_path[0] = 0; /* none installed: the analytic one */
		/* (one there that cannot be read: cost_model_load says why, by strerror) */
	}
	if (model_path[0] && !cost_model_load(model_path, model, err)) {
		fprintf(stderr, "patc: error: %s\n", err);
		return PATC_EXIT_INPUT;
	}
	/* learned on a CPU, a model ranks for any x86 target (the ISAs differ
	 * little beside the kernels' structure); on a GPU, for that GPU only */
	const bool model_gpu = !strncmp(model->target, "sm_", 3);
	if (model->gbt && model->target[0] && (model_gpu != c->gpu || (c->gpu && strcmp(model->target, c->target)))) {
		char qm[UTIL_QUOTE_BUF], qt[UTIL_QUOTE_BUF];
		fprintf(stderr, "patc: error: the cost model '%s' was learned on measurements for target %s and cannot "
		                "rank candidates for --target=%s: train one on this target's tuning logs (`patc "
		                "train-cost-model LOG... --target=%s -o MODEL`) or give --cost-model=analytic\n",
		        util_quote(model_path, qm), util_quote(model->target, qt), c->target, c->target);
		cost_model_free(model);
		return PATC_EXIT_INPUT;
	}
	return PATC_EXIT_OK;
}

/* The best kernel (where there is one) and the reports that name it,
 * into c->dir as one group of files (outfile.h), the kernel's line into
 * kline. */
static int write_outputs(const SearchCli *c, const OpResult *op, const PruneOp *p, const SearchSettings *s,
                         const SearchResult *r, StrBuf *kline)
{
	int rc = PATC_EXIT_OK;
	char err[256];
	/* the best kernel's files, as -o writes them for the target */
	static const char *const suffixes[2][6] = {{".o", ".h", ".safetensors"},
	                                           {".ptx", ".h", "_launch.c", ".bin", ".safetensors"}};
	char kfiles[6][160];
	const char *kernel[7] = {NULL};
	for (int i = 0; r->best >= 0 && suffixes[c->gpu][i]; i++) {
		snprintf(kfiles[i], sizeof kfiles[i], "%.140s%s", c->base, suffixes[c->gpu][i]);
		kernel[i] = kfiles[i];
	}
	/* the kernel, then the reports that name it, renamed into place together
	 * (outfile.h) with the earlier search's kernel files that this one does
	 * not write again removed: the reports never sit beside a kernel they do
	 * not describe, even where the search is stopped while writing them;
	 * the directory locked meanwhile (and before the earlier kernel is
	 * read) against another run into it */
	const bool locked = outfile_group_begin(c->dir, OUTFILE_WAIT_S);
	if (!locked) {
		if (errno == EWOULDBLOCK)
			fprintf(stderr, "patc: error: another patc run is writing into '%s': waited %d s for it to finish\n",
			        c->dir, OUTFILE_WAIT_S);
		else
			fprintf(stderr, "patc: error: cannot write into '%s': %s\n", c->dir, strerror(errno));
		rc = PATC_EXIT_ENV;
	}
	char old[8][160];
	int nold = locked && s->shards <= 1 ? earlier_kernel(c->dir, old) : 0; /* (shards may share a directory) */
	if (locked)
		remove_stale_kernel(c->dir, old, nold, r->best >= 0 ? kernel : NULL);
	if (locked && r->best >= 0)
		rc = write_kernel(c, op, p, &r->c[r->best], kline);
	if (locked && rc == PATC_EXIT_OK &&
	    !search_write_reports(c->dir, PATC_VERSION, c->input, op, s, r, c->target, r->best >= 0 ? kernel : NULL,
	                          err)) {
		fprintf(stderr, "patc: error: %s\n", err);
		rc = PATC_EXIT_ENV;
	}
	if (locked && !outfile_group_end(rc == PATC_EXIT_OK)) {
		fprintf(stderr, "patc: error: cannot write the search's files into '%s': %s\n", c->dir, strerror(errno));
		rc = PATC_EXIT_ENV;
	}
	return rc;
}

/* The OpenBLAS kernel set of the dense baseline, and where it is weaker
 * than the strongest this CPU runs, both sets' times (search.c's
 * baseline_measure). */
static void summarize_blas(const SearchResult *r, StrBuf *out)
{
	if (!r->blas.text[0])
		return; /* the baseline taken from the log (--resume): its set, if logged, on the line before */
	sb_printf(out, "        OpenBLAS kernel set: %s\n", r->blas.text);
	if (r->blas.stronger_us > 0)
		sb_printf(out, "        dense sgemm %.1f us with %s, %.1f us with %s (in a fresh process): the baseline is "
		               "%s's, the faster\n",
		          r->blas.in_use_us, r->blas.in_use, r->blas.stronger_us, r->blas.stronger, r->blas_core);
	else if (r->blas.stronger[0] && r->blas.why[0])
		sb_printf(out, "        dense sgemm with %s not timed (%s): the baseline is %s's\n", r->blas.stronger,
		          r->blas.why, r->blas.in_use);
}

/* The best kernel's lines of the summary: its pattern and schedule,
 * density and loss, its time beside the dense baseline's, and how it
 * compares with the fastest kernel and the standard library's. */
static void summarize_best(const SearchCli *c, const SearchSettings *s, const SearchResult *r, bool emulate,
                           const char *device, StrBuf *out)
{
	const SearchCandidate *b = &r->c[r->best];
	char sched[128];
	kernel_schedule_text(&b->sched, sched, sizeof sched);
	sb_printf(out, "  best: %s, schedule: %s%s%s%s\n", b->notation, sched, b->ref[0] ? " (the standard library's " : "",
	          b->ref, b->ref[0] ? ")" : "");
	sb_printf(out, "        density %.2f%%, magnitude loss %.4f (unstructured bound %.4f)\n", 100 * b->metrics.density,
	          b->metrics.loss, b->metrics.bound_loss);
	if (b->status == SEARCH_MEASURED && r->dense_us > 0 && emulate)
		sb_printf(out, "        %.1f us on the host emulator, %.2fx the emulated dense kernel (%.1f us): not a GPU's "
		               "times\n",
		          b->measured_us, r->dense_us / b->measured_us, r->dense_us);
	else if (b->status == SEARCH_MEASURED && r->dense_us > 0 && c->gpu)
		sb_printf(out, "        %.1f us, %.2fx over dense cuBLAS (%.1f us) on %s\n", b->measured_us,
		          r->dense_us / b->measured_us, r->dense_us, device);
	else if (b->status == SEARCH_MEASURED && r->dense_us > 0) {
		sb_printf(out, "        %.1f us, %.2fx over dense OpenBLAS sgemm (%.1f us, %s%s), %d thread%s\n",
		          b->measured_us, r->dense_us / b->measured_us, r->dense_us,
		          r->blas_core[0] ? r->blas_core : "kernel set not logged", r->blas_core[0] ? " kernels" : "",
		          c->s.threads, c->s.threads == 1 ? "" : "s");
		summarize_blas(r, out);
	} else if (b->status == SEARCH_MEASURED)
		sb_printf(out, "        %.1f us (the dense baseline was not measured: no speedup)\n", b->measured_us);
	if (b->status == SEARCH_MEASURED && r->dense_us > 0 && b->measured_us > r->dense_us)
		sb_printf(out, "  warning: dense is faster: the best kernel takes %.2fx the dense product's time; at this "
		               "accuracy budget, keep the layer dense (or allow more sparsity)\n",
		          b->measured_us / r->dense_us);
	else
		sb_printf(out, "        predicted %.1f us by the cost model (not measured)\n", b->predicted_us);
	if (r->fastest >= 0 && r->fastest != r->best) {
		const SearchCandidate *f = &r->c[r->fastest];
		sb_printf(out, "        the most accurate of %d kernels within %g%% of the fastest, %s (%.1f us, loss %.4f; "
		               "--tie=0 takes it)\n",
		          r->tied, 100 * s->tie, f->notation, f->measured_us, f->metrics.loss);
	}
	if (r->best_ref >= 0 && b->status == SEARCH_MEASURED) {
		const SearchCandidate *f = &r->c[r->best_ref];
		sb_printf(out, "  the best standard-library pattern within the budget: %s (%s), loss %.4f, %.1f us: the "
		               "search's best is %.2fx as fast\n",
		          f->ref, f->notation, f->metrics.loss, f->measured_us, f->measured_us / b->measured_us);
	} else if (s->nrefs && s->measure && s->shard == 0) { /* (shard 0 measures them) */
		int nrefs = 0, fit = 0, early = 0; /* (of the backend's own schedules) */
		for (int i = 0; i < r->n; i++) {
			const SearchCandidate *f = &r->c[i];
			if (!f->ref[0] || !kernel_schedule_is_default(&f->sched))
				continue;
			const bool in = !f->off_target && f->metrics.loss_over_bound <= s->budget;
			nrefs++, fit += in, early += in && f->status == SEARCH_MEASURED && f->early;
		}
		if (!fit)
			sb_printf(out, "  no standard-library pattern is within the budget at the target's density (%d "
			               "measured as reference points)\n",
			          nrefs);
		else
			sb_printf(out, "  no standard-library pattern within the budget was measured in full: of %d, %d stopped "
			               "early (slower than the search's kernels), %d failed (report.json)\n",
			          fit, early, fit - early);
	}
}

/* The search's summary into out: what it searched and measured, the best
 * kernel and how it compares, the cost model's agreement, the files
 * written (kline: the kernel's line); returns rc, or an input error where
 * no kernel was found. */
static int summarize(const SearchCli *c, const OpResult *op, const SearchSettings *s, const SearchResult *r,
                     bool emulate, const char *device, const char *model_path, int rc, const StrBuf *kline,
                     StrBuf *out)
{
	int measured = 0, failed = 0, nref = 0;
	for (int i = 0; i < r->n; i++) {
		if (!kernel_schedule_is_default(&r->c[i].sched))
			continue; /* a tuned schedule: counted in r->tuned */
		if (r->c[i].ref[0]) {
			nref += r->c[i].status == SEARCH_MEASURED;
			continue;
		}
		measured += r->c[i].status == SEARCH_MEASURED, failed += r->c[i].status == SEARCH_FAILED;
	}
	char spt[48];
	search_sparsity_text(&c->s, spt, sizeof spt);
	sb_printf(out, "search: op %s, %lldx%lldx%lld, %s sparsity, loss budget %.4g over the unstructured bound\n",
	          op->name, (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N, spt, c->s.budget);
	sb_printf(out, "  %lld patterns, %lld distinct masks, %lld within the budget, %d measured",
	          (long long)r->patterns, (long long)r->masks, (long long)r->within, measured);
	if (failed)
		sb_printf(out, " (%d failed)", failed);
	if (nref)
		sb_printf(out, ", %d standard-library patterns", nref);
	if (r->tuned)
		sb_printf(out, ", %d schedules tuned", r->tuned);
	if (r->stopped)
		sb_printf(out, " (%d stopped early)", r->stopped);
	if (r->resumed)
		sb_printf(out, " (%d taken from the log)", r->resumed);
	if (s->shards > 1)
		sb_printf(out, " (shard %d of %d)", s->shard + 1, s->shards);
	sb_printf(out, " in %.1f s\n", r->seconds);
	if (r->best < 0) {
		double least = -1;
		for (int i = 0; i < r->n; i++)
			if (r->c[i].metrics.nreal && (least < 0 || r->c[i].metrics.loss_over_bound < least))
				least = r->c[i].metrics.loss_over_bound;
		int tried = 0;
		for (int i = 0; i < r->n; i++)
			tried += r->c[i].status == SEARCH_MEASURED || r->c[i].status == SEARCH_FAILED;
		if (r->within && !tried && s->shards > 1) { /* a shard past the candidates: not a failure */
			sb_printf(out, "  nothing to measure in this shard: the %lld candidates within the budget fall to the "
			               "others\n",
			          (long long)r->within);
			return rc;
		}
		if (!r->within)
			sb_printf(out, "  no pattern is within the budget: the least loss over the unstructured bound is %.4f "
			               "(--budget)\n",
			          least);
		else
			sb_printf(out, "  every measured candidate failed (see report.json)\n");
		return rc == PATC_EXIT_OK ? PATC_EXIT_INPUT : rc;
	}
	summarize_best(c, s, r, emulate, device, out);
	int nsp;
	double rho = search_spearman(r, &nsp);
	if (rho <= 1)
		sb_printf(out, "  cost model (%s): Spearman rank correlation %.2f with the %d measured latencies\n",
		          model_path[0] ? "learned" : "analytic", rho, nsp);
	/* (the reports not written: only where the measurements went) */
	if (rc == PATC_EXIT_OK)
		sb_printf(out, "  reports: %s/report.json, %s/report.csv, %s/pareto.svg%s", c->dir, c->dir, c->dir,
		          r->logged || measured + failed ? "; " : "\n");
	if (r->logged)
		sb_printf(out, "%s%d measurement%s appended to %s/tune.jsonl\n", rc == PATC_EXIT_OK ? "" : "  ", r->logged,
		          r->logged == 1 ? "" : "s", c->dir);
	else if (rc == PATC_EXIT_OK && measured + failed)
		sb_printf(out, "nothing new appended to %s/tune.jsonl\n", c->dir);
	if (r->unlogged)
		fprintf(stderr, "patc: warning: %d measurement%s could not be appended to '%s/tune.jsonl': --resume would "
		                "measure %s again\n",
		        r->unlogged, r->unlogged == 1 ? "" : "s", c->dir, r->unlogged == 1 ? "it" : "them");
	if (rc == PATC_EXIT_OK)
		sb_puts(out, kline->data ? kline->data : "");
	return rc;
}

/* Which cost model ranks the candidates, said on stderr. */
static void say_model(const SearchCli *c, const CostModel *model, const char *model_path)
{
	if (model->gbt) {
		char q[128] = "";
		if (!isnan(model->spearman))
			snprintf(q, sizeof q, "; held-out Spearman %.2f", model->spearman);
		if (!isnan(model->recall))
			snprintf(q + strlen(q), sizeof q - strlen(q), ", top-10 recall %.2f", model->recall);
		if (!isnan(model->recall_tied))
			snprintf(q + strlen(q), sizeof q - strlen(q), "%s%.2f within 2%% of the 10th",
			         isnan(model->recall) ? ", top-10 recall " : ", ", model->recall_tied);
		fprintf(stderr, "search: cost model %s (learned on %d kernels of %d searches on %s%s)\n", model_path,
		        model->samples, model->groups, model->device, q);
	} else
		fprintf(stderr, "search: cost model: analytic%s\n", c->gpu ? " (the x86 one; none is learned for GPUs)" : "");
}

/* search_cli's work; *created: whether it made c->dir. */
static int search_into(const SearchCli *c, const Program *prog, const PruneOp *pruned, StrBuf *out,
                       bool *created)
{
	int which;
	int rc = pick_op(c, prog, &which);
	if (rc != PATC_EXIT_OK)
		return rc;
	char device[256];
	search_device_name(device, sizeof device);
	const char *emu = getenv("PATC_GPU_EMULATE");
	const bool emulate = c->gpu && emu && *emu && strcmp(emu, "0");
	if (c->gpu && c->s.measure && !gpu_probe(c->target, emulate, device, sizeof device))
		return PATC_EXIT_ENV;
	const char *cpu = c->gpu ? NULL : x86_target_cpu(c->target);
	const char *lacks = c->s.measure ? x86_host_lacks(cpu) : NULL;
	if (lacks) {
		fprintf(stderr, "patc: error: --search measures here, and this machine cannot run %s code (its CPU lacks "
		                "%s): search where it can, or add --no-measure to rank by the cost model alone\n",
		        c->target, lacks);
		return PATC_EXIT_ENV;
	}
	CostModel model;
	char model_path[4096], err[256];
	rc = load_model(c, &model, model_path);
	if (rc != PATC_EXIT_OK)
		return rc;
	if (!util_make_dir(c->dir, created)) {
		fprintf(stderr, "patc: error: cannot create '%s': %s\n", c->dir, strerror(errno));
		cost_model_free(&model);
		return PATC_EXIT_ENV;
	}
	const OpResult *op = &prog->ops[which];
	const PruneOp *p = &pruned[which];
	SearchResult r;
	char log_path[4096];
	snprintf(log_path, sizeof log_path, "%s/tune.jsonl", c->dir);
	SearchSettings s = c->s;
	s.sm = c->gpu ? c->target : NULL;
	s.cpu = cpu;
	s.blas_exe = c->gpu ? NULL : "/proc/self/exe"; /* (patc itself: support/blas_core.h) */
	s.emulate = emulate;
	if (emulate && s.measure)
		fprintf(stderr, "search: PATC_GPU_EMULATE: the candidates run on the host emulator, checked as on a GPU; "
		                "their times are the emulator's, not a GPU's\n");
	SearchLogInfo info = {PATC_VERSION, c->target, device, c->input, op->name, op->shape.M, op->shape.K, op->shape.N,
	                      op->shape.layout == PAT_LAYOUT_KN ? "kn" : "nk", pat_dtype_names[op->shape.dtype], s.threads, s.seed};
	s.log_path = s.measure ? log_path : NULL;
	s.log_info = &info;
	/* (a FIFO there would hang the search at its first open) */
	struct stat lst;
	if ((s.log_path || c->resume) && stat(log_path, &lst) == 0 && !S_ISREG(lst.st_mode)) {
		fprintf(stderr, "patc: error: '%s' is not a regular file: the tuning log is read back and appended to\n",
		        log_path);
		cost_model_free(&model);
		return PATC_EXIT_ENV;
	}
	SearchLogged *logged = NULL;
	int nlogged = 0;
	if (c->resume && !search_log_load(log_path, &info, &logged, &nlogged, err)) {
		fprintf(stderr, "patc: error: --resume: %s\n", err);
		cost_model_free(&model);
		return PATC_EXIT_INPUT;
	}
	s.logged = logged, s.nlogged = nlogged;
	Arena arena;
	arena_init(&arena);
	Pir refs[16];
	const char *ref_names[16];
	s.nrefs = reference_patterns(c, op, s.sparsity, &arena, refs, ref_names, 16);
	if (s.max_sparsity > s.sparsity) /* a range: its sparsest end's too */
		s.nrefs += reference_patterns(c, op, s.max_sparsity, &arena, refs + s.nrefs, ref_names + s.nrefs,
		                              16 - s.nrefs);
	s.refs = refs, s.ref_names = ref_names;
	if (s.log_path && !log_terminated(log_path)) {
		fprintf(stderr, "patc: error: cannot append to '%s': %s\n", log_path, strerror(errno));
		cost_model_free(&model);
		search_log_free(logged, nlogged);
		arena_free(&arena);
		return PATC_EXIT_ENV;
	}
	s.model = model.gbt ? &model : NULL;
	say_model(c, &model, model_path);
	const int ran = search_run(op, p->w, p->imp, &s, stderr, &r, err);
	search_log_free(logged, nlogged);
	arena_free(&arena);
	if (ran != PATC_EXIT_OK) {
		cost_model_free(&model);
		fprintf(stderr, "patc: error: op '%s': %s\n", op->name, err);
		return ran;
	}
	StrBuf kline;
	sb_init(&kline);
	rc = write_outputs(c, op, p, &s, &r, &kline);
	cost_model_free(&model);
	s.model = NULL;
	rc = summarize(c, op, &s, &r, emulate, device, model_path, rc, &kline, out);
	sb_free(&kline);
	search_result_free(&r);
	return rc;
}

int search_cli(const SearchCli *c, const Program *prog, const PruneOp *pruned, StrBuf *out)
{
	bool created = false;
	const int rc = search_into(c, prog, pruned, out, &created);
	if (rc != PATC_EXIT_OK && created) { /* (where the failure left nothing in it: no measurement, no report) */
		char log[4096];
		struct stat st;
		snprintf(log, sizeof log, "%s/tune.jsonl", c->dir);
		if (stat(log, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
			unlink(log);
		rmdir(c->dir);
	}
	return rc;
}

/* What makes two log lines one measurement, as --resume takes them over
 * (search_log_load): the kernel (its PatternIR and schedule, as read: a
 * schedule written by an older patc, or with its fields in another order,
 * is the same one) on the same target, device, shape, layout, dtype,
 * threads and patc version.  malloc'd. */
static char *merge_key(const SearchLogEntry *e)
{
	const KernelSchedule *k = &e->sched;
	StrBuf b;
	sb_init(&b);
	/* each string after its length: no text can pass for another field's */
	const char *str[5] = {e->target ? e->target : "", e->device ? e->device : "", e->layout ? e->layout : "kn",
	                      e->dtype ? e->dtype : "", e->version ? e->version : ""};
	for (int i = 0; i < 5; i++)
		sb_printf(&b, "%zu:%s\n", strlen(str[i]), str[i]);
	sb_printf(&b, "%.17g %.17g %.17g %.17g\n", e->M, e->K, e->N, e->threads);
	for (int f = 0; f < SCHED_NFIELDS; f++)
		sb_printf(&b, "%lld%c", (long long)kernel_schedule_get(k, (KernelScheduleField)f),
		          f + 1 < SCHED_NFIELDS ? ' ' : '\n');
	sb_puts(&b, e->pir);
	return sb_take(&b);
}

typedef struct Merged {
	char *key, *line, *time; /* time: the line's, "" where it has none */
} Merged;

/* Each kernel's newest line, in the order first seen; found through an
 * open-addressing table of indices (a linear search was quadratic in the
 * lines). */
typedef struct MergeSet {
	Merged *kept;
	size_t nkept, cap, tcap;
	int64_t *table; /* index into kept, -1: empty */
	int skipped;    /* lines that were not measurements */
} MergeSet;

/* Adds a kernel's line (key, line and time owned by set from here on):
 * kept, or in place of an older one of the same kernel (by its time; the
 * later line where they tie). */
static void merge_add(MergeSet *set, char *key, char *line, char *when)
{
	if (2 * (set->nkept + 1) > set->tcap) { /* the table at most half full */
		size_t ncap = set->tcap ? 2 * set->tcap : 1024;
		int64_t *nt = malloc(ncap * sizeof *nt);
		if (!nt)
			util_oom();
		for (size_t k = 0; k < ncap; k++)
			nt[k] = -1;
		for (size_t k = 0; k < set->nkept; k++) {
			size_t h = util_hash_text(set->kept[k].key) & (ncap - 1);
			while (nt[h] >= 0)
				h = (h + 1) & (ncap - 1);
			nt[h] = (int64_t)k;
		}
		free(set->table);
		set->table = nt, set->tcap = ncap;
	}
	size_t h = util_hash_text(key) & (set->tcap - 1);
	while (set->table[h] >= 0 && strcmp(set->kept[set->table[h]].key, key))
		h = (h + 1) & (set->tcap - 1);
	if (set->table[h] >= 0) { /* a kernel measured again */
		Merged *m = &set->kept[set->table[h]];
		free(key);
		if (strcmp(when, m->time) >= 0) {
			free(m->line), free(m->time);
			m->line = line, m->time = when;
		} else {
			free(line), free(when);
		}
		return;
	}
	if (set->nkept == set->cap) {
		set->cap = set->cap ? 2 * set->cap : 256;
		Merged *nk = realloc(set->kept, set->cap * sizeof *nk);
		if (!nk)
			util_oom();
		set->kept = nk;
	}
	set->table[h] = (int64_t)set->nkept;
	set->kept[set->nkept++] = (Merged){key, line, when};
}

/* The measurements of the log at path into set; PATC_EXIT_OK, or the
 * error said and PATC_EXIT_INPUT. */
static int merge_log(MergeSet *set, const char *path)
{
	char qp[UTIL_QUOTE_BUF];
	util_quote(path, qp);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "patc: error: cannot read '%s': %s\n", qp, strerror(errno));
		return PATC_EXIT_INPUT;
	}
	int rc = PATC_EXIT_OK;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int lines = 0, lineno = 0, measurements = 0; /* (lines: those not blank) */
	while ((len = util_getline_max(&line, &lcap, f, SEARCH_LOG_LINE_MAX)) > 0) {
		lineno++;
		/* (as every reader of the log: a NUL byte makes a line no blank and no JSON) */
		if (strlen(line) == (size_t)len && !line[strspn(line, " \t\r\n")])
			continue;
		lines++;
		cJSON *j = search_log_parse(line, (size_t)len);
		line[strcspn(line, "\n")] = 0; /* (what is kept: the line without its newline) */
		SearchLogEntry e;
		if (!j || !search_log_entry(j, &e)) { /* a line cut short by a killed search */
			cJSON_Delete(j);
			set->skipped++;
			continue;
		}
		measurements++;
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "time");
		char *key = merge_key(&e), *copy = strdup(line);
		char *when = strdup(cJSON_IsString(t) ? t->valuestring : "");
		cJSON_Delete(j);
		if (!copy || !when)
			util_oom();
		merge_add(set, key, copy, when);
	}
	if (len < 0 && errno == EFBIG) {
		fprintf(stderr, "patc: error: '%s' is not a tuning log: line %d is longer than %zu MiB\n", qp, lineno + 1,
		        SEARCH_LOG_LINE_MAX >> 20);
		rc = PATC_EXIT_INPUT;
	} else if (ferror(f)) { /* a directory, or a read error */
		fprintf(stderr, "patc: error: cannot read '%s': %s\n", qp, strerror(errno));
		rc = PATC_EXIT_INPUT;
	} else if (lines && !measurements) { /* (an empty log is one: a shard that measured nothing) */
		fprintf(stderr, "patc: error: '%s' is not a tuning log: none of its %d line%s is a measurement\n", qp, lines,
		        lines == 1 ? "" : "s");
		rc = PATC_EXIT_INPUT;
	}
	free(line);
	fclose(f);
	return rc;
}

int search_merge(int n, const char *const *paths, const char *output)
{
	MergeSet set = {0};
	int rc = PATC_EXIT_OK;
	for (int i = 0; i < n && rc == PATC_EXIT_OK; i++)
		rc = merge_log(&set, paths[i]);
	StrBuf all;
	sb_init(&all);
	for (size_t k = 0; k < set.nkept; k++)
		sb_printf(&all, "%s\n", set.kept[k].line);
	if (rc == PATC_EXIT_OK && !outfile_write(output, all.data ? all.data : "", all.len)) {
		const int e = errno;
		char qo[UTIL_QUOTE_BUF];
		fprintf(stderr, "patc: error: cannot write '%s': %s\n", util_quote(output, qo), strerror(e));
		rc = PATC_EXIT_ENV;
	}
	const size_t nkept = set.nkept;
	const int skipped = set.skipped;
	if (rc == PATC_EXIT_OK && skipped)
		printf("merge: %zu measurement%s from %d log%s into %s (%d %s skipped)\n", nkept, nkept == 1 ? "" : "s", n,
		       n == 1 ? "" : "s", output, skipped,
		       skipped == 1 ? "line that was not a measurement" : "lines that were not measurements");
	else if (rc == PATC_EXIT_OK)
		printf("merge: %zu measurement%s from %d log%s into %s\n", nkept, nkept == 1 ? "" : "s", n, n == 1 ? "" : "s",
		       output);
	for (size_t k = 0; k < nkept; k++)
		free(set.kept[k].key), free(set.kept[k].line), free(set.kept[k].time);
	free(set.kept);
	free(set.table);
	sb_free(&all);
	return rc;
}

int search_train(const CostTrainOptions *o)
{
	char err[256];
	const int rc = cost_train(o, stdout, err);
	if (rc != PATC_EXIT_OK) {
		fprintf(stderr, "patc: error: train-cost-model: %s\n", err);
		return rc;
	}
	printf("wrote %s\n", o->out);
	return PATC_EXIT_OK;
}
