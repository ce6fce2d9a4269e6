#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cuda_api.sh - compiles examples/cuda_api/layer.pat for a GPU target, builds
# examples/cuda_api/main.c with the generated launcher using the system C
# compiler (no CUDA headers or libraries), and again against the launcher as
# the shared library --emit=so links, and runs both: on a machine with a GPU
# each must check both ops (exit 0); without a driver each must say so and
# exit 3.
#
#   tests/cuda_api.sh PATC [sm_80]
set -eu
patc=$1
sm=${2:-sm_80}
root=$(cd "$(dirname "$0")/.." && pwd)
export PATC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$patc" "$root/examples/cuda_api/layer.pat" --target=$sm -o "$tmp/out" --emit=llvm,so
for f in layer.ptx layer.h layer_launch.c layer.bin layer.safetensors layer.ll layer.so; do
	[ -s "$tmp/out/$f" ] || { echo "FAIL: no $f"; exit 1; }
done
# the generated headers guard as PATC_BASE_H (x86-64) and PATC_BASE_GPU_H (a GPU's: its functions
# are BASE_gpu_*), so that a program's two headers go together (c_api.sh checks the x86-64 one's)
grep -qx '#ifndef PATC_layer_GPU_H' "$tmp/out/layer.h" || { echo "FAIL: layer.h's guard is not PATC_layer_GPU_H"; exit 1; }
cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/out" "$root/examples/cuda_api/main.c" "$tmp/out/layer_launch.c" \
	-ldl -lm -o "$tmp/demo"
cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/out" "$root/examples/cuda_api/main.c" "$tmp/out/layer.so" \
	-Wl,-rpath,"$tmp/out" -lm -o "$tmp/demo_so"
for demo in demo demo_so; do
	set +e
	"$tmp/$demo" "$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	if [ $rc -eq 3 ] && grep -q "no CUDA driver" "$tmp/err"; then
		echo "cuda_api: $demo built; no GPU here, so it was not run ($(cat "$tmp/err"))"
	elif [ $rc -eq 0 ]; then
		echo "cuda_api: $demo 1 passed, 0 failed (ran on the GPU)"
	else
		echo "FAIL: $demo exited $rc: $(cat "$tmp/err")"
		exit 1
	fi
done
