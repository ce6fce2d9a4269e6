#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/profile.sh - on a lent device machine, what the timings of
# run.sh cannot say: where the staged kernels' time goes (Nsight Compute's
# sections: speed of light, memory, warp stalls, occupancy) on
# 4096/1024/1024 at 50%, and compute-sanitizer's memcheck, racecheck and
# synccheck over the staged kernels on small shapes the tiles do not all
# divide (mma.sync, mma.sp, wgmma, CUDA cores, split-K's workspace).
# Each tool is skipped with a note where the machine lacks it.
#
#   tests/gpu/profile.sh DEST       (after `make gpu-carry` here; writes
#                                    DEST/ncu.txt and DEST/sanitizer.txt)
#
# Seen on the H200 (2026-12-04): racecheck over a whole --run (cuBLAS and
# the timed runs instrumented too) did not finish a small op in 45 s, so it
# instruments patc's kernel alone (--kernel-name), one op a program.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:?usage: tests/gpu/profile.sh DEST}
mkdir -p "$dest"
bin=$root/.gpu
STEPS=none "$root/tests/gpu/unpack.sh" "$(mktemp -d)" || exit 1
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# one program per op (--run names every kernel patc_spmm, so the tools tell
# the ops apart by the program), and small.pat with all the small ones
op() { # FILE NAME M K N DTYPE PATTERN
	printf 'include "all.pat";\nop %s: spmm(M = %s, K = %s, N = %s, dtype = %s) { %s apply %s; }\n' \
		"$2" "$3" "$4" "$5" "$6" "weights = random(seed = 5);" "$7" >"$tmp/$1.pat"
	[ "${1%%_*}" = small ] && sed -n 2p "$tmp/$1.pat" >>"$tmp/small.pat"
	return 0
}
echo 'include "all.pat";' >"$tmp/small.pat"
op big_tb64 tb64 4096 1024 1024 bf16 "block(64, 64, 50%)"
op big_tsp tsp 4096 1024 1024 bf16 "nm(2, 4)"
op big_fb32 fb32 4096 1024 1024 f32 "block(32, 32, 50%)"
op small_tb32 tb32 320 200 136 bf16 "block(32, 32, 25%)"
op small_tb64 tb64 256 256 200 f16 "block(64, 64, 50%)"
op small_tsp tsp 208 256 136 bf16 "nm(2, 4)"
op small_fb32 fb32 768 768 512 f32 "block(32, 32, 25%)"
op small_fb8 fb8 130 300 72 f32 "block(8, 8, 25%)"

# the whole within PROFILE_SECONDS (default 240): no step starts with under
# 20 s left, and none runs past the end
deadline=$(($(date +%s) + ${PROFILE_SECONDS:-240}))
limit() { local l=$((deadline - $(date +%s))); [ $l -gt 45 ] && l=45; echo $l; }
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
[ -n "$ncu" ] || echo "ncu: not on this machine"
[ -n "$cs" ] || echo "compute-sanitizer: not on this machine"
sanitize() { # PROGRAM TOOL OPTIONS...: only patc's kernel instrumented
	local prog=$1 tool=$2
	shift 2
	[ -n "$cs" ] || return 0
	[ "$(limit)" -ge 20 ] || { echo "$tool $prog $*: left out (time)"; return 0; }
	echo "==== $tool: $prog.pat $* ====" >>"$dest/sanitizer.txt"
	if timeout "$(limit)" "$cs" --tool "$tool" --kernel-name kns=patc_spmm --error-exitcode 9 \
		"$bin/patc" "$tmp/$prog.pat" "$@" --run >>"$dest/sanitizer.txt" 2>&1; then
		echo "$tool $prog $*: clean"
	else
		echo "$tool $prog $*: exit $? (see sanitizer.txt)"
		fail=$((fail + 1))
	fi
}
profile() { # KERNEL
	[ -n "$ncu" ] || return 0
	[ "$(limit)" -ge 20 ] || { echo "ncu $1: left out (time)"; return 0; }
	echo "==== ncu: $1.pat (sm_90) ====" >>"$dest/ncu.txt"
	if timeout "$(limit)" "$ncu" --clock-control none --target-processes all -k patc_spmm -c 1 \
		--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
		--section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
		"$bin/patc" "$tmp/$1.pat" --target=sm_90 --run >>"$dest/ncu.txt" 2>&1; then
		echo "ncu $1: profiled"
	else
		echo "ncu $1: exit $?"
		fail=$((fail + 1))
	fi
}
for p in small_tb32 small_tb64 small_tsp small_fb8; do
	sanitize $p racecheck --target=sm_90 --split-workspace
done
sanitize small_tb64 racecheck --target=sm_90 --wgmma
profile big_tb64
profile big_tsp
profile big_fb32
sanitize small memcheck --target=sm_90 --split-workspace
sanitize small memcheck --target=sm_90 --wgmma
sanitize small synccheck --target=sm_90
[ $fail -eq 0 ]
