#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# real_weights.sh - prunes real pretrained weights when they are present.
#
#   tests/real_weights.sh PATC
#
# Needs data/use-lite.safetensors (make fetch-weights); without it the test
# says so and exits 77, which CTest reports as skipped.
set -u
patc=$1
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$root/data/use-lite.safetensors" ]; then
	echo "SKIPPED: data/use-lite.safetensors is absent (run 'make fetch-weights' to fetch it)"
	exit 77
fi
export PATC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root/tests/real" || exit 1
out=$("$patc" use_lite.pat 2>&1) || { echo "FAIL: $out"; exit 1; }
echo "$out"
# retained importance must lie between the density and the unstructured bound
echo "$out" | awk '/retained/ {
	for (i = 1; i <= NF; i++) {
		if ($i == "(density") d = $(i + 1) + 0
		if ($i == "retained") r = $(i + 1) + 0
		if ($i == "bound") b = $(i + 1) + 0
	}
	if (!(r > d && r <= b + 1e-9)) { print "FAIL: " $0; bad = 1 }
	n++
} END { exit bad || n != 2 }' || exit 1
"$patc" use_lite.pat --emit=weights -o "$tmp/w.safetensors" || exit 1
python3 "$root/tests/read_safetensors.py" "$tmp/w.safetensors" | grep "^tensor ffn1.index.k2 I32" >/dev/null || exit 1
echo "real weights: 1 passed, 0 failed"
