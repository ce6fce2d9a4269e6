/* SPDX-License-Identifier: MIT */
/* load.c - one op through the prune stage: load its tensors, check their
 * shapes against the op, score, decide the mask, measure it.
 *
 * Shapes follow PyTorch: the weight is [out, in] = [M, K]; calibration
 * activations are [tokens, K] for layout nk and [K, tokens] for layout kn
 * (stored as tokens x K here); a score tensor is [M, K] and non-negative.
 */
#include "prune.h"
#include "../support/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool load(const WeightBinding *b, Tensor *t, char err[PRUNE_ERR_MAX])
{
	char e[TENSOR_ERR_MAX];
	bool ok = b->kind == WEIGHTS_SAFETENSORS ? st_read_file(b->resolved, b->tensor, t, e)
	                                         : npy_read_file(b->resolved, t, e);
	if (ok)
		return true;
	/* A file too broken to list its tensors still names the one asked for
	 * (quoted as the readers quote it). */
	char q[UTIL_QUOTE_BUF], quoted[UTIL_QUOTE_BUF + 2];
	snprintf(quoted, sizeof quoted, "'%s'", util_quote(b->kind == WEIGHTS_SAFETENSORS ? b->tensor : "", q));
	if (b->kind == WEIGHTS_SAFETENSORS && !strstr(e, quoted))
		return tensor_fail(err, "%s (reading tensor %s)", e, quoted);
	return tensor_fail(err, "%s", e);
}

static const char *shape_str(const Tensor *t, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "[");
	for (int d = 0; d < t->rank && o < len; d++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
	return buf;
}

static const char *what(const WeightBinding *b, const Tensor *t, char *buf, size_t len)
{
	char q[UTIL_QUOTE_BUF];
	if (b->kind == WEIGHTS_SAFETENSORS)
		snprintf(buf, len, "%s: tensor '%s'", b->resolved, util_quote(t->name, q));
	else
		snprintf(buf, len, "%s", b->resolved);
	return buf;
}

/* Loads the [M, K] weight (or score) tensor of binding b into *out. */
static bool load_matrix(const OpResult *op, const WeightBinding *b, const char *role, float **out,
                        char err[PRUNE_ERR_MAX])
{
	Tensor t;
	if (!load(b, &t, err))
		return false;
	char sh[96], who[400];
	what(b, &t, who, sizeof who);
	if (t.rank != 2) {
		tensor_free(&t);
		return tensor_fail(err, "%s has shape %s; %s must be 2-D [M, K] = [%lld, %lld]", who,
		            shape_str(&t, sh, sizeof sh), role, (long long)op->shape.M, (long long)op->shape.K);
	}
	if (t.shape[0] != op->shape.M || t.shape[1] != op->shape.K) {
		bool swapped = t.shape[0] == op->shape.K && t.shape[1] == op->shape.M;
		tensor_fail(err, "%s has shape %s, but op '%s' needs %s [M, K] = [%lld, %lld]%s", who,
		     shape_str(&t, sh, sizeof sh), op->name, role, (long long)op->shape.M, (long long)op->shape.K,
		     swapped ? " (it looks transposed: patc takes PyTorch's [out, in])" : "");
		tensor_free(&t);
		return false;
	}
	*out = t.data;
	return true;
}

/* The op's weight into out->w: seeded, or read from its file; each
 * within the range of the op's dtype. */
static bool load_weights(const OpResult *op, PruneOp *out, char err[PRUNE_ERR_MAX])
{
	const int64_t M = op->shape.M, K = op->shape.K;
	if (op->weights.kind == WEIGHTS_RANDOM) {
		out->w = malloc((size_t)(M * K) * sizeof(float));
		if (!out->w)
			util_oom_for("the %lld x %lld weight of op '%s'", (long long)M, (long long)K, op->name);
		synth_weights(out->w, M, K, (uint64_t)op->weights.seed, op->weights.synth,
		              op->weights.group);
	} else if (!load_matrix(op, &op->weights, "the weight", &out->w, err)) {
		return false;
	}
	if (op->shape.dtype != PAT_F32) /* a weight the 16-bit dtype cannot hold would run as infinity */
		for (int64_t i = 0; i < M * K; i++) {
			const float r = op->shape.dtype == PAT_F16 ? fp16_to_f32(f32_to_fp16(out->w[i]))
			                                     : bf16_to_f32(f32_to_bf16(out->w[i]));
			if (!isfinite(r))
				return tensor_fail(err, "op '%s': weight %g at [%lld, %lld] is outside the range of its dtype %s "
				                   "(largest finite: %g)",
				                   op->name, (double)out->w[i], (long long)(i / K), (long long)(i % K),
				                   pat_dtype_names[op->shape.dtype], op->shape.dtype == PAT_F16 ? 65504.0 : 3.3895313892515355e38);
		}
	return true;
}

/* The op's calibration activations, if it has any, into out->x as
 * [tokens, K] (out->ncalib tokens); *where: the binding. */
static bool load_calibration(const OpResult *op, PruneOp *out, char err[PRUNE_ERR_MAX], SrcLoc *where)
{
	const int64_t K = op->shape.K;
	const WeightBinding *cb = &op->calibration;
	if (cb->kind == WEIGHTS_RANDOM) {
		out->ncalib = op->shape.N;
		out->x = malloc((size_t)(op->shape.N * K) * sizeof(float));
		if (!out->x)
			util_oom_for("%lld calibration tokens of op '%s'", (long long)op->shape.N, op->name);
		synth_weights(out->x, op->shape.N, K, (uint64_t)cb->seed, cb->synth, cb->group);
	} else if (cb->kind != WEIGHTS_NONE) {
		*where = cb->loc;
		Tensor t;
		if (!load(cb, &t, err))
			return false;
		char sh[96], who[400];
		what(cb, &t, who, sizeof who);
		bool nk = op->shape.layout == PAT_LAYOUT_NK;
		if (t.rank != 2 || t.shape[nk ? 1 : 0] != K) {
			tensor_fail(err, "%s has shape %s; calibration activations of op '%s' (layout %s) must be "
			          "%s", who, shape_str(&t, sh, sizeof sh), op->name,
			     pat_layout_names[op->shape.layout], nk ? "[tokens, K]" : "[K, tokens]");
			snprintf(err + strlen(err), PRUNE_ERR_MAX - strlen(err), " with K = %lld",
			         (long long)K);
			tensor_free(&t);
			return false;
		}
		out->ncalib = t.shape[nk ? 0 : 1];
		if (nk) {
			out->x = t.data;
		} else { /* [K, tokens] -> [tokens, K] */
			out->x = malloc((size_t)t.count * sizeof(float));
			if (!out->x)
				util_oom_for("the calibration activations of op '%s'", op->name);
			for (int64_t k = 0; k < K; k++)
				for (int64_t i = 0; i < out->ncalib; i++)
					out->x[i * K + k] = t.data[k * out->ncalib + i];
			tensor_free(&t);
		}
	}
	return true;
}

/* The op's own importance scores (importance = tensor), non-negative,
 * into *scores; NULL for any other importance. */
static bool load_scores(const OpResult *op, float **scores, char err[PRUNE_ERR_MAX], SrcLoc *where)
{
	const int64_t M = op->shape.M, K = op->shape.K;
	*scores = NULL;
	if (op->importance == PAT_IMP_TENSOR) {
		*where = op->scores.loc;
		if (!load_matrix(op, &op->scores, "the score tensor", scores, err))
			return false;
		for (int64_t i = 0; i < M * K; i++)
			if ((*scores)[i] < 0) {
				char who[400], q[UTIL_QUOTE_BUF];
				if (op->scores.kind == WEIGHTS_SAFETENSORS)
					snprintf(who, sizeof who, "%s: tensor '%s'", op->scores.resolved,
					         util_quote(op->scores.tensor, q));
				else
					snprintf(who, sizeof who, "%s", op->scores.resolved);
				tensor_fail(err, "%s: score %g at [%lld, %lld] is negative; importance scores must be "
				          "non-negative (pass magnitudes of signed scores)",
				     who, (double)(*scores)[i], (long long)(i / K), (long long)(i % K));
				free(*scores);
				*scores = NULL;
				return false;
			}
	}
	return true;
}

/* The importance finite, and not zero everywhere: that would rank no
 * weight above another, the mask arbitrary and its metrics 0 of 0
 * retained.  Said by what made it so: the scores, the activations, the
 * weights, or (wanda) no input k where both the weights and the
 * activations are nonzero. */
static bool check_importance(const OpResult *op, const PruneOp *out, char err[PRUNE_ERR_MAX], SrcLoc *where)
{
	const int64_t M = op->shape.M, K = op->shape.K;
	for (int64_t i = 0; i < M * K; i++)
		if (!isfinite(out->imp[i])) /* l2 past 1.8e19, or wanda's product */
			return tensor_fail(err, "op '%s': the %s importance of the weight at [%lld, %lld] (%g) is past "
			                   "float32's range",
			                   op->name, pat_importance_names[op->importance], (long long)(i / K),
			                   (long long)(i % K), (double)out->w[i]);
	bool zero = true;
	for (int64_t i = 0; zero && i < M * K; i++)
		zero = out->imp[i] == 0;
	if (zero) {
		bool xzero = true, wzero = true;
		for (int64_t i = 0; xzero && op->importance == PAT_IMP_WANDA && i < out->ncalib * K; i++)
			xzero = out->x[i] == 0;
		for (int64_t i = 0; wzero && i < M * K; i++)
			wzero = out->w[i] == 0;
		const char *why = op->importance == PAT_IMP_TENSOR ? "every importance score is zero"
		                  : op->importance == PAT_IMP_WANDA && xzero ? "every calibration activation is zero"
		                  : wzero ? "every weight is zero"
		                  : op->importance == PAT_IMP_WANDA
		                          ? "no input k has both a nonzero weight and a nonzero calibration activation "
		                            "(every wanda score is zero)"
		                          : "every weight's square is below float32's range (every l2 score is zero)";
		*where = op->importance == PAT_IMP_TENSOR ? op->scores.loc
		         : op->importance == PAT_IMP_WANDA && !wzero ? op->calibration.loc
		                                                     : op->weights.loc;
		return tensor_fail(err, "op '%s': %s, so no weight is more important than another and the mask would be "
		                   "arbitrary",
		                   op->name, why);
	}
	return true;
}

/* The op's bias, if it has one, into out->bias: M finite floats, from a
 * tensor of any shape holding M elements ([M] as PyTorch's Linear.bias). */
static bool load_bias(const OpResult *op, PruneOp *out, char err[PRUNE_ERR_MAX], SrcLoc *where)
{
	const WeightBinding *b = &op->bias;
	const int64_t M = op->shape.M;
	if (b->kind == WEIGHTS_NONE)
		return true;
	*where = b->loc;
	if (b->kind == WEIGHTS_RANDOM) {
		out->bias = malloc((size_t)M * sizeof(float));
		if (!out->bias)
			util_oom_for("the bias of op '%s'", op->name);
		synth_weights(out->bias, 1, M, (uint64_t)b->seed, b->synth, b->group);
		return true;
	}
	Tensor t;
	if (!load(b, &t, err))
		return false;
	char sh[96], who[400];
	what(b, &t, who, sizeof who);
	int64_t n = 1;
	for (int d = 0; d < t.rank; d++)
		n *= t.shape[d];
	if (n != M) {
		tensor_fail(err, "%s has shape %s; the bias of op '%s' must hold M = %lld values ([M])", who,
		            shape_str(&t, sh, sizeof sh), op->name, (long long)M);
		tensor_free(&t);
		return false;
	}
	for (int64_t i = 0; i < M; i++)
		if (!isfinite(t.data[i])) {
			tensor_fail(err, "%s: bias element %lld of op '%s' is %g", who, (long long)i, op->name, (double)t.data[i]);
			tensor_free(&t);
			return false;
		}
	out->bias = t.data;
	return true;
}

bool prune_op(const OpResult *op, PruneOp *out, char err[PRUNE_ERR_MAX], SrcLoc *where)
{
	memset(out, 0, sizeof *out);
	const int64_t M = op->shape.M, K = op->shape.K;
	out->M = M, out->K = K;
	*where = op->weights.loc;
	if (op->weights.kind == WEIGHTS_NONE) {
		*where = op->loc;
		return tensor_fail(err, "op '%s' has no weights: set 'weights = safetensors(...)', npy(...) or "
		                 "random(...)", op->name);
	}
	if (!load_weights(op, out, err))
		return false;
	if (!load_calibration(op, out, err, where) || !load_bias(op, out, err, where))
		return false;
	float *scores;
	if (!load_scores(op, &scores, err, where))
		return false;
	out->imp = malloc((size_t)(M * K) * sizeof(float));
	if (!out->imp)
		util_oom_for("the importance scores of op '%s'", op->name);
	prune_importance(op->importance, out->w, scores, out->x, out->ncalib, M, K, out->imp);
	free(scores);
	if (!check_importance(op, out, err, where))
		return false;
	*where = op->loc;
	prune_mask_build(op->ir, out->imp, M, K, op->rank, &out->mask);
	prune_metrics(op->ir, &out->mask, out->imp, NULL, out->w, out->x, out->ncalib, M, K,
	              &out->metrics);
	prune_op_pack(op->ir, out);
	return true;
}

void prune_op_pack(const Pir *ir, PruneOp *p)
{
	free(p->values);
	p->values = prune_pack_new(ir, &p->mask, p->w, p->M, p->K, &p->nvalues, NULL);
	if (!p->values)
		util_oom();
}

void prune_op_free(PruneOp *p)
{
	free(p->w);
	free(p->imp);
	free(p->x);
	free(p->values);
	free(p->bias);
	prune_mask_free(&p->mask);
	memset(p, 0, sizeof *p);
}
