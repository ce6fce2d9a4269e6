#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mock_gpu.sh - the host side of the GPU path against a stand-in driver
# and cuBLAS (tests/mock: device memory is host memory, kernels "launch"
# without running): patc --run, gpu_bench and the -o launcher must load
# and call them, upload the weights as the kernels take them (the sparse
# tensor cores' laid-out operands too), measure the ceilings, and catch
# that no kernel computed anything (C left poisoned, or zeros where the
# kernel adds into it): a wrong result, never a silent pass; and a driver
# call made to fail must be named in a clear error.
#
#   tests/mock_gpu.sh PATC GPU_BENCH MOCKDIR   (MOCKDIR: libcuda.so.1, libcublas.so.13)
set -eu
patc=$1 bench=$2 mock=$3
root=$(cd "$(dirname "$0")/.." && pwd)
export PATC_STDLIB=$root/stdlib LD_LIBRARY_PATH=$mock${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATC_CUBLAS=$mock/libcublas.so.13
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# runs "$@", leaving its exit status in rc and its output in out, err
run() {
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}

# patc --run: one op a file, then the three in one file (each wrong result
# named, and the next op run)
ops=("f32 block(32, 32, 50%) zeroes C first|M = 100, K = 72, N = 40|apply block(32, 32, 50%);|0 elements"
	"bf16 block(32, 32, 25%) on tensor cores|M = 100, K = 72, N = 40, dtype = bf16|apply block(32, 32, 25%);|4000 elements"
	"bf16 nm(2, 4) on the sparse tensor cores|M = 100, K = 72, N = 40, dtype = bf16|apply nm(2, 4);|4000 elements")
for o in "${ops[@]}"; do
	IFS='|' read -r what shape body unwritten <<<"$o"
	printf 'include "all.pat";\nop w: spmm(%s) { weights = random(seed = 3); %s }\n' "$shape" "$body" >"$tmp/op.pat"
	run "$patc" "$tmp/op.pat" --target=sm_90 --run
	if [ $rc -eq 4 ] && grep -q "^GPU: mock GPU" "$tmp/out" && grep -q "cuBLAS" "$tmp/out" &&
		grep -q "result is wrong (relative error .*, $unwritten not written)" "$tmp/err"; then
		ok
	else
		bad "patc --run, $what: exit $rc, $(tail -2 "$tmp/err")"
	fi
done
# with --split-workspace the same split op is not zeroed first: every element
# is left poisoned where no kernel ran
printf 'include "all.pat";\nop w: spmm(M = 100, K = 72, N = 40) { weights = random(seed = 3); apply block(32, 32, 50%%); }\n' \
	>"$tmp/op.pat"
run "$patc" "$tmp/op.pat" --target=sm_90 --run --split-workspace
if [ $rc -eq 4 ] && grep -q "result is wrong (relative error .*, 4000 elements not written)" "$tmp/err"; then
	ok
else
	bad "patc --run --split-workspace: exit $rc, $(tail -2 "$tmp/err")"
fi
n=0
printf 'include "all.pat";\n' >"$tmp/ops.pat"
for o in "${ops[@]}"; do
	IFS='|' read -r what shape body unwritten <<<"$o"
	printf 'op w%d: spmm(%s) { weights = random(seed = 3); %s }\n' "$((++n))" "$shape" "$body" >>"$tmp/ops.pat"
done
run "$patc" "$tmp/ops.pat" --target=sm_90 --run
if [ $rc -eq 4 ] && [ "$(grep -c "^w[123]: 100x72x40" "$tmp/out")" = 3 ] &&
	[ "$(grep -c "result is wrong" "$tmp/err")" = 3 ] && grep -q "3 of 3 ops gave a wrong result" "$tmp/err"; then
	ok
else
	bad "patc --run, three wrong ops in a file: exit $rc, $(tail -2 "$tmp/err")"
fi

# a driver call that fails is named, with the driver's message, exit 3
printf 'include "all.pat";\nop w: spmm(M = 64, K = 64, N = 16) { weights = random(seed = 3); apply block(16, 16, 50%%); }\n' \
	>"$tmp/op.pat"
for call in cuMemAlloc_v2:cuMemAlloc cuLaunchKernel:cuLaunchKernel cuModuleLoadDataEx:"cuModuleLoadDataEx failed"; do
	run env MOCK_CUDA_FAIL="${call%%:*}" "$patc" "$tmp/op.pat" --target=sm_90 --run
	if [ $rc -eq 3 ] && grep -q "${call#*:}" "$tmp/err" && grep -q "(mock)" "$tmp/err"; then
		ok
	else
		bad "patc --run with ${call%%:*} failing: exit $rc, $(tail -2 "$tmp/err")"
	fi
done

# gpu_bench: the ceilings, then every kernel is found wrong: each costs its
# own entry, not the run (18 of 18 failed, the table says so; exit 4)
run "$bench" "$root/stdlib" "$tmp/gpu.csv" --shapes=6 --no-tc
if [ $rc -eq 4 ] && grep -q "ceilings: copy [0-9]* GB/s, cuBLAS 8192^3 f32" "$tmp/err" &&
	[ "$(grep -c "FAILED: wrong" "$tmp/err")" -eq 18 ] && grep -q "^| 75% | failed | failed |" "$tmp/out" &&
	grep -q "^18 kernels failed" "$tmp/out" &&
	head -1 "$tmp/gpu.csv" | grep -q ",speedup_vs_dense,tflops,flop_frac,bw_frac,l2_gb,l2_frac$" &&
	grep -q "; L2 reads [0-9]* GB/s" "$tmp/err"; then
	ok
else
	bad "gpu_bench: exit $rc, $(tail -2 "$tmp/err")"
fi
# a driver call that fails once, for the first kernel (its module; the
# ceilings' is the first): that kernel is named, the device opened again
# (as after a fault, which leaves the context unusable), the rest run
run env MOCK_CUDA_FAIL=cuModuleLoadDataEx MOCK_CUDA_FAIL_AT=2 "$bench" "$root/stdlib" "$tmp/gpu.csv" --shapes=6 --no-tc
if [ $rc -eq 4 ] && grep -q "ceilings: copy" "$tmp/err" &&
	grep -q "block(8, 8, 50%);: FAILED: .*cuModuleLoadDataEx failed" "$tmp/err" &&
	[ "$(grep -c "FAILED: wrong" "$tmp/err")" -eq 17 ]; then
	ok
else
	bad "gpu_bench with one call failing: exit $rc, $(tail -2 "$tmp/err")"
fi
# the same failure, sticky (every call after it fails, as after a kernel's
# fault): the first shape's table stands, nothing more is measured (exit 4)
run env MOCK_CUDA_STICKY=1 MOCK_CUDA_FAIL=cuModuleLoadDataEx MOCK_CUDA_FAIL_AT=20 "$bench" "$root/stdlib" \
	"$tmp/gpu.csv" --shapes=6,7 --no-tc
if [ $rc -eq 4 ] && grep -q "64/576/3136 apply block(8, 8, 50%);: FAILED: .*cuModuleLoadDataEx failed" "$tmp/err" &&
	grep -q "the device is unusable in this process" "$tmp/err" && [ "$(grep -c "FAILED: wrong" "$tmp/err")" -eq 18 ] &&
	grep -q "geometric mean over 1 shapes" "$tmp/out"; then
	ok
else
	bad "gpu_bench with a sticky failure: exit $rc, $(tail -2 "$tmp/err")"
fi
# --tc-stages (the tensor cores' buffers, 2 to 6) and --tc-warps (their
# warps a block, 1 to 8): out of range a usage error; in range each of the
# 9 bf16 kernels of a shape is built and launched (and, the mock running
# nothing, found wrong: exit 4), those whose buffers pass 48 KiB with the
# dynamic shared memory they opted in to (the mock refuses a launch that
# did not), which a failing cuFuncSetAttribute shows
tc_knob() { # FLAG OUT-OF-RANGE IN-RANGE MESSAGE
	run "$bench" "$root/stdlib" "$tmp/gpu.csv" --shapes=6 --tc-only "$1=$2"
	if [ $rc -eq 2 ] && grep -q "$4" "$tmp/err"; then ok; else bad "gpu_bench $1=$2: exit $rc, $(tail -2 "$tmp/err")"; fi
	run "$bench" "$root/stdlib" "$tmp/gpu.csv" --shapes=6 --tc-only "$1=$3"
	if [ $rc -eq 4 ] && [ "$(grep -c "FAILED: wrong" "$tmp/err")" -eq 9 ] &&
		[ "$(grep -c "FAILED" "$tmp/err")" -eq 10 ]; then
		ok
	else
		bad "gpu_bench $1=$3: exit $rc, $(tail -2 "$tmp/err")"
	fi
}
tc_knob --tc-stages 7 6 "takes 2 to 6 buffers"
tc_knob --tc-warps 9 8 "takes 1 to 8 warps a block"
run env MOCK_CUDA_FAIL=cuFuncSetAttribute "$bench" "$root/stdlib" "$tmp/gpu.csv" --shapes=6 --tc-only --tc-stages=6
dyn=$(grep -c "FAILED: CUDA driver: cuFuncSetAttribute (the kernel's dynamic shared memory) failed" "$tmp/err" || true)
if [ $rc -eq 4 ] && [ "$dyn" -ge 1 ] && [ "$(grep -c "FAILED: wrong" "$tmp/err")" -eq $((9 - dyn)) ]; then
	ok
else
	bad "gpu_bench --tc-stages=6, cuFuncSetAttribute failing: exit $rc, $(tail -2 "$tmp/err")"
fi

# the device run's tables from gpu_bench's CSV (and the peers'), worked by
# hand: block32's L2 fraction 0.5 and 0.2 on two shapes (geometric mean
# 0.32), nm not staged (no fraction); patc's best 2x and 4x against the
# peers' 1x and 6x (2.83x and 2.45x, ratio 1.15), shape B named as behind
cat >"$tmp/g.csv" <<'END'
shape,M,K,N,sparsity,pattern,method,dtype,median_us,speedup_vs_dense,tflops,flop_frac,bw_frac,l2_gb,l2_frac
A,1,1,1,0,dense,cublas,f32,10,1,50,0.9,0.1,,
A,1,1,1,50,block32,patc,f32,5,2,25,0.5,0.2,5.4,0.5
B,1,1,1,50,block32,patc,f32,5,4,25,0.4,0.2,5.4,0.2
A,1,1,1,50,nm,patc,f32,9,1.1,25,0.4,0.2,,
END
cat >"$tmp/p.csv" <<'END'
layer,sparsity,dtype,method,pattern,status,speedup_vs_dense
A,0.5,fp32,triton_bsr,32x32,ok,1
B,0.5,fp32,triton_bsr,32x32,ok,6
B,0.5,fp32,cusparse_csr,csr,ok,0.1
END
if python3 "$root/tests/gpu/l2_table.py" "$tmp/g.csv" >"$tmp/l2.md" &&
	grep -q "^| block32 | f32 | 50% | 2 | 0.32 | 0.50 | 0.45 |$" "$tmp/l2.md" && ! grep -q "^| nm " "$tmp/l2.md" &&
	python3 "$root/tests/gpu/peers_table.py" "$tmp/g.csv" "$tmp/p.csv" >"$tmp/peers.md" &&
	grep -q "^| 50% | fp32 | 2 | 2.83x | 2.45x | 1.15 |$" "$tmp/peers.md" &&
	grep -q "fp32 50% B: patc block32 4.00x, triton_bsr 32x32 6.00x" "$tmp/peers.md"; then
	ok
else
	bad "tests/gpu tables: $(cat "$tmp/l2.md" "$tmp/peers.md" 2>/dev/null | head -8)"
fi

# the -o launcher example: built and run, every call succeeding, its check
# fails (exit 1 after both ops' errors: a failing call exits 1 too)
if command -v cc >/dev/null; then
	"$patc" "$root/examples/cuda_api/layer.pat" --target=sm_90 -o "$tmp/o" 2>/dev/null
	cc -std=c11 -O1 -I "$tmp/o" "$root/examples/cuda_api/main.c" "$tmp/o/layer_launch.c" -ldl -lm -o "$tmp/demo"
	run "$tmp/demo" "$tmp/o"
	# (each op at its own N and at 1, 7 and 333: the launcher counts the grid for any N)
	if [ $rc -eq 1 ] && grep -q "^up, N = 512: relative error" "$tmp/out" && grep -q "^up, N = 333: relative error" "$tmp/out" &&
		grep -q "^proj, N = 200: relative error" "$tmp/out" && grep -q "^proj, N = 1: relative error" "$tmp/out" &&
		grep -q "^proj, N = 7: relative error" "$tmp/out" && [ ! -s "$tmp/err" ]; then
		ok
	else
		bad "cuda_api example: exit $rc, $(tail -2 "$tmp/err")"
	fi
fi

echo "mock_gpu: $pass passed, $fail failed"
[ $fail -eq 0 ]
