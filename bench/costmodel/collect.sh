#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# collect.sh - tuning logs for the search's learned cost model: 36 searches
# (9 shapes x 50/75/87.5/93.75% sparsity, seeded weights with and without
# head structure), each measuring 60 candidates of which 70% are drawn at
# random from the ranking (--explore) so that the model also sees what
# ranks low, on one thread, with the analytic model ranking and the
# backend's own schedules; then 8 of them again, to tell how well the
# measurements agree with themselves (train-cost-model reports it, and
# trains on the faster of the two).  About 25 minutes on the 2-vCPU VM; run
# it on a quiet machine (no builds beside it), then train:
#
#   bench/costmodel/collect.sh PATC OUTDIR
#   PATC train-cost-model OUTDIR/runs/*/tune.jsonl -o stdlib/cost-x86-64.model
#
# (`make cost-model` does both.)  x86-64.jsonl.gz holds the logs the shipped
# model was trained on: two whole runs of this script (2026-12-02, and
# 2026-12-05 with the measured buffers in huge pages), 5980 measurements of
# 2446 kernels, every kernel measured at least twice:
#
#   PATC train-cost-model <(zcat x86-64.jsonl.gz) -o stdlib/cost-x86-64.model
set -euo pipefail
patc=$(realpath "$1")
out=$2
mkdir -p "$out"
cd "$out"
mkdir -p runs
i=0 again=
for shape in 768,768,256 1536,512,256 512,1536,384 1024,1024,128 3072,768,128 768,3072,128 256,1152,196 \
	128,576,784 2048,512,256; do
	IFS=, read -r M K N <<<"$shape"
	for sp in 50 75 87.5 93.75; do
		i=$((i + 1))
		kind=$([ $((i % 2)) = 0 ] && echo heads || echo plain)
		printf 'op w: spmm(M = %s, K = %s, N = %s) {\n    weights = random(seed = %s, kind = %s, group = 64);\n}\n' \
			"$M" "$K" "$N" "$i" "$kind" >"p$i.pat"
		"$patc" "p$i.pat" --search --cost-model=analytic --tune=0 --sparsity="$sp%" --budget=100% --topk=60 \
			--explore=70% --threads=1 --seed=$i -o "runs/$i" >"runs/$i.log" 2>&1 ||
			{ echo "collect: search $i failed (runs/$i.log)" >&2; exit 1; }
		echo "collect: $i/36 ${M}x${K}x${N} at $sp%"
		case " 5 8 10 14 17 29 31 33 " in
		*" $i "*) again="$again $i:$sp" ;;
		esac
	done
done
for a in $again; do # the same search (seed, candidates) measured again
	i=${a%%:*} sp=${a#*:}
	"$patc" "p$i.pat" --search --cost-model=analytic --tune=0 --sparsity="$sp%" --budget=100% --topk=60 \
		--explore=70% --threads=1 --seed=$i -o "runs/$i.again" >"runs/$i.again.log" 2>&1 ||
		{ echo "collect: search $i again failed (runs/$i.again.log)" >&2; exit 1; }
	echo "collect: search $i again"
done
