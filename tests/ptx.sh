#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ptx.sh - the NVPTX backend without a GPU: PTX for every stdlib pattern on
# four shapes (three that no tile size divides, the last large enough for
# patc's wide register tiles) and both activation layouts, and the 16-bit
# ops (tensor cores: mma.sync and mma.sp, bf16 and f16), is written by
# `patc -o DIR --target=sm_80|sm_90` and assembled by ptxas for its target; `ptxas -v` must report no local-memory spills and no
# stack frame for any kernel, and no load may be generic (each names its
# space: global, shared or param) nor read global memory without .nc; split-K
# on 768/768/512 adds with vector red on sm_90 (ISA 8.1), not before (8.0),
# and --explain says so; with --split-workspace it sums its parts through
# the module's workspace instead (whose slices alone are read back with
# ld.volatile, past L1).
# Then the no-driver path: `--run` on a GPU target exits 3 with a clear
# message on a machine without libcuda.so.1; and gpu_bench's bad arguments
# exit 2, its missing driver 3.
#
#   tests/ptx.sh PATC       (exit 77, skipped, when ptxas is absent)
set -eu
patc=$1
root=$(cd "$(dirname "$0")/.." && pwd)
export PATC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

. "$root/tests/gpu_programs.sh"
patterns=("${gpu_patterns[@]}")
gpu_programs "$tmp" fixed "768 768 512" "1000 1100 333" "100 70 33" "1000 1100 2100"

ptxas=$(command -v ptxas || true)
[ -n "$ptxas" ] || [ ! -x /usr/local/cuda/bin/ptxas ] || ptxas=/usr/local/cuda/bin/ptxas
if [ -z "$ptxas" ]; then
	echo "SKIPPED: ptxas not found (install the CUDA toolkit or put ptxas on PATH); PTX not assembled"
else
	for f in "$tmp"/s*.pat; do
		# sm_90w: the 16-bit ops with --wgmma, PTX for sm_90a
		for sm in sm_80 sm_90 sm_90w; do
			base=$(basename "$f" .pat)
			target=$sm arch=$sm opts=""
			if [ $sm = sm_90w ]; then
				case $base in *_tc) ;; *) continue ;; esac
				target=sm_90 arch=sm_90a opts=--wgmma
			fi
			out=$tmp/out_${base}_$sm
			if ! "$patc" "$f" --target=$target $opts -o "$out" 2>"$tmp/err"; then
				bad "patc $(basename "$f") --target=$target $opts: $(grep error "$tmp/err" | head -3)"
				continue
			fi
			if ! "$ptxas" -arch=$arch -v "$out/$base.ptx" -o "$out/$base.cubin" 2>"$tmp/log"; then
				bad "ptxas -arch=$arch $(basename "$f"): $(head -5 "$tmp/log")"
				continue
			fi
			if [ $sm = sm_90w ]; then
				# the dense-tile ops on wgmma where X is staged (768/768/512:
				# its rows are 16-byte aligned in both layouts), a step's wgmma
				# left in flight through the next step's barrier (wait_group 1),
				# and ptxas with nothing to say of them: no warning, nor its
				# note (C7515, "Potential Performance Loss: wgmma.mma_async
				# instructions are serialized") where it must wait for each
				# wgmma, as where the accumulators are touched in between
				wg=$(grep -c "wgmma.mma_async.sync.aligned.m64n" "$out/$base.ptx" || true)
				if [ $base = s0_tc ]; then
					[ "$wg" -gt 0 ] && grep -q "^\.target sm_90a" "$out/$base.ptx" || { bad "$base $sm: no wgmma"; continue; }
					grep -q "wgmma.wait_group.sync.aligned 1;" "$out/$base.ptx" || { bad "$base $sm: no wgmma in flight"; continue; }
				fi
				if grep -i "warning\|performance loss\|serialized" "$tmp/log" >"$tmp/warn"; then
					bad "$base $sm: ptxas warns: $(head -2 "$tmp/warn")"
					continue
				fi
			fi
			# (one a pattern, N at run time; besides, for an N whose alignment
			# another plan needs, OP$any for the other N)
			kernels=$(grep "Compiling entry function" "$tmp/log" | grep -vc '\$any' || true)
			want=${#patterns[@]}
			case $base in *_tc)
				want=${#gpu_tc_patterns[@]}
				# every block op on tensor cores, the 2:4 one on CUDA cores
				mma=$(grep -c "mma.sync.aligned.m16n8k16.row.col.f32\|wgmma.mma_async" "$out/$base.ptx" || true)
				[ "$mma" -gt 0 ] || { bad "$base $sm: no mma.sync or wgmma"; continue; }
				grep -q "tensor cores, X and W in bf16" "$out/$base.h" && grep -q "tensor cores, X and W in f16" "$out/$base.h" &&
					grep -q "fp32 on CUDA cores" "$out/$base.h" || { bad "$base $sm: the header's paths"; continue; } ;;
			esac
			[ "$kernels" -eq "$want" ] || { bad "$base $sm: $kernels kernels"; continue; }
			# every load names its space: a generic one (the index arrays'
			# once) may alias shared memory and is ordered behind cp.async
			if grep -E "^[[:space:]]+ld\.(u|s|b|f|v)[0-9]" "$out/$base.ptx" >"$tmp/generic"; then
				bad "$base $sm: generic loads: $(head -2 "$tmp/generic" | tr -s '\t ' ' ')"
				continue
			fi
			# and every load from global memory is non-coherent (.nc): a
			# kernel reads nothing it writes (the sparse metadata's 16-byte
			# loads once lost it in the optimiser's scalarisation)
			if grep -E "^[[:space:]]+ld\.global\.(u|s|b|f|v)[0-9]" "$out/$base.ptx" >"$tmp/coherent"; then
				bad "$base $sm: global loads without .nc: $(head -2 "$tmp/coherent" | tr -s '\t ' ' ')"
				continue
			fi
			# a module is ISA 8.1 where it adds to C with a vector red (sm_90
			# only), else 8.0; split-K on 768/768/512 (layout kn) does: a
			# thread's 4 adjacent columns on CUDA cores, a lane's 2 on the
			# tensor cores (mma.sync; --wgmma's transposed kernels add floats)
			vred=$(grep -c "red.global.add.v[24].f32" "$out/$base.ptx" || true)
			version=$(grep -m1 "^\.version" "$out/$base.ptx" | cut -d' ' -f2)
			if [ "$version" != "$([ "$vred" -gt 0 ] && echo 8.1 || echo 8.0)" ] || { [ $target != sm_90 ] && [ "$vred" -gt 0 ]; }; then
				bad "$base $sm: $vred vector red, ISA $version"
				continue
			fi
			want_red=""
			[ $sm = sm_90 ] && [ $base = s0_kn ] && want_red=v4
			[ $sm = sm_90 ] && [ $base = s0_tc ] && want_red=v2
			if [ -n "$want_red" ] && ! grep -q "red.global.add.$want_red.f32" "$out/$base.ptx"; then
				bad "$base $sm: no red.global.add.$want_red.f32"
				continue
			fi
			if grep -E "[1-9][0-9]* bytes (spill|stack)" "$tmp/log" >/dev/null; then
				bad "$base $sm spills: $(grep -E '[1-9][0-9]* bytes (spill|stack)' "$tmp/log" | head -2)"
				continue
			fi
			ok
		done
	done
	echo "ptxas ($("$ptxas" --version | tail -1)): $((pass)) modules (${#patterns[@]} kernels each, ${#gpu_tc_patterns[@]} in the 16-bit ones, also with --wgmma for sm_90a) assembled without spills"
fi

# --explain says how C is written: split-K on 768/768/512 adds a thread's 4
# adjacent columns by vector red on sm_90, a float an atomic on sm_80; the
# same op in layout nk, not split, stores 4 adjacent rows a store
printf 'include "all.pat";\nop s: spmm(M = 768, K = 768, N = 512) { weights = random(seed = 1); apply block(32, 32, 25%%); }\nop n: spmm(M = 4096, K = 1024, N = 1024, layout = nk) { weights = random(seed = 1); apply block(32, 32, 25%%); }\n' >"$tmp/c.pat"
for sm in sm_80 sm_90; do
	"$patc" "$tmp/c.pat" --target=$sm --explain >"$tmp/explain" 2>&1 || true
	want="C: added with atomics, a float at a time"
	[ $sm = sm_90 ] && want="C: added with atomics, 4 adjacent columns at a time (vector red, sm_90)"
	if grep -qF "$want" "$tmp/explain" && grep -qF "C: stored 4 adjacent rows a store" "$tmp/explain"; then
		ok
	else
		bad "--explain on $sm: $(grep 'C:' "$tmp/explain" | head -2 | tr -s ' ')"
	fi
done

# --split-workspace: the same split op sums its parts through the module's
# workspace (a counter a thread, fences, the slices read back past L1), with
# no atomics on C and no zeroing before the launch; assembled for both
# targets where ptxas is, and --explain says so
for sm in sm_80 sm_90; do
	"$patc" "$tmp/c.pat" --target=$sm --split-workspace --explain >"$tmp/explain" 2>&1 || true
	if ! grep -qE "C: each of the [0-9]+ parts stores its sums to a workspace, 4 adjacent columns a store" "$tmp/explain" ||
		grep -A8 "^op s" "$tmp/explain" | grep -q "C is zeroed"; then
		bad "--split-workspace --explain on $sm: $(grep 'C:\|zeroed' "$tmp/explain" | head -3 | tr -s ' ')"
		continue
	fi
	out=$tmp/ws_$sm
	if ! "$patc" "$tmp/c.pat" --target=$sm --split-workspace --fixed-n -o "$out" 2>"$tmp/err"; then
		bad "--split-workspace -o on $sm: $(head -3 "$tmp/err")"
		continue
	fi
	for want in "fence.acq_rel.gpu" "atom.global.add.u32" "ld.volatile.global.v4.f32" "global .align 16 .b8 c_s_\$_wsum\["; do
		grep -q "$want" "$out/c.ptx" || { bad "--split-workspace on $sm: no '$want' in the PTX"; continue 2; }
	done
	if grep -qE "[[:space:]](red|atom)\.global\.add\.(v[24]\.)?f32" "$out/c.ptx" || ! grep -q "must not overlap" "$out/c.h"; then
		bad "--split-workspace on $sm: atomics on C, or the header does not warn of overlapping launches"
		continue
	fi
	if [ -n "$ptxas" ] && { ! "$ptxas" -arch=$sm -v "$out/c.ptx" -o "$out/c.cubin" 2>"$tmp/log" ||
		grep -qE "[1-9][0-9]* bytes (spill|stack)" "$tmp/log"; }; then
		bad "--split-workspace, ptxas -arch=$sm: $(grep -E 'error|spill' "$tmp/log" | head -3)"
		continue
	fi
	ok
done

# epilogues (ReLU, GELU, SiLU, bias, accumulate) in the stores of C, and in a
# second kernel after split-K (OP_epi) and after rows with no owner (channel);
# N at run time, an aligned and an any-N kernel for N = 40: assembled for both
# targets without spills
cat >"$tmp/epi.pat" <<'EOF2'
include "all.pat";
op a: spmm(M = 100, K = 72, N = 40, activation = gelu_tanh) { weights = random(seed = 3); bias = random(seed = 4); apply block(8, 8, 50%); }
op b: spmm(M = 100, K = 72, N = 40, activation = silu, accumulate = true, layout = nk) { weights = random(seed = 3); bias = random(seed = 5); apply channel(50%); }
op c: spmm(M = 96, K = 64, N = 40, activation = gelu_erf, accumulate = true) { weights = random(seed = 3); apply block(32, 32, 50%); }
op t: spmm(M = 128, K = 128, N = 64, dtype = bf16, activation = relu) { weights = random(seed = 3); bias = random(seed = 6); apply block(16, 16, 50%); }
EOF2
for sm in sm_80 sm_90; do
	out=$tmp/epi_$sm
	if ! "$patc" "$tmp/epi.pat" --target=$sm -o "$out" 2>"$tmp/err"; then
		bad "epilogues -o on $sm: $(grep error "$tmp/err" | head -3)"
		continue
	fi
	if ! grep -q "^.visible .entry epi_a_epi(" "$out/epi.ptx" || ! grep -q "^.visible .entry epi_b_epi(" "$out/epi.ptx" ||
		! grep -q "Its epilogue: C = silu(W_s X + bias + C)" "$out/epi.h"; then
		bad "epilogues on $sm: no epilogue kernel after split-K or ownerless rows, or the header does not say"
		continue
	fi
	if [ -n "$ptxas" ] && { ! "$ptxas" -arch=$sm -v "$out/epi.ptx" -o "$out/epi.cubin" 2>"$tmp/log" ||
		grep -qE "[1-9][0-9]* bytes (spill|stack)" "$tmp/log"; }; then
		bad "epilogues, ptxas -arch=$sm: $(grep -E 'error|spill' "$tmp/log" | head -3)"
		continue
	fi
	ok
done

# the patterns GPU targets refuse: a diagnostic and exit 1, no output
for p in "tile_h(32, 25%)" "unstructured(25%)"; do
	echo "include \"all.pat\"; op w: spmm(M = 64, K = 64, N = 8) { apply $p; }" >"$tmp/refused.pat"
	set +e
	"$patc" "$tmp/refused.pat" --target=sm_90 -o "$tmp/refused" 2>"$tmp/err"
	rc=$?
	set -e
	if [ $rc -eq 1 ] && grep -q "cannot run on sm_90" "$tmp/err" && [ ! -e "$tmp/refused/refused.ptx" ]; then
		ok
	else
		bad "$p on sm_90: exit $rc"
	fi
done

# no driver: --run on a GPU target is an environment error (exit 3)
f=$tmp/s2_kn.pat
if ldconfig -p 2>/dev/null | grep -q "libcuda.so.1 "; then
	echo "note: libcuda.so.1 is installed here; the no-driver check is skipped"
else
	set +e
	"$patc" "$f" --target=sm_90 --run >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	if [ $rc -eq 3 ] && grep -q "needs an NVIDIA GPU: no CUDA driver" "$tmp/err"; then ok; else
		bad "--run without a driver: exit $rc, $(grep error "$tmp/err" | head -3)"; fi
fi
# gpu_bench (built beside patc): its bad arguments exit 2 before it looks
# for a GPU; without a driver it exits 3 saying so
bench=$(dirname "$patc")/gpu_bench
if [ -x "$bench" ]; then
	for args in "--seconds=abc" "--seconds=0" "--narrow --schedule=32,4,4,4,1,1" "--no-tc --tc-only"; do
		set +e
		# shellcheck disable=SC2086
		"$bench" "$root/stdlib" "$tmp/b.csv" $args 2>"$tmp/err"
		rc=$?
		set -e
		if [ $rc -eq 2 ] && grep -q "gpu_bench: " "$tmp/err" && [ ! -e "$tmp/b.csv" ]; then ok; else
			bad "gpu_bench $args: exit $rc, $(head -2 "$tmp/err")"; fi
	done
	set +e
	"$bench" --l2-ptx "$tmp/b.csv" >/dev/null 2>"$tmp/err"
	rc=$?
	set -e
	if [ $rc -eq 2 ] && grep -q "gpu_bench: --l2-ptx takes no other argument" "$tmp/err"; then ok; else
		bad "gpu_bench --l2-ptx with an argument: exit $rc, $(head -2 "$tmp/err")"; fi
	# the L2 ceiling's hand-written kernel, assembled with no spills or warnings
	if [ -n "$ptxas" ]; then
		for arch in sm_80 sm_90; do
			if "$bench" --l2-ptx >"$tmp/l2.ptx" && "$ptxas" -arch=$arch -v "$tmp/l2.ptx" -o "$tmp/l2.cubin" 2>"$tmp/log" &&
				grep -q " 0 bytes spill stores" "$tmp/log" && ! grep -qi warning "$tmp/log"; then ok; else
				bad "gpu_bench --l2-ptx, ptxas -arch=$arch: $(head -3 "$tmp/log")"; fi
		done
	fi
	if ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1 "; then
		set +e
		"$bench" "$root/stdlib" "$tmp/b.csv" --narrow --seconds=5 2>"$tmp/err"
		rc=$?
		set -e
		if [ $rc -eq 3 ] && grep -q "no CUDA driver" "$tmp/err"; then ok; else
			bad "gpu_bench without a driver: exit $rc, $(head -2 "$tmp/err")"; fi
	fi
else
	echo "note: $bench not built; its argument checks are skipped"
fi
echo "ptx: $pass passed, $fail failed"
[ $fail -eq 0 ]
