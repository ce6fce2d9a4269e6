#!/usr/bin/env bash
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
cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/out" "$root/examples/c_api/main.c" "$tmp/out/layer.o" \
	-lm -lpthread -o "$tmp/demo"
"$tmp/demo"
cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/out" "$root/examples/c_api/main.c" "$tmp/out/layer.so" \
	-Wl,-rpath,"$tmp/out" -lm -o "$tmp/demo_so"
"$tmp/demo_so"
python3 "$root/examples/c_api/layer.py" "$tmp/out/layer.so"
echo "c_api: 3 passed, 0 failed"
