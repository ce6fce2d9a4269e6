#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# c_api.sh - compiles examples/c_api/layer.pat to an object with patc, links
# examples/c_api/main.c against it with the system C compiler, and runs it
# (it checks the ops against a float64 product); then the same against the
# shared library --emit=so links, and examples/c_api/layer.py loading it
# from Python.
#
#   tests/c_api.sh PATC
set -eu
patc=$1
root=$(cd "$(dirname "$0")/.." && pwd)
export PATC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$patc" "$root/examples/c_api/layer.pat" -o "$tmp/out" --emit=llvm,asm,so
for f in layer.o layer.h layer.safetensors layer.ll layer.s layer.so; do
	[ -s "$tmp/out/$f" ] || { echo "FAIL: no $f"; exit 1; }
done
# the generated headers guard as PATC_BASE_H, a GPU's as PATC_BASE_GPU_H (cuda_api.sh checks it)
grep -qx '#ifndef PATC_layer_H' "$tmp/out/layer.h" || { echo "FAIL: layer.h's guard is not PATC_layer_H"; exit 1; }
cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/out" "$root/examples/c_api/main.c" "$tmp/out/layer.o" \
	-lm -lpthread -o "$tmp/demo"
"$tmp/demo"
cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/out" "$root/examples/c_api/main.c" "$tmp/out/layer.so" \
	-Wl,-rpath,"$tmp/out" -lm -o "$tmp/demo_so"
"$tmp/demo_so"
python3 "$root/examples/c_api/layer.py" "$tmp/out/layer.so"
# the build line main.c and the README give, as written, in a copy of the example
line=$(sed -n 's/^ \*   \(patc layer.pat .*\)$/\1/p' "$root/examples/c_api/main.c")
grep -qF -- "$line" "$root/examples/c_api/README.md" || { echo "FAIL: main.c's build line is not the README's"; exit 1; }
mkdir "$tmp/copy" && cp "$root/examples/c_api/layer.pat" "$root/examples/c_api/main.c" "$tmp/copy"
bindir=$(cd "$(dirname "$patc")" && pwd)
(cd "$tmp/copy" && PATH="$bindir:$PATH" && eval "$line") >/dev/null ||
	{ echo "FAIL: the documented build line: $line"; exit 1; }
echo "c_api: 5 passed, 0 failed"
