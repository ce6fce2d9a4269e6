#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# c_api.sh - compiles examples/c_api/layer.pat to an object with patc, links
# examples/c_api/main.c against it with the system C compiler, and runs it
# (it checks the ops against a float64 product); then the same against the
# shared library --emit=so links, and examples/c_api/layer.py loading it
# from Python; then for each x86-64 level (run where this CPU has it), and
# a library's refusal of a CPU that lacks its level.
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
# the x86-64 levels: an object and a library for each, whose header names the level, run where
# this CPU has it (its flags in /proc/cpuinfo; lzcnt left out, which some virtual machines do not
# list though CPUID has it) and skipped where it has not
has_level() { # v2|v3|v4
	local flags need f
	flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
	case $1 in
	v2) need="sse4_2 popcnt ssse3 cx16" ;;
	v3) need="sse4_2 popcnt ssse3 cx16 avx avx2 fma bmi1 bmi2 f16c movbe" ;;
	v4) need="sse4_2 popcnt ssse3 cx16 avx avx2 fma bmi1 bmi2 f16c movbe avx512f avx512bw avx512cd avx512dq avx512vl" ;;
	esac
	for f in $need; do case $flags in *" $f "*) ;; *) return 1 ;; esac; done
}
passed=5 skipped=""
for v in v2 v3 v4; do
	"$patc" "$root/examples/c_api/layer.pat" -o "$tmp/$v" --target=x86-64-$v --emit=so
	grep -qx "#define layer_TARGET \"x86-64-$v\" .*" "$tmp/$v/layer.h" ||
		{ echo "FAIL: layer.h of x86-64-$v does not define layer_TARGET"; exit 1; }
	grep -q "^ \* Compiled for x86-64-$v (" "$tmp/$v/layer.h" ||
		{ echo "FAIL: layer.h of x86-64-$v does not name it"; exit 1; }
	passed=$((passed + 2))
	cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/$v" "$root/examples/c_api/main.c" "$tmp/$v/layer.o" \
		-lm -lpthread -o "$tmp/$v/demo"
	cc -std=c11 -O2 -Wall -Wextra -Werror -iquote "$tmp/$v" "$root/examples/c_api/main.c" "$tmp/$v/layer.so" \
		-Wl,-rpath,"$tmp/$v" -lm -o "$tmp/$v/demo_so"
	if has_level $v; then
		"$tmp/$v/demo" | grep -qx "compiled for x86-64-$v (needs x86-64-$v)" ||
			{ echo "FAIL: the x86-64-$v object"; exit 1; }
		"$tmp/$v/demo_so" >/dev/null || { echo "FAIL: the x86-64-$v library"; exit 1; }
		passed=$((passed + 2))
	else
		skipped="$skipped x86-64-$v"
	fi
done
[ -z "$skipped" ] || echo "c_api: this CPU lacks$skipped: compiled, not run"
# -o without --target compiles for x86-64-v3 (main.c says what the header says)
grep -qx '#define layer_TARGET "x86-64-v3" .*' "$tmp/out/layer.h" ||
	{ echo "FAIL: -o without --target is not x86-64-v3"; exit 1; }
passed=$((passed + 1))
if has_level v3; then
	"$tmp/demo" | grep -qx "compiled for x86-64-v3 (needs x86-64-v3)" || { echo "FAIL: main.c's first line"; exit 1; }
	passed=$((passed + 1))
fi
# a library on a CPU without its level says so when it is loaded, before any kernel runs: the
# host made to lack two features (PATC_TEST_CPU_LACKS marks them missing in the check patc writes)
PATC_TEST_CPU_LACKS=avx512f,avx512bw "$patc" "$root/examples/c_api/layer.pat" -o "$tmp/lacks" \
	--target=x86-64-v4 --emit=so
cp "$tmp/lacks/layer.so" "$tmp/v4/layer.so"
rc=0
"$tmp/v4/demo_so" >"$tmp/out.txt" 2>"$tmp/err" || rc=$?
[ $rc -eq 127 ] && [ ! -s "$tmp/out.txt" ] &&
	grep -qx "layer.so needs x86-64-v4 (AVX-512); this CPU lacks avx512f, avx512bw" "$tmp/err" ||
	{ echo "FAIL: a library without its CPU: exit $rc, $(cat "$tmp/err")"; exit 1; }
rc=0
python3 "$root/examples/c_api/layer.py" "$tmp/v4/layer.so" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 127 ] && grep -q "this CPU lacks avx512f, avx512bw" "$tmp/err" ||
	{ echo "FAIL: a library without its CPU, from Python: exit $rc"; exit 1; }
passed=$((passed + 2))
echo "c_api: $passed passed, 0 failed"
