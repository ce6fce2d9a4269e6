#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run.sh - the GPU checks, in one script, for a machine with an
# NVIDIA GPU (sm_80 or newer) and its driver:
#   1. correctness: every stdlib pattern the GPU rules allow, on shapes the
#      tiles divide and shapes they do not, both activation layouts, PTX for
#      sm_80 (JIT-compiled by the driver) and for the GPU's own target,
#      fresh random inputs each run, C poisoned (NaN) before the checked
#      run, float64 reference (`patc --run`; a wrong result exits 4); and
#      the 16-bit ops (tensor cores in bf16 and f16, 2:4 on the sparse
#      tensor cores, the reference on the
#      rounded inputs);
#   2. the benchmark: gpu_bench over the paper's shapes beside cuBLAS,
#      writing gpu.csv and printing the table (staging X in shared memory
#      is compared with the plain path on three shapes first, the wide
#      register tiles with at most 4 rows a thread on two, and split-K's
#      parts summed through a workspace with atomics into a zeroed C on the
#      four shapes that split, and the tensor-core kernels through 6
#      shared-memory buffers with 3, and the benchmark runs with the faster
#      of each), then the bf16 tensor-core kernels
#      beside cuBLAS in bf16 (staged or plain likewise), then the fraction
#      of the L2 read ceiling the staged kernels' traffic reached
#      (l2_table.py, gpu_l2.md);
#   2b. the peers (../shared/bench/gpu_peers.py, through PyTorch) on the
#      same shapes, and patc's best against theirs (PEERS=0 leaves it out);
#   3. `patc --search --target=<the GPU's>` on bert_ffn1, 768/768/512 and
#      4096^3 where the time left allows (SEARCH=0 leaves it out, SEARCH=1
#      runs it whatever the time);
#   4. optionally (SWEEP=1) a sweep of kernel schedules on three shapes.
#
# The whole stays within RUN_SECONDS (default 345, under 6 minutes): the
# correctness checks always run whole; the benchmarks start no kernel past
# their share of the time left (gpu_bench --seconds; the table then covers
# the shapes measured whole, and gpu_bench.log names those left out).
#
#   tests/gpu/run.sh [BIN] [OUTDIR]
#
# STEPS names the parts to run (default "correct bench peers search"; e.g.
# STEPS=search for a second call that runs the search alone).
# BIN holds patc and gpu_bench (default: build/), and may hold lib/ with
# shared libraries they need that the machine lacks.  The binaries are
# built where LLVM 19 is (patc links LLVM statically; a GPU machine image
# usually has no LLVM 19): `make gpu-carry` packs them.  BENCH=quick
# (default) leaves out the three 2^36-FLOP shapes; BENCH=full runs all 12.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build}
out=${2:-$root/bench/results}
mkdir -p "$out"
[ -d "$bin/lib" ] && export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATC_STDLIB=$root/stdlib
start=$(date +%s)
deadline=$((start + ${RUN_SECONDS:-345}))
left() { echo $((deadline - $(date +%s))); }
fail=0

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>/dev/null ||
	echo "nvidia-smi: not available"
if [ -z "${PATC_CUBLAS:-}" ]; then
	for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
		$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cublas", "lib") for p in nvidia.__path__))' 2>/dev/null) \
		$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13", "lib") for p in nvidia.__path__))' 2>/dev/null); do
		for v in 13 12; do
			if [ -e "$d/libcublas.so.$v" ]; then export PATC_CUBLAS=$d/libcublas.so.$v; break 2; fi
		done
	done
fi
echo "cuBLAS: ${PATC_CUBLAS:-not found (the speedups will be missing)}"
sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . | tr -d ' ')
sm=sm_${sm:-90}
case $sm in sm_80|sm_86|sm_89|sm_90) ;; *) sm=sm_90 ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# STEPS: the parts to run (default all of them; e.g. STEPS=search for a
# second call that runs only the search)
want() { case " ${STEPS:-correct bench peers search} " in *" $1 "*) return 0 ;; esac; return 1; }
# the peers (2b) where they can run: 100 s kept for them from the benchmark
peers=${PEERS:-$bin/gpu_peers.py}
keep=60
if want peers && [ "$peers" != 0 ] && [ -f "$peers" ] && python3 -c 'import torch' 2>/dev/null; then
	keep=160
else
	peers=0
fi

# ---- 1. correctness ----
if want correct; then
	. "$root/tests/gpu_programs.sh"
	patterns=("${gpu_patterns[@]}")
	shapes=("768 768 512" "1000 1100 333" "100 70 33" "64 576 3136" "1000 1100 2100")
	gpu_programs "$tmp" fresh "${shapes[@]}"
	checked=0
	for s in "${!shapes[@]}"; do
		read -r M K N <<<"${shapes[$s]}"
		for layout in kn nk; do
			f=$tmp/s${s}_$layout.pat
			# ws: split-K's parts summed through a workspace, on the two shapes that split
			for target in $sm sm_80 ws; do
				[ $target = sm_80 ] && [ $s -ne 1 ] && [ $s -ne 2 ] && continue
				[ $target = ws ] && [ $s -ne 0 ] && [ $s -ne 3 ] && continue
				opts="--target=$target"
				[ $target = ws ] && opts="--target=$sm --split-workspace"
				if "$bin/patc" "$f" $opts --run >"$tmp/log" 2>"$tmp/err"; then
					checked=$((checked + ${#patterns[@]}))
				else
					echo "FAIL: $M/$K/$N $layout $opts: $(grep -E 'error' "$tmp/err" | head -3)"
					fail=$((fail + 1))
				fi
				# one line per op: shape layout target op time speedup error
				awk -v s="$M/$K/$N" -v l=$layout -v t=$target '
					/^p[0-9]+:/ {op=$1; sub(":", "", op)}
					/patc kernel/ {us=$3}
					/speedup over dense/ {sp=$4; err=$NF; printf "  %-15s %s %s %-4s %9.1f us  %6s  err %s\n", s, l, t, op, us, sp, err}
					/cuBLAS not measured/ {printf "  %-15s %s %s %-4s %9.1f us  (no cuBLAS)\n", s, l, t, op, us}' "$tmp/log" >>"$out/gpu_check.txt"
			done
		done
	done
	# the 16-bit ops: tensor cores (bf16, f16), sparse tensor cores (2:4) and one that stays on CUDA cores
	for s in "${!shapes[@]}"; do
		read -r M K N <<<"${shapes[$s]}"
		f=$tmp/s${s}_tc.pat
		# sm_90w: on Hopper, again with --wgmma (the staged dense tiles on wgmma)
		for target in $sm sm_80 sm_90w; do
			[ $target = sm_80 ] && [ $s -ne 1 ] && continue
			opts="--target=$target"
			if [ $target = sm_90w ]; then
				[ $sm = sm_90 ] || continue
				opts="--target=sm_90 --wgmma"
			fi
			if "$bin/patc" "$f" $opts --run >"$tmp/log" 2>"$tmp/err"; then
				checked=$((checked + ${#gpu_tc_patterns[@]}))
			else
				echo "FAIL: $M/$K/$N 16-bit ops $opts: $(grep -E 'error' "$tmp/err" | head -3)"
				fail=$((fail + 1))
			fi
			awk -v s="$M/$K/$N" -v t=$target '
				/^t[0-9]+:/ {op=$1; sub(":", "", op)}
				/patc kernel/ {us=$3}
				/speedup over dense/ {sp=$4; err=$NF; printf "  %-15s tc %s %-4s %9.1f us  %6s  err %s\n", s, t, op, us, sp, err}
				/cuBLAS not measured/ {printf "  %-15s tc %s %-4s %9.1f us  (no cuBLAS)\n", s, t, op, us}' "$tmp/log" >>"$out/gpu_check.txt"
		done
	done
	echo "correctness: $checked kernels checked, $fail failing runs ($(( $(date +%s) - start )) s)"
	echo "  (per kernel: $out/gpu_check.txt; patterns: ${patterns[*]}; 16-bit: ${gpu_tc_patterns[*]})"

	# the launcher example: PTX for sm_80 (JIT-compiled by the driver) and for
	# the GPU's own target, built with the system C compiler, run on the GPU
	if command -v cc >/dev/null; then
		for target in sm_80 $sm; do
			if "$root/tests/cuda_api.sh" "$bin/patc" $target >"$tmp/log" 2>&1 && grep -q "ran on the GPU" "$tmp/log"; then
				echo "cuda_api example ($target): ran and checked"
			else
				echo "FAIL: cuda_api example ($target): $(tail -3 "$tmp/log")"
				fail=$((fail + 1))
			fi
		done
	else
		echo "cuda_api example: no C compiler on this machine; not built"
	fi
fi

# ---- 2. the benchmark ----
if want bench; then
	# Staging X in shared memory is measured against the plain path on three
	# shapes first (geometric mean of the best structured pattern over the
	# three sparsities); the benchmark runs with the faster one.
	# (the first table only: the speedups; the fractions of the floors follow)
	score() { awk -F'|' '/^$/ {exit} NR>2 && /^\|/ {gsub(/[ x]/, "", $3); s += log($3); n++} END {printf "%.4f", n ? exp(s / n) : 0}'; }
	# the tensor-core table's patterns, each its geometric mean likewise
	per() {
		awk -F'|' '/^$/ {exit}
			NR>2 && /^\|/ {for (i = 4; i <= 6; i++) {gsub(/[ x]/, "", $i); if ($i > 0) {s[i] += log($i); n[i]++}}}
			END {for (i = 4; i <= 6; i++) m[i] = n[i] ? exp(s[i] / n[i]) : 0
				printf "block32 %.2fx, block64 %.2fx, 2:4 %.2fx", m[4], m[5], m[6]}'
	}
	staged=$("$bin/gpu_bench" "$root/stdlib" "$tmp/a.csv" --sm=$sm --shapes=3,1,8 --no-tc 2>/dev/null | score)
	plain=$("$bin/gpu_bench" "$root/stdlib" "$tmp/b.csv" --sm=$sm --shapes=3,1,8 --no-stage --no-tc 2>/dev/null | score)
	stage_flag=""
	awk -v a="$staged" -v b="$plain" 'BEGIN {exit !(b > a)}' && stage_flag=--no-stage
	echo "staging X in shared memory: ${staged}x, plain: ${plain}x (768/768/512, 4096/1024/1024, 256/1152/3136);" \
		"the benchmark runs ${stage_flag:-with staging}" | tee "$out/gpu_stage.txt"
	# the same for the tensor-core kernels (bf16): staged with cp.async and
	# ldmatrix, or B fragments read from global memory
	"$bin/gpu_bench" "$root/stdlib" "$tmp/c.csv" --sm=$sm --shapes=3,1,8 --tc-only >"$tmp/c.md" 2>/dev/null
	tc_staged=$(score <"$tmp/c.md")
	tc_plain=$("$bin/gpu_bench" "$root/stdlib" "$tmp/d.csv" --sm=$sm --shapes=3,1,8 --no-stage --tc-only 2>/dev/null | score)
	tc_flag=""
	awk -v a="$tc_staged" -v b="$tc_plain" 'BEGIN {exit !(b > a)}' && tc_flag=--no-stage
	echo "tensor cores (bf16), staged: ${tc_staged}x, plain: ${tc_plain}x (the same shapes);" \
		"the benchmark runs ${tc_flag:-with staging}" | tee -a "$out/gpu_stage.txt"
	# on Hopper, the blocks on wgmma (--wgmma) against mma.sync
	if [ $sm = sm_90 ] && [ -z "$tc_flag" ]; then
		tc_wg=$("$bin/gpu_bench" "$root/stdlib" "$tmp/g.csv" --sm=$sm --shapes=3,1,8 --tc-only --wgmma 2>"$tmp/wg.log" | score)
		grep -E "block(32|64)" "$tmp/wg.log" | sed 's/^/  /' | tee -a "$out/gpu_stage.txt"
		awk -v a="$tc_staged" -v b="$tc_wg" 'BEGIN {exit !(b > a)}' && tc_flag=--wgmma
		echo "tensor cores (bf16) with the blocks on wgmma: ${tc_wg}x (the same shapes);" \
			"the benchmark runs ${tc_flag:-with mma.sync}" | tee -a "$out/gpu_stage.txt"
	fi
	# a deeper pipeline: the staged tensor-core kernels through 6 buffers
	# (--tc-stages=6: the copies run 5 steps ahead, 4 on wgmma, in steps of 16 k where 6
	# of 32 k do not fit) against patc's 3
	tc_stages_flag=""
	if [ "$tc_flag" != --no-stage ]; then
		tc_three=$tc_staged
		[ "$tc_flag" = --wgmma ] && tc_three=$tc_wg
		"$bin/gpu_bench" "$root/stdlib" "$tmp/j.csv" --sm=$sm --shapes=3,1,8 --tc-only $tc_flag --tc-stages=6 \
			>"$tmp/j.md" 2>/dev/null
		tc_deep=$(score <"$tmp/j.md")
		awk -v a="$tc_three" -v b="$tc_deep" 'BEGIN {exit !(b > a)}' && tc_stages_flag=--tc-stages=6
		echo "tensor cores (bf16) through 6 buffers (past 48 KiB in dynamic shared memory): ${tc_deep}x ($(per \
			<"$tmp/j.md")), 3: ${tc_three}x (the same shapes); the benchmark runs with" \
			"${tc_stages_flag:+6}${tc_stages_flag:-3}" | tee -a "$out/gpu_stage.txt"
	fi
	# bigger blocks: up to 8 warps (--tc-warps=8: 128 rows of 2:4 share each
	# staged row of X; with the dynamic shared memory it allows, 32-k steps
	# for 32 x 32 blocks and 4 column slices for the hybrid) against patc's
	# 4, on mma.sync and mma.sp (wgmma keeps its warpgroup)
	tc_warps_flag=""
	if [ -z "$tc_flag" ]; then
		tc_four=$tc_staged four_md=$tmp/c.md
		[ -n "$tc_stages_flag" ] && tc_four=$tc_deep four_md=$tmp/j.md
		"$bin/gpu_bench" "$root/stdlib" "$tmp/k.csv" --sm=$sm --shapes=3,1,8 --tc-only $tc_stages_flag --tc-warps=8 \
			>"$tmp/k.md" 2>/dev/null
		tc_eight=$(score <"$tmp/k.md")
		awk -v a="$tc_four" -v b="$tc_eight" 'BEGIN {exit !(b > a)}' && tc_warps_flag=--tc-warps=8
		echo "tensor cores (bf16) in blocks of up to 8 warps: ${tc_eight}x ($(per <"$tmp/k.md")), 4: ${tc_four}x" \
			"($(per <"$four_md")) (the same shapes); the benchmark runs with ${tc_warps_flag:+8}${tc_warps_flag:-4}" |
			tee -a "$out/gpu_stage.txt"
	fi
	# patc's wide register tiles (8 x 8 and 8 x 4 a thread where X is staged
	# and the grid fills the GPU) against at most 4 rows a thread, on two
	# shapes where they apply
	wide=$("$bin/gpu_bench" "$root/stdlib" "$tmp/e.csv" --sm=$sm --shapes=1,9 $stage_flag --no-tc 2>/dev/null | score)
	narrow=$("$bin/gpu_bench" "$root/stdlib" "$tmp/f.csv" --sm=$sm --shapes=1,9 $stage_flag --narrow --no-tc 2>/dev/null | score)
	wide_flag=""
	awk -v a="$wide" -v b="$narrow" 'BEGIN {exit !(b > a)}' && wide_flag=--narrow
	echo "wide register tiles: ${wide}x, at most 4 rows a thread: ${narrow}x (4096/1024/1024, 4096/4096/4096);" \
		"the benchmark runs ${wide_flag:-with the wide tiles}" | tee -a "$out/gpu_stage.txt"
	# split-K's parts summed through a workspace (--split-workspace: no
	# zeroing of C, no atomics) against atomics into a zeroed C, on the four
	# shapes whose kernels split their walk along k
	atomics=$("$bin/gpu_bench" "$root/stdlib" "$tmp/h.csv" --sm=$sm --shapes=3,5,6,7 $stage_flag $wide_flag --no-tc \
		2>/dev/null | score)
	wsum=$("$bin/gpu_bench" "$root/stdlib" "$tmp/i.csv" --sm=$sm --shapes=3,5,6,7 $stage_flag $wide_flag --no-tc \
		--split-workspace 2>/dev/null | score)
	wsum_flag=""
	awk -v a="$atomics" -v b="$wsum" 'BEGIN {exit !(b > a)}' && wsum_flag=--split-workspace
	echo "split-K through a workspace: ${wsum}x, atomics into a zeroed C: ${atomics}x (768/768/512, 768/3072/512," \
		"128/576/784, 64/576/3136); the benchmark runs ${wsum_flag:-with atomics}" | tee -a "$out/gpu_stage.txt"
	bench=${BENCH:-quick}
	[ "$bench" = full ] && bench=""
	# fp32 two thirds of the time left (less a minute for the search and the
	# peers' time), bf16 the rest
	share=$((($(left) - keep) * 2 / 3))
	[ $share -ge 10 ] || share=10
	"$bin/gpu_bench" "$root/stdlib" "$out/gpu.csv" $bench --sm=$sm $stage_flag $wide_flag $wsum_flag --no-tc \
		--seconds=$share \
		2>"$out/gpu_bench.log" | tee "$out/gpu_table.md"
	[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "FAIL: gpu_bench: $(tail -3 "$out/gpu_bench.log")"; fail=$((fail + 1)); }
	echo
	share=$(($(left) - keep))
	[ $share -ge 10 ] || share=10
	"$bin/gpu_bench" "$root/stdlib" "$tmp/tc.csv" $bench --sm=$sm $tc_flag $tc_stages_flag $tc_warps_flag --tc-only \
		--seconds=$share \
		2>>"$out/gpu_bench.log" | tee -a "$out/gpu_table.md"
	[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "FAIL: gpu_bench --tc-only: $(tail -3 "$out/gpu_bench.log")"; fail=$((fail + 1)); }
	grep -h "not measured\\|measured in part" "$out/gpu_bench.log" | sed 's/^/  /'
	tail -n +2 "$tmp/tc.csv" >>"$out/gpu.csv"
	grep -h "ceilings" "$out/gpu_bench.log" | head -1
	python3 "$root/tests/gpu/l2_table.py" "$out/gpu.csv" | tee "$out/gpu_l2.md"
	echo "benchmark done ($(( $(date +%s) - start )) s)"
fi

# ---- 2b. the peers: what users would pick instead, through PyTorch ----
# ../shared/bench/gpu_peers.py (make gpu-carry packs it into BIN; PEERS=FILE
# names another): Triton BSR, cuSPARSE CSR and cuSPARSELt 2:4 on the same
# shapes and sparsities, kernel time of CUDA-graph replays with the L2
# flushed, beside cuBLAS through PyTorch; then patc's best against the best
# peer (tests/gpu/peers_table.py).  PEERS=0 leaves it out; it takes up to
# 100 s of the time left, less a minute (its budget covers its measurements,
# and the timeout its start and its end).
if [ "$peers" != 0 ] && [ "$(left)" -ge 80 ]; then
	pb=$(($(left) - 75))
	[ $pb -le 85 ] || pb=85
	if OUT=$tmp/peers PYTHONUNBUFFERED=1 timeout $((pb + 15)) python3 "$peers" --graphs --budget-s $pb --target-ms 20 \
		>"$out/gpu_peers.log" 2>&1 && [ -s "$tmp/peers/gpu_baselines.csv" ]; then
		cp "$tmp/peers/gpu_baselines.csv" "$out/gpu_peers.csv"
		if [ -s "$out/gpu.csv" ]; then
			python3 "$root/tests/gpu/peers_table.py" "$out/gpu.csv" "$out/gpu_peers.csv" | tee "$out/gpu_peers.md"
		fi
	else
		echo "peers: gpu_peers.py failed: $(tail -2 "$out/gpu_peers.log")"
	fi
	echo "peers done ($(( $(date +%s) - start )) s)"
else
	want peers && echo "peers: left out (PEERS=0, no gpu_peers.py in $bin, no PyTorch, or under 80 s left)"
fi

# ---- 3. the search on the GPU (SEARCH=0 leaves it out) ----
# `--search --target=$sm` on bert_ffn1 and on 768/768/512 and 4096/4096/4096
# (seeded head-structured weights, 75%, the default budget, top 4 measured):
# each candidate compiled to PTX, checked and timed in a child process,
# dense cuBLAS beside it; the summary lines go to gpu_search.txt.
search=${SEARCH:-auto}
want search || search=0
if [ "$search" = auto ]; then
	if [ "$(left)" -ge 120 ]; then search=1; else
		echo "search: left out ($(left) s of RUN_SECONDS left; SEARCH=1 runs it)"; search=0; fi
fi
if [ "$search" = 1 ]; then
	printf 'op s768: spmm(M = 768, K = 768, N = 512) { weights = random(seed = 7, kind = heads, group = 64); }\n' \
		>"$tmp/s768.pat"
	printf 'op s4096: spmm(M = 4096, K = 4096, N = 4096) { weights = random(seed = 7, kind = heads, group = 64); }\n' \
		>"$tmp/s4096.pat"
	nsearch=3
	: >"$out/gpu_search.txt"
	for f in "$root/examples/bert_ffn1.pat" "$tmp/s768.pat" "$tmp/s4096.pat"; do
		name=$(basename "$f" .pat)
		# auto: a third, a half, then all of the time left; SEARCH=1: 300 s each
		limit=300
		if [ "${SEARCH:-auto}" != 1 ]; then
			limit=$(($(left) / nsearch))
			[ $limit -ge 40 ] || limit=40
		fi
		nsearch=$((nsearch - 1))
		timeout $limit "$bin/patc" "$f" --search --target=$sm --topk=4 -o "$tmp/search_$name" \
			>"$tmp/search_$name.out" 2>"$tmp/search_$name.err" ||
			{ echo "FAIL: --search on $name: $(tail -3 "$tmp/search_$name.err")" | tee -a "$out/gpu_search.txt"
			  fail=$((fail + 1)); }
		grep -E "^search: op|best|over dense|standard-library" "$tmp/search_$name.out" | tee -a "$out/gpu_search.txt"
	done
	echo "search done ($(( $(date +%s) - start )) s)"
fi

# ---- 4. schedules ----
if [ "${SWEEP:-0}" = 1 ]; then
	for sc in ${SCHEDULES:-32,4,4,4,1,0 32,4,4,4,1,1 32,4,4,8,1,1 32,4,8,4,1,1 16,4,8,8,1,1 64,2,4,4,1,1}; do
		"$bin/gpu_bench" "$root/stdlib" "$tmp/sweep.csv" --sm=$sm --shapes=3,1,8 --schedule=$sc --no-tc 2>/dev/null |
			awk -v sc=$sc 'NR>2 && /^\|/ {printf "  schedule %-10s %s\n", sc, $0}'
	done | tee "$out/gpu_sweep.txt"
	echo "sweep done ($(( $(date +%s) - start )) s)"
fi
[ $fail -eq 0 ]
