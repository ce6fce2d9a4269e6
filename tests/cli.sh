#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cli.sh - the command line: exit codes, --help/--version, outputs written
# atomically (and not at all on error), .pir input, --explain, --dump-after.
#
#   tests/cli.sh PATC
set -u
patc=$1
case $patc in */*) patc=$(cd "$(dirname "$patc")" && pwd)/$(basename "$patc") ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
export PATC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
mkdir "$tmp/cwd" && cd "$tmp/cwd" # (what a run writes where it should not shows up here, not in the caller's)
pass=0 fail=0

expect() { # description expected-exit command...
	local what=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ "$rc" -eq "$want" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $what: exit $rc, wanted $want"
		sed 's/^/  /' "$tmp/err" | head -5
	fi
}

holds() { # description command...: the command succeeds
	if "${@:2}"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}

has() { # description file pattern
	if grep -q -- "$3" "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1: no '$3' in $2"; fi
}

expect "--help" 0 "$patc" --help
has "--help names the exit codes" "$tmp/out" "exit codes: 0 ok, 1 errors in the input"
expect "--version" 0 "$patc" --version
has "--version shows LLVM" "$tmp/out" "^LLVM 19\."
has "--version shows PTX" "$tmp/out" "PTX ISA"
expect "no input" 2 "$patc"
# standard output that cannot be written is the environment's (exit 3), whatever wrote to it
if [ -w /dev/full ]; then
	expect "--help to /dev/full" 3 sh -c "exec \"\$0\" --help >/dev/full" "$patc"
	has "--help to /dev/full: said, with the reason" "$tmp/err" "cannot write to standard output: No space left"
	expect "--version to /dev/full" 3 sh -c "exec \"\$0\" --version >/dev/full" "$patc"
	has "--version to /dev/full: said, with the reason" "$tmp/err" "cannot write to standard output: No space left"
	expect "a summary to /dev/full" 3 sh -c "exec \"\$0\" \"\$1\" >/dev/full" "$patc" "$root/examples/gemm.pat"
fi
expect "unknown option" 2 "$patc" --frobnicate x.pat
has "unknown option: named" "$tmp/err" "unknown option '--frobnicate'$"
# getopt_long's conventions: --opt value, prefixes, --, and a suggestion
expect "a misspelt option" 2 "$patc" "$root/examples/gemm.pat" --targt=sm_80
has "a misspelt option: the nearest one suggested" "$tmp/err" "unknown option '--targt=sm_80'; did you mean '--target'?"
expect "an ambiguous prefix" 2 "$patc" "$root/examples/gemm.pat" --se
has "an ambiguous prefix: its options listed" "$tmp/err" "ambiguous option '--se': --search, --seed"
expect "a value given to an option of none" 2 "$patc" "$root/examples/gemm.pat" --search=yes
has "a value given to an option of none: said" "$tmp/err" "error: --search takes no value"
expect "a value missing" 2 "$patc" "$root/examples/gemm.pat" --threads
has "a value missing: said" "$tmp/err" "error: --threads needs an argument"
expect "--opt=value" 0 "$patc" "$root/examples/gemm.pat" --emit=pir --target=sm_80
cp "$tmp/out" "$tmp/eq.out"
expect "--opt value, and an unambiguous prefix" 0 "$patc" --emi pir "$root/examples/gemm.pat" --target sm_80
holds "--opt value and a prefix read as --opt=value" cmp -s "$tmp/out" "$tmp/eq.out"
mkdir "$tmp/dash" && cp "$root/examples/gemm.pat" "$tmp/dash/-x.pat"
expect "-- ends the options" 0 sh -c 'cd "$1" && exec "$0" --emit=pir --target sm_80 -- -x.pat' "$patc" "$tmp/dash"
holds "-- ends the options: the file after it read" cmp -s "$tmp/out" "$tmp/eq.out"
expect "a file named like an option, without --" 2 sh -c 'cd "$1" && exec "$0" --emit=pir -x.pat' "$patc" "$tmp/dash"
expect "merge: an unknown option" 2 "$patc" merge --outpt=x a.jsonl
has "merge: an unknown option, its command named" "$tmp/err" "unknown option '--outpt=x' of patc merge"
expect "train-cost-model: a misspelt option" 2 "$patc" train-cost-model --sed=3 a.jsonl -o m
has "train-cost-model: a misspelt option, suggested" "$tmp/err" "did you mean '--seed'?"
has "train-cost-model: its usage pointed to" "$tmp/err" "run 'patc train-cost-model --help'"
expect "train-cost-model: --folds K" 2 "$patc" train-cost-model --folds 1 a.jsonl -o m
has "train-cost-model: --folds K read" "$tmp/err" "--folds takes a count from 2 to 20, not '1'"
expect "unknown target" 2 "$patc" "$root/examples/gemm.pat" --target=sm_70
expect "unknown emit" 2 "$patc" "$root/examples/gemm.pat" --emit=cubin
expect "two inputs" 2 "$patc" a.pat b.pat
expect "missing input file" 1 "$patc" "$tmp/nope.pat"
has "missing input named" "$tmp/err" "cannot read '$tmp/nope.pat'"
expect "an endless input" 1 timeout 20 "$patc" /dev/zero
has "an endless input: its size said" "$tmp/err" "cannot read '/dev/zero': longer than 64 MiB, the most a source may be"
ln -s /dev/zero "$tmp/endless.pir"
expect "an endless .pir input" 1 timeout 20 "$patc" "$tmp/endless.pir"
has "an endless .pir input: its size said" "$tmp/err" "cannot read '$tmp/endless.pir': longer than 64 MiB"

# a program with no op: a note where nothing is made of ops, exit 1 where something is
printf 'include "all.pat";\n' >"$tmp/noop.pat"
expect "no op" 0 "$patc" "$tmp/noop.pat"
has "no op: a note" "$tmp/err" "note: '$tmp/noop.pat' defines no op; nothing to compile"
expect "no op: --explain" 0 "$patc" "$tmp/noop.pat" --explain
expect "no op: -o DIR" 1 "$patc" "$tmp/noop.pat" -o "$tmp/noop"
has "no op: -o DIR said" "$tmp/err" "error: '$tmp/noop.pat' defines no op: -o has no kernel to write"
expect "no op: --emit=weights" 1 "$patc" "$tmp/noop.pat" --emit=weights -o "$tmp/noop.safetensors"
has "no op: --emit=weights said" "$tmp/err" "defines no op: --emit=weights has no weights to write"
expect "no op: --emit=weights writes nothing" 1 test -e "$tmp/noop.safetensors"
expect "no op: --run" 1 "$patc" "$tmp/noop.pat" --run
has "no op: --run said" "$tmp/err" "defines no op: --run has nothing to run"
expect "no op: --run on a GPU target" 1 "$patc" "$tmp/noop.pat" --run --target=sm_90
expect "no op: --search" 1 "$patc" "$tmp/noop.pat" --search
has "no op: --search said" "$tmp/err" "defines no op: --search has nothing to search"

expect "example compiles" 0 "$patc" "$root/examples/gemm.pat"
has "paper notation" "$tmp/out" "fig8: I0_4 I1_8^3 K0_32^28 K1_8^5 K2_4 I2_32"
expect "example on sm_90" 0 "$patc" "$root/examples/gemm.pat" --target=sm_90
expect "--wgmma on sm_90" 0 "$patc" "$root/examples/gemm.pat" --target=sm_90 --wgmma
expect "--wgmma off sm_90" 2 "$patc" "$root/examples/gemm.pat" --target=sm_80 --wgmma
expect "--split-workspace on sm_80" 0 "$patc" "$root/examples/gemm.pat" --target=sm_80 --split-workspace
expect "--split-workspace on x86-64" 2 "$patc" "$root/examples/gemm.pat" --split-workspace
has "--split-workspace is for GPU targets" "$tmp/err" "--split-workspace is for GPU targets"
expect "-o --split-workspace without --fixed-n" 2 "$patc" "$root/examples/gemm.pat" --target=sm_80 --split-workspace -o "$tmp/wsn"
has "-o --split-workspace needs --fixed-n" "$tmp/err" "with -o DIR it needs --fixed-n"
expect "--split-workspace with --search" 2 "$patc" "$root/examples/gemm.pat" --target=sm_90 --search --split-workspace
# --explain names the wgmma path, its buffers and the tensor cores' split-K; and the
# traffic from L2 of the staged kernels, by hand: c's 8 x 128 blocks (8 of
# them over N = 1000) copy 8 x 1024 columns of X per kept 8 rows and k, 4 /
# 8 x 1024 / 1000 = 0.512 bytes a multiply-add, the weights 4 x 8 / 1000,
# C 4 / 256 (its 1024 x 1000 once, 256 kept k); a's 6 parts add into a
# zeroed C, 4 (1 + 2 x 6) / 1536; d reads X through L1
printf 'include "all.pat";\nop a: spmm(M = 768, K = 3072, N = 512, dtype = bf16) { apply block(64, 64, 50%%); }\nop b: spmm(M = 768, K = 3072, N = 512, dtype = bf16) { apply block(32, 32, 50%%); }\nop c: spmm(M = 1024, K = 1024, N = 1000) { apply block(8, 8, 25%%); }\nop d: spmm(M = 1024, K = 1024, N = 1000) { apply row_balanced(25%%); }\n' >"$tmp/wg.pat"
if "$patc" "$tmp/wg.pat" --target=sm_90 --wgmma --explain >"$tmp/wg.out" 2>&1 &&
	grep -q "PTX for sm_90a.*Hopper's warpgroup mma: every" "$tmp/wg.out" && grep -q "wgmma.m64n128k16" "$tmp/wg.out" &&
	grep -q "Hopper's warpgroup mma, transposed" "$tmp/wg.out" && grep -q "wgmma.m64n32k16 per 64" "$tmp/wg.out" &&
	grep -q "split-K: the walk along k in [2-8] parts" "$tmp/wg.out" &&
	grep -q "descriptors; 4 buffers of 32 k (the copies run 2 steps ahead, a step's wgmma in flight through the" "$tmp/wg.out" &&
	grep -q "descriptors; 4 buffers of 16 k (the copies run 2 steps ahead, a step's wgmma in flight" "$tmp/wg.out" &&
	grep -q "traffic from L2: 0.56 bytes a multiply-add: X 0.512 (a block's 8 rows share each X row it stages), weights 0.032 (128 columns share each), C 0.0156;" "$tmp/wg.out" &&
	grep -q "traffic from L2: .* X 0.0312 (a block's 64 rows .* weights 0.0156 (128 columns share each), C 0.0339;" "$tmp/wg.out" &&
	grep -q "traffic from L2: not counted" "$tmp/wg.out"; then
	pass=$((pass + 1))
else
	echo "FAIL: --explain --wgmma: $(grep -i "gpu kernel\|mapping\|split\|traffic" "$tmp/wg.out" | head -10)"
	fail=$((fail + 1))
fi
expect "--explain" 0 "$patc" "$root/examples/gemm.pat" --explain
has "--explain shows strides" "$tmp/out" "flattened strides \[53760, 17920, 640, 128, 32, 1\]"
has "--explain shows padding" "$tmp/out" "padding m 1000 -> 1024 (+24)"
has "--explain shows W and Q" "$tmp/out" "W          Q"
expect "--dump-after" 0 "$patc" "$root/examples/gemm.pat" --dump-after=perforate --emit=pir -o "$tmp/d.pir"
has "--dump-after goes to stderr" "$tmp/err" "# fig8: after perforate k1 keep 5"
expect "--dump-after leaves -o readable" 0 "$patc" "$tmp/d.pir"
expect ".pir with --run" 2 "$patc" "$tmp/d.pir" --run
has ".pir: what it takes" "$tmp/err" "a .pir file has no weights, primitives or includes"
expect ".pir with --emit=llvm" 2 "$patc" "$tmp/d.pir" --emit=llvm -o "$tmp/dl"
[ ! -e "$tmp/dl" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: .pir --emit=llvm wrote -o"; }
expect "full stdout" 3 "$patc" "$root/examples/gemm.pat" --emit=pir -o /dev/full
if [ -w /dev/full ]; then
	"$patc" "$root/examples/gemm.pat" >/dev/full 2>"$tmp/err"
	if [ $? -eq 3 ] && grep -q "cannot write to standard output" "$tmp/err"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: stdout on /dev/full"; fi
fi
echo old > "$tmp/mode.pir" && chmod 600 "$tmp/mode.pir"
expect "-o over an existing file" 0 "$patc" "$root/examples/gemm.pat" --emit=pir -o "$tmp/mode.pir"
[ "$(stat -c %a "$tmp/mode.pir")" = 600 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: -o changed the mode of the file it replaced"; }

# -o writes atomically; a failed compile writes nothing
expect "-o file" 0 "$patc" "$root/examples/gemm.pat" --emit=pir -o "$tmp/g.pir"
has "-o content" "$tmp/g.pir" "^pir fig8 m=1000 k=1024 {"
expect ".pir input round trip" 0 "$patc" "$tmp/g.pir" --emit=pir -o "$tmp/g2.pir"
if cmp -s "$tmp/g.pir" "$tmp/g2.pir"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: print(parse(x)) != x for gemm.pir"; fi
expect ".pir on sm_80 with a GPU-illegal block" 1 "$patc" "$root/tests/golden/pir/fig6.pir" --target=sm_80
has ".pir GPU error" "$tmp/err" "cannot run on sm_80: perforated spatial loop 'i1'"
printf 'pir a m=4 k=4 { loop m 4 = m[4]*2 }\n' > "$tmp/bad.pir"
expect "bad .pir" 1 "$patc" "$tmp/bad.pir" -o "$tmp/never.pir"
[ ! -e "$tmp/never.pir" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: output written for bad .pir"; }
printf 'op a: spmm(M = 4, K = 4, N = 1) { perforate k keep 9; }\n' > "$tmp/bad.pat"
echo "old" > "$tmp/keep.pir"
expect "bad .pat" 1 "$patc" "$tmp/bad.pat" --emit=pir -o "$tmp/keep.pir"
has "failed compile leaves old output alone" "$tmp/keep.pir" "^old$"
mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
if [ "$(id -u)" -ne 0 ]; then
	expect "unwritable output" 3 "$patc" "$root/examples/gemm.pat" --emit=pir -o "$tmp/ro/out.pir"
fi
expect "output into a missing directory" 3 "$patc" "$root/examples/gemm.pat" --emit=pir -o "$tmp/no/such/dir/out.pir"
has "unwritable output named" "$tmp/err" "cannot write '$tmp/no/such/dir/out.pir'"
if ls "$tmp"/no* "$tmp"/ro/* >/dev/null 2>&1; then fail=$((fail + 1)); echo "FAIL: temp files left behind"; else pass=$((pass + 1)); fi

# --emit=weights: packed tensors and metadata, read back by an independent reader
cat > "$tmp/w.pat" <<'PAT'
include "all.pat";
op q: spmm(M = 100, K = 70, N = 8, dtype = f16) {
    weights = random(seed = 3, kind = heads, group = 8);
    apply hybrid(16, 32, 50%);
}
op c: spmm(M = 30, K = 40, N = 8) {
    weights = random(seed = 4);
    calibration = random(seed = 5);
    importance = wanda;
    rank = total;
    apply channel(10);
}
PAT
expect "--emit=weights" 0 "$patc" "$tmp/w.pat" --emit=weights --mask -o "$tmp/w.safetensors"
if python3 "$root/tests/read_safetensors.py" "$tmp/w.safetensors" > "$tmp/read" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: independent reader refused the output"; cat "$tmp/read"; fi
has "values in f16" "$tmp/read" "^tensor q.values F16 \[7, 2, 16, 8, 2\] 3584"
has "block index" "$tmp/read" "^tensor q.index.k0 I32 \[7, 2\] 14"
has "2:4 index" "$tmp/read" "^tensor q.index.k2 I32 \[1792, 2\] 3584"
has "mask" "$tmp/read" "^tensor q.mask U8 \[100, 70\] 7000"
has "channel index" "$tmp/read" "^tensor c.index.m I32 \[1, 10\]"
has "PatternIR in metadata" "$tmp/read" "^meta q.pir pir q m=100 k=70 {"
has "metrics in metadata" "$tmp/read" "^meta c.output_error "
has "rank in metadata" "$tmp/read" "^meta c.rank total"
has "version in metadata" "$tmp/read" "^meta patc.version "
expect "--emit=weights needs -o" 2 "$patc" "$tmp/w.pat" --emit=weights
printf 'op d: spmm(M = 4, K = 4, N = 1) { perforate k keep 2; }\n' > "$tmp/nw.pat"
expect "--emit=weights without weights" 1 "$patc" "$tmp/nw.pat" --emit=weights -o "$tmp/nw.safetensors"
has "no weights named" "$tmp/err" "op 'd' has no weights"
[ ! -e "$tmp/nw.safetensors" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: output written for an op without weights"; }
expect "--explain with weights" 0 "$patc" "$tmp/w.pat" --explain
has "--explain shows the bound" "$tmp/out" "unstructured bound at that density"
has "--explain shows the output error" "$tmp/out" "relative output error"
# --importance over the ops' own: c's wanda becomes l2, in the metadata too
expect "--importance=l2" 0 "$patc" "$tmp/w.pat" --importance=l2 --emit=weights -o "$tmp/l2.safetensors"
python3 "$root/tests/read_safetensors.py" "$tmp/l2.safetensors" > "$tmp/read" 2>&1
has "--importance in metadata" "$tmp/read" "^meta c.importance l2"
expect "--importance=bogus" 2 "$patc" "$tmp/w.pat" --importance=bogus --explain

# a tensor file that is no regular file: refused, not waited on (a FIFO) or read without end (a device)
mkfifo "$tmp/fifo.npy"
ln -s /dev/zero "$tmp/zero.safetensors"
printf 'op a: spmm(M = 8, K = 8, N = 8) { weights = npy("fifo.npy"); }\n' >"$tmp/fifo.pat"
printf 'op a: spmm(M = 8, K = 8, N = 8) { weights = safetensors("zero.safetensors", "w"); }\n' >"$tmp/zero.pat"
expect "weights from a FIFO" 1 timeout 20 "$patc" "$tmp/fifo.pat"
has "weights from a FIFO: said" "$tmp/err" "fifo.npy: cannot read: not a regular file"
expect "weights from /dev/zero" 1 timeout 20 "$patc" "$tmp/zero.pat"
has "weights from /dev/zero: said" "$tmp/err" "zero.safetensors: cannot read: not a regular file"

# semahard (issue 42): a tensor file that exists but cannot be read says why, never "not found":
# a directory, a path through a file, a 5,000-character name, no permission (as another user
# where we are root, since root reads anything); weights, calibration and importance alike
mkdir "$tmp/sh" "$tmp/sh/dir.npy" && : >"$tmp/sh/file"
printf 'op a: spmm(M = 8, K = 8, N = 8) { weights = npy("dir.npy"); }\n' >"$tmp/sh/dir.pat"
expect "weights from a directory" 1 timeout 20 "$patc" "$tmp/sh/dir.pat"
has "weights from a directory: said" "$tmp/err" "dir.npy: cannot read: Is a directory"
holds "weights from a directory: not 'not found'" sh -c '! grep -q "not found" "$1"' sh "$tmp/err"
printf 'op a: spmm(M = 8, K = 8, N = 8) {\n  weights = random(1);\n  calibration = npy("file/x.npy");\n}\n' >"$tmp/sh/notdir.pat"
expect "calibration through a file" 1 "$patc" "$tmp/sh/notdir.pat"
has "calibration through a file: said" "$tmp/err" "error: cannot read file 'file/x.npy': Not a directory"
has "calibration through a file: where" "$tmp/err" "note: looked for $tmp/sh/file/x.npy"
printf 'op a: spmm(M = 8, K = 8, N = 8) {\n  weights = random(1);\n  importance = safetensors("%s.safetensors", "s");\n}\n' \
	"$(head -c 5000 /dev/zero | tr '\0' a)" >"$tmp/sh/long.pat"
expect "importance with a 5,000-character name" 1 "$patc" "$tmp/sh/long.pat"
has "importance with a 5,000-character name: said" "$tmp/err" ": File name too long"
holds "importance with a 5,000-character name: not 'not found'" sh -c '! grep -q "not found" "$1"' sh "$tmp/err"
shperm=$(mktemp -d) && chmod 755 "$shperm" && printf 'x' >"$shperm/secret.npy" && chmod 000 "$shperm/secret.npy"
printf 'op a: spmm(M = 8, K = 8, N = 8) { weights = npy("secret.npy"); }\n' >"$shperm/perm.pat"
as_other=()
[ "$(id -u)" = 0 ] && as_other=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if [ "$(id -u)" != 0 ] || { command -v setpriv >/dev/null && "${as_other[@]}" test -x "$patc" -a -r "$shperm/perm.pat"; }; then
	expect "weights without read permission" 1 "${as_other[@]}" env PATC_STDLIB="$PATC_STDLIB" "$patc" "$shperm/perm.pat"
	has "weights without read permission: said" "$tmp/err" "error: cannot read file 'secret.npy': Permission denied"
fi
rm -rf "$shperm"

# -o DIR: objects, headers and weights (tests/c_api.sh links and runs them)
expect "objects need weights" 1 "$patc" "$root/examples/gemm.pat" -o "$tmp/objs"
has "objects name the op without weights" "$tmp/err" "op 'conv3x3' has no weights"
expect "objects for a GPU target" 0 "$patc" "$tmp/w.pat" --target=sm_90 -o "$tmp/gpuobjs"
for f in w.ptx w.h w_launch.c w.bin w.safetensors; do
	expect "GPU objects: $f" 0 test -s "$tmp/gpuobjs/$f"
done
expect "--emit=asm is for x86 targets" 2 "$patc" "$tmp/w.pat" --target=sm_90 -o "$tmp/gpuobjs" --emit=asm
expect "objects into a missing parent" 3 "$patc" "$tmp/w.pat" -o "$tmp/no/such/objs"
expect "objects for AVX2" 0 "$patc" "$tmp/w.pat" --target=x86-64-avx2 -o "$tmp/objs" --emit=asm
has "AVX2 code" "$tmp/objs/w.s" "vfmadd"
has "AVX2 code: its header names the target" "$tmp/objs/w.h" '^#define w_TARGET "x86-64-avx2" '
has "AVX2 code: and the level it needs" "$tmp/objs/w.h" '^#define w_TARGET_LEVEL "x86-64-v3" '
# the x86 targets: the psABI levels and native (tests/c_api.sh runs their objects); -o without
# --target compiles for x86-64-v3, --run and --search for native; x86-64 is native's older name
expect "objects for the default target" 0 "$patc" "$tmp/w.pat" -o "$tmp/objs" --emit=asm
has "the default target: x86-64-v3" "$tmp/objs/w.h" '^ \* Compiled for x86-64-v3 (AVX2, FMA)\.'
holds "the default target: 8-float vectors, no AVX-512" sh -c "grep -q ymm '$tmp/objs/w.s' && ! grep -q zmm '$tmp/objs/w.s'"
expect "objects for x86-64-v2" 0 "$patc" "$tmp/w.pat" --target=x86-64-v2 -o "$tmp/objs" --emit=asm
holds "x86-64-v2: SSE only" sh -c "grep -q xmm '$tmp/objs/w.s' && ! grep -q '[yz]mm' '$tmp/objs/w.s'"
expect "objects for x86-64-v4" 0 "$patc" "$tmp/w.pat" --target=x86-64-v4 -o "$tmp/objs" --emit=llvm
has "x86-64-v4: its CPU" "$tmp/objs/w.ll" '"target-cpu"="x86-64-v4"'
has "x86-64-v4: the header names it" "$tmp/objs/w.h" '^#define w_TARGET "x86-64-v4" '
expect "objects for native" 0 "$patc" "$tmp/w.pat" --target=native -o "$tmp/objs"
has "native: the header says so" "$tmp/objs/w.h" "^ \* Compiled for native, the compiling machine's CPU: "
expect "objects for x86-64, native's older name" 0 "$patc" "$tmp/w.pat" --target=x86-64 -o "$tmp/objs"
has "x86-64 is native" "$tmp/objs/w.h" '^#define w_TARGET "native" '
# what this machine cannot run, --run and --search refuse (the host made to lack a feature)
expect "--run for a level this CPU lacks" 3 env PATC_TEST_CPU_LACKS=avx512f "$patc" "$tmp/w.pat" --run \
	--target=x86-64-v4
has "--run for a level this CPU lacks: why" "$tmp/err" "cannot run x86-64-v4 code: its CPU lacks avx512f"
expect "--run for x86-64-avx2 on a CPU without FMA" 3 env PATC_TEST_CPU_LACKS=fma "$patc" "$tmp/w.pat" --run \
	--target=x86-64-avx2
has "--run for x86-64-avx2 on a CPU without FMA: why" "$tmp/err" "its CPU lacks fma"
expect "--search for a level this CPU lacks" 3 env PATC_TEST_CPU_LACKS=avx2 "$patc" "$tmp/w.pat" --search --op=q \
	--target=x86-64-v3 -o "$tmp/lacks"
has "--search for a level this CPU lacks: why" "$tmp/err" "cannot run x86-64-v3 code (its CPU lacks avx2)"
expect "--run's default is native, which this CPU runs whatever it lacks" 0 env PATC_TEST_CPU_LACKS=avx2 "$patc" \
	"$tmp/w.pat" --run --threads=1
expect "--search --no-measure for a level this CPU lacks" 0 env PATC_TEST_CPU_LACKS=avx2 "$patc" "$tmp/w.pat" \
	--search --op=q --no-measure --target=x86-64-v3 --cost-model=analytic -o "$tmp/lacks"
expect "--emit=llvm without -o" 2 "$patc" "$tmp/w.pat" --emit=llvm
# --emit=so: linked by $CC into DIR/BASE.so (tests/c_api.sh and cuda_api.sh run the libraries)
expect "--emit=so without -o" 2 "$patc" "$tmp/w.pat" --emit=so
expect "--emit=so with --search" 2 "$patc" "$tmp/w.pat" --search --emit=so -o "$tmp/sos"
expect "a shared library" 0 "$patc" "$tmp/w.pat" -o "$tmp/so" --emit=so
expect "a shared library: no temporary file left" 0 sh -c "! ls -a '$tmp/so' | grep -q 'tmp'"
expect "a shared library: its symbols" 0 sh -c "nm -D --defined-only '$tmp/so/w.so' | grep -q ' T w_q_run$'"
expect "a shared library: no C compiler" 3 env CC="$tmp/no-cc" "$patc" "$tmp/w.pat" -o "$tmp/so2" --emit=so
has "a shared library: no C compiler, said" "$tmp/err" "no C compiler '$tmp/no-cc' to link '$tmp/so2/w.so'"
expect "a shared library: no C compiler leaves nothing" 1 test -e "$tmp/so2"
expect "a shared library: a failed link" 3 env CC="cc -Wl,--no-such-option" "$patc" "$tmp/w.pat" -o "$tmp/so2" \
	--emit=so
has "a shared library: a failed link, said" "$tmp/err" "'cc' could not link '$tmp/so2/w.so' (exit status 1)"
expect "a shared library: a failed link leaves nothing" 1 test -e "$tmp/so2"
# the library is one of the set: a failed link over an earlier run leaves all of that run's files
# (the weights reseeded: every file would differ), a GPU target's too (the launcher compiled before
# it and its header are in place)
mkdir "$tmp/reseed" && sed 's/seed = 3/seed = 7/' "$tmp/w.pat" >"$tmp/reseed/w.pat"
expect "a shared library for a GPU target, into a directory" 0 "$patc" "$tmp/w.pat" --target=sm_90 -o "$tmp/soset" \
	--emit=so
for d in so soset; do
	cp -a "$tmp/$d" "$tmp/$d.before"
	t=x86-64 && [ $d = soset ] && t=sm_90
	expect "a failed link over an earlier set ($t)" 3 env CC=false "$patc" "$tmp/reseed/w.pat" --target=$t \
		-o "$tmp/$d" --emit=so
	holds "a failed link over an earlier set ($t): the set as it was" diff -r "$tmp/$d.before" "$tmp/$d"
	expect "the reseeded set ($t) linked" 0 "$patc" "$tmp/reseed/w.pat" --target=$t -o "$tmp/$d" --emit=so
	expect "the reseeded set ($t): a new library" 1 cmp -s "$tmp/$d.before/w.so" "$tmp/$d/w.so"
done
# an earlier run's library goes where a run into the directory links none: it held the earlier kernels
expect "a run without --emit=so over a library" 0 "$patc" "$tmp/w.pat" -o "$tmp/so"
expect "a run without --emit=so over a library: the library gone" 1 test -e "$tmp/so/w.so"
# so does what an earlier run wrote for another target or --emit: it would sit beside a header it does not match
expect "x86-64 with --emit=llvm,asm" 0 "$patc" "$tmp/w.pat" -o "$tmp/so" --emit=llvm,asm
holds "x86-64 with --emit=llvm,asm: its files" test "$(ls "$tmp/so" | tr '\n' ' ')" = "w.h w.ll w.o w.s w.safetensors "
expect "sm_90 over an x86-64 set" 0 "$patc" "$tmp/w.pat" --target=sm_90 -o "$tmp/so"
holds "sm_90 over an x86-64 set: only its files" test "$(ls "$tmp/so" | tr '\n' ' ')" = \
	"w.bin w.h w.ptx w.safetensors w_launch.c "
expect "x86-64 over an sm_90 set" 0 "$patc" "$tmp/w.pat" -o "$tmp/so"
holds "x86-64 over an sm_90 set: only its files" test "$(ls "$tmp/so" | tr '\n' ' ')" = "w.h w.o w.safetensors "
# a SIGTERM to patc while it links ends the linker too: nothing writes the library afterwards
cat > "$tmp/slow-cc" <<'EOF2'
#!/bin/sh
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
touch "$(dirname "$out")/started"
sleep 2
echo linked >"$out"
touch "$(dirname "$out")/wrote"
EOF2
chmod +x "$tmp/slow-cc"
mkdir "$tmp/so3"
CC="$tmp/slow-cc" "$patc" "$tmp/w.pat" -o "$tmp/so3" --emit=so 2>/dev/null &
pid=$!
for _ in $(seq 300); do [ -e "$tmp/so3/started" ] && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
sleep 3 # (past the stand-in's write, had it lived)
expect "a shared library: SIGTERM while linking (exit $rc)" 0 test $rc -eq 143 -a -e "$tmp/so3/started"
expect "a shared library: SIGTERM while linking ends the linker" 0 sh -c \
	"! ls -a '$tmp/so3' | grep -q 'w\.so\|wrote'"
# what the linker says comes to patc's stderr through a pipe: in its own process group (the terminal's
# background) a write to a terminal set to 'stty tostop' stopped it, and patc waited for good
cat > "$tmp/chatty-cc" <<'EOF2'
#!/bin/sh
echo "chatty-cc: on stderr" >&2
echo "chatty-cc: on stdout"
exec cc "$@"
EOF2
chmod +x "$tmp/chatty-cc"
expect "a shared library: the linker's words" 0 env CC="$tmp/chatty-cc" "$patc" "$tmp/w.pat" -o "$tmp/so4" --emit=so
has "a shared library: the linker's stderr on patc's" "$tmp/err" "^chatty-cc: on stderr"
has "a shared library: the linker's stdout on patc's stderr" "$tmp/err" "^chatty-cc: on stdout"
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
	expect "a shared library on a terminal set to tostop" 0 timeout 60 script -qec \
		"stty tostop; CC='$tmp/chatty-cc' '$patc' '$tmp/w.pat' -o '$tmp/so5' --emit=so" /dev/null
	has "a shared library on a terminal set to tostop: the linker's words" "$tmp/out" "chatty-cc: on stderr"
	expect "a shared library on a terminal set to tostop: linked" 0 test -s "$tmp/so5/w.so"
else
	echo "note: no 'script' (util-linux) with a terminal: the 'stty tostop' link is not tested"
fi
expect "a shared library for a GPU target" 0 "$patc" "$tmp/w.pat" --target=sm_90 -o "$tmp/gpuso" --emit=so
expect "a shared library for a GPU target: the launcher" 0 sh -c \
	"nm -D --defined-only '$tmp/gpuso/w.so' | grep -q ' T w_gpu_open$'"
# a program named like a system header (stdio.pat: stdio.h beside the launcher) links all the same,
# and the GPU header compiles as C89 and C++98
mkdir -p "$tmp/named" && cp "$tmp/w.pat" "$tmp/named/stdio.pat"
expect "a GPU library named stdio" 0 "$patc" "$tmp/named/stdio.pat" --target=sm_90 -o "$tmp/named/out" --emit=so
holds "a GPU library named stdio: linked" test -s "$tmp/named/out/stdio.so"
printf '#include "stdio.h"\nint main(void) { return 0; }\n' >"$tmp/named/c89.c"
holds "the GPU header as C89" gcc -std=c89 -pedantic -Wall -Wextra -Werror -iquote "$tmp/named/out" -c \
	"$tmp/named/c89.c" -o "$tmp/named/c89.o"
holds "the GPU header as C++98" g++ -std=c++98 -pedantic -Wall -Wextra -Werror -iquote "$tmp/named/out" -x c++ -c \
	"$tmp/named/c89.c" -o "$tmp/named/cxx98.o"
# the x86 and the GPU header of one program go together in one file (their shared shape constants
# once); an op of the same name and another shape still clashes
expect "the x86 files of the GPU library's program" 0 "$patc" "$tmp/named/stdio.pat" -o "$tmp/named/x86"
printf '#include "x86/stdio.h"\n#include "out/stdio.h"\nint main(void) { return stdio_q_M + stdio_q_KN; }\n' \
	>"$tmp/named/both.c"
holds "the x86 and GPU headers together" gcc -std=c11 -Wall -Wextra -Werror -iquote "$tmp/named" -c \
	"$tmp/named/both.c" -o "$tmp/named/both.o"
mkdir "$tmp/named/other" && sed 's/N = 8, dtype/N = 16, dtype/' "$tmp/named/stdio.pat" >"$tmp/named/other/stdio.pat"
expect "the x86 files of another shape" 0 "$patc" "$tmp/named/other/stdio.pat" -o "$tmp/named/x86"
expect "headers of two shapes together" 1 gcc -std=c11 -iquote "$tmp/named" -c "$tmp/named/both.c" -o "$tmp/named/both.o"
# a file name that would start a C identifier with '_' or a digit starts it with patc_
cp "$tmp/w.pat" "$tmp/named/2layer.pat"
expect "a program named 2layer" 0 "$patc" "$tmp/named/2layer.pat" -o "$tmp/named/two"
holds "a program named 2layer: patc_2layer.h" test -s "$tmp/named/two/patc_2layer.h"
# the GPU .bin's dense weight of a bf16 op (for checking results) is what the kernel reads: bf16
printf 'include "all.pat";\nop b: spmm(M = 64, K = 64, N = 16, dtype = bf16) { weights = random(3); apply block(16, 16, 50%%); }\n' \
	>"$tmp/named/bf.pat"
expect "a bf16 op for sm_80" 0 "$patc" "$tmp/named/bf.pat" --target=sm_80 -o "$tmp/named/bf"
python3 - "$tmp/named/bf" <<'EOF2' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the GPU .bin's dense bf16 weight"; }
import re, struct, sys
d = sys.argv[1]
dense = int(re.search(r'\} ops\[1\] = \{\n\t\{\d+, \d+, (\d+),', open(d + "/bf_launch.c").read()).group(1))
w = struct.unpack_from("<4096I", open(d + "/bf.bin", "rb").read(), dense)
sys.exit(0 if any(w) and all(v & 0xffff == 0 for v in w) else 1)
EOF2

# --run: the JIT kernel is checked against float64 and timed beside OpenBLAS
expect "--run" 0 "$patc" "$tmp/w.pat" --run --threads=2
# ... whose kernel set is named; where it is weaker than the strongest this CPU runs (OPENBLAS_CORETYPE=
# Haswell on an AVX-512 machine), the sgemm is timed with that one too, in a fresh process, and the
# speedup is over the faster; a fresh process that fails is said in a line, and the run goes on.
# (Where it applies: AVX-512 F, BW, DQ and VL, and an OpenBLAS that picks its kernels at load.)
has "--run names OpenBLAS's kernel set" "$tmp/out" "^  OpenBLAS kernel set: [A-Za-z]"
avx512=1
for f in avx512f avx512bw avx512dq avx512vl; do grep -qw "$f" /proc/cpuinfo 2>/dev/null || avx512=0; done
if [ $avx512 = 1 ] && grep -q "^  (OpenBLAS: .*DYNAMIC_ARCH" "$tmp/out"; then
	expect "--run with OPENBLAS_CORETYPE=Haswell" 0 env OPENBLAS_CORETYPE=Haswell "$patc" "$tmp/w.pat" --run --threads=2
	has "--run with Haswell's kernels: said weaker" "$tmp/out" \
		"^  OpenBLAS kernel set: Haswell, weaker than SkylakeX, the strongest this CPU runs (OPENBLAS_CORETYPE=Haswell)$"
	has "--run with Haswell's kernels: their time" "$tmp/out" \
		"^  OpenBLAS sgemm  *[0-9.]* ms .*(dense, same threads; Haswell kernels)$"
	has "--run with Haswell's kernels: SkylakeX's time" "$tmp/out" \
		"^  OpenBLAS sgemm  *[0-9.]* ms .*(dense, same threads; SkylakeX kernels, in a fresh process)$"
	has "--run with Haswell's kernels: the speedup over the faster" "$tmp/out" \
		"^  speedup over dense [0-9.]*x (over the faster sgemm, \(Haswell\|SkylakeX\)'s); relative error"
	holds "--run with Haswell's kernels: both times, for each op" \
		test "$(grep -c "SkylakeX kernels, in a fresh process" "$tmp/out")" -eq "$(grep -c "Haswell kernels)" "$tmp/out")"
	expect "--run with the fresh process failing" 0 env OPENBLAS_CORETYPE=Haswell PATC_BLAS_INJECT=fail "$patc" \
		"$tmp/w.pat" --run --threads=2
	has "--run with the fresh process failing: said" "$tmp/out" \
		"^  OpenBLAS sgemm with SkylakeX kernels not timed: failed, as PATC_BLAS_INJECT=fail asks$"
	has "--run with the fresh process failing: the speedup over Haswell's" "$tmp/out" \
		"^  speedup over dense [0-9.]*x; relative error"
	expect "--run with SkylakeX's kernels" 0 env OPENBLAS_CORETYPE=SkylakeX "$patc" "$tmp/w.pat" --run --threads=2
	has "--run with SkylakeX's kernels: as strong as any" "$tmp/out" \
		"^  OpenBLAS kernel set: SkylakeX, as strong as any this CPU runs (OPENBLAS_CORETYPE=SkylakeX)$"
	if grep -q "fresh process" "$tmp/out"; then fail=$((fail + 1)); echo "FAIL: --run with SkylakeX's kernels: timed again"; else pass=$((pass + 1)); fi
else
	echo "skip: no AVX-512 here, or an OpenBLAS without DYNAMIC_ARCH: --run beside a stronger kernel set not checked"
fi
# the header states what a kernel keeps on the stack of the thread that runs it: 32 x 240 blocks on
# N = 1024 copy X into 975 KiB of it (a thread with a 1 MiB stack crashed there, and the header said
# nothing); the kernel runs on a stack with that room.  A kernel for N at run time has no such
# buffer (its rows are N + 16 floats apart): these are compiled for their N (--fixed-n)
printf 'include "all.pat";\nop t: spmm(M = 32, K = 480, N = 1024) { weights = random(seed = 1); apply block(16, 240, 50%%); }\n' \
	>"$tmp/stack.pat"
expect "the stack a kernel takes" 0 "$patc" "$tmp/stack.pat" -o "$tmp/stack" --fixed-n
stack=$(sed -n 's/^enum { stack_t_STACK_BYTES = \([0-9]*\) };.*/\1/p' "$tmp/stack/stack.h")
holds "the stack a kernel takes: stated ($stack bytes)" test "${stack:-0}" -ge 998400 -a "${stack:-0}" -le 1048576
expect "--run on a stack with that room" 0 sh -c 'ulimit -s 2048 && exec "$0" "$1" --run --threads=1' "$patc" \
	"$tmp/stack.pat"
has "--run reports a speedup" "$tmp/out" "speedup over dense"
# the threads a kernel starts get that room whatever the C library's default (musl's is 128 KiB: set
# here as the default), and the result is right; patc's own --run has it under `ulimit -s 512`
cat >"$tmp/stack_main.c" <<'EOF2'
#define _GNU_SOURCE
#include "threads.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
#ifdef __GLIBC__ /* (elsewhere the C library's own default) */
	pthread_attr_t a;
	if (pthread_attr_init(&a) || pthread_attr_setstacksize(&a, 128 << 10) || pthread_setattr_default_np(&a))
		return 2;
#endif
	enum { M = threads_t_M, K = threads_t_K, N = threads_t_N };
	float *W = malloc(sizeof(float) * M * K), *X = malloc(sizeof(float) * K * N), *C = malloc(sizeof(float) * M * N);
	if (!W || !X || !C)
		return 2;
	for (int i = 0; i < K * N; i++)
		X[i] = (float)((i * 37 % 201) - 100) / 100;
	threads_t_unpack(&threads_t_packed, W);
	if (threads_t_run(X, C, N, &threads_t_packed, 4))
		return 3;
	double err = 0, mag = 0;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = 0;
			for (int k = 0; k < K; k++)
				ref += (double)W[m * K + k] * X[k * N + n];
			err = fmax(err, fabs(ref - C[m * N + n])), mag = fmax(mag, fabs(ref));
		}
	printf("relative error %g\n", err / mag);
	return err <= 1e-5 * mag ? 0 : 1;
}
EOF2
printf 'include "all.pat";\nop t: spmm(M = 32, K = 1920, N = 1024) { weights = random(seed = 1); apply block(16, 240, 50%%); }\n' \
	>"$tmp/threads.pat"
expect "a kernel on threads" 0 "$patc" "$tmp/threads.pat" -o "$tmp/threads" --fixed-n
holds "a kernel on threads: its buffers on their stacks" grep -q "threads_t_STACK_BYTES = 9[0-9][0-9][0-9][0-9][0-9] " \
	"$tmp/threads/threads.h"
holds "a kernel's threads under a 128 KiB default stack: built" cc -O1 -iquote "$tmp/threads" -o "$tmp/stack_main" \
	"$tmp/stack_main.c" "$tmp/threads/threads.o" -lm -lpthread
expect "a kernel's threads under a 128 KiB default stack: run and right" 0 "$tmp/stack_main"
# a pattern with no fast x86 kernel in its layout (element-wise) is said with a warning by -o and
# --run, in both layouts; one with a fast path (blocks, and in nk through the panels) is not
for l in kn nk; do
	printf 'include "all.pat";\nop u: spmm(M = 64, K = 64, N = 32, layout = %s) { weights = random(seed = 1); apply %s; }\n' \
		"$l" "unstructured(10%)" >"$tmp/slow_$l.pat"
	printf 'include "all.pat";\nop b: spmm(M = 64, K = 64, N = 32, layout = %s) { weights = random(seed = 1); apply %s; }\n' \
		"$l" "block(4, 4, 50%)" >"$tmp/fast_$l.pat"
	expect "-o, element-wise in $l" 0 "$patc" "$tmp/slow_$l.pat" -o "$tmp/slow_$l"
	has "-o warns of the per-weight kernel in $l" "$tmp/err" "warning: op 'u': .* in layout $l has no fast x86-64 kernel"
	expect "--run, element-wise in $l" 0 "$patc" "$tmp/slow_$l.pat" --run
	has "--run warns of the per-weight kernel in $l" "$tmp/err" "warning: op 'u': .* in layout $l has no fast x86-64 kernel"
	expect "-o, blocks in $l" 0 "$patc" "$tmp/fast_$l.pat" -o "$tmp/fast_$l"
	if grep -q "no fast x86-64 kernel" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL: -o warned of blocks in $l"; else pass=$((pass + 1)); fi
done
# --fixed-n: the kernel for the op's N only; _run refuses another N with -1, C untouched
cat >"$tmp/fixed_main.c" <<'EOF2'
#include "fixed.h"
#include <math.h>
#include <stdio.h>
int main(void)
{
	enum { M = fixed_t_M, K = fixed_t_K, N = fixed_t_N };
	static float W[M * K], X[(N + 1) * K], C[(N + 1) * M];
	for (int i = 0; i < (N + 1) * K; i++)
		X[i] = (float)((i * 29 % 101) - 50) / 50;
	C[0] = 42;
	if (fixed_t_run(X, C, N + 1, &fixed_t_packed, 2) != -1 || C[0] != 42 || fixed_t_run(X, C, -1, &fixed_t_packed, 2) != -1)
		return 1;
	if (fixed_t_run(X, C, N, &fixed_t_packed, 2))
		return 2;
	fixed_t_unpack(&fixed_t_packed, W);
	double err = 0, mag = 0;
	for (int n = 0; n < N; n++)
		for (int m = 0; m < M; m++) {
			double ref = 0;
			for (int k = 0; k < K; k++)
				ref += (double)W[m * K + k] * X[n * K + k];
			err = fmax(err, fabs(ref - C[n * M + m])), mag = fmax(mag, fabs(ref));
		}
	printf("relative error %g\n", err / mag);
	return err <= 1e-5 * mag ? 0 : 4;
}
EOF2
printf 'include "all.pat";\nop t: spmm(M = 70, K = 90, N = 37, layout = nk) { weights = random(seed = 2); apply block(8, 8, 50%%); }\n' \
	>"$tmp/fixed.pat"
expect "-o --fixed-n" 0 "$patc" "$tmp/fixed.pat" -o "$tmp/fixed" --fixed-n
has "--fixed-n: the header says so" "$tmp/fixed/fixed.h" "N must be fixed_t_N (--fixed-n): another N returns -1"
holds "--fixed-n: a caller built" cc -O1 -iquote "$tmp/fixed" -o "$tmp/fixed_main" "$tmp/fixed_main.c" "$tmp/fixed/fixed.o" \
	-lm -lpthread
expect "--fixed-n: another N refused, its own right" 0 "$tmp/fixed_main"
expect "--fixed-n on a GPU target" 0 "$patc" "$tmp/fixed.pat" -o "$tmp/fixed_gpu" --fixed-n --target=sm_80
has "--fixed-n on a GPU target: the header says so" "$tmp/fixed_gpu/fixed.h" "N must be the op's (--fixed-n): another N returns -1"
expect "-o on a GPU target without --fixed-n" 0 "$patc" "$tmp/fixed.pat" -o "$tmp/any_gpu" --target=sm_80
has "a GPU kernel takes any N: the header says so" "$tmp/any_gpu/fixed.h" "for N tokens,\$"
has "a GPU kernel takes any N: 0 launches nothing" "$tmp/any_gpu/fixed.h" "any N (0: nothing"
expect "--fixed-n with --run" 2 "$patc" "$tmp/fixed.pat" --run --fixed-n --target=sm_80
# the epilogue: bias in the checkpoint, a bias of the wrong length, bad names, GPU targets
printf 'include "all.pat";\nop b: spmm(M = 70, K = 90, N = 37, layout = nk, activation = silu) { weights = random(seed = 2); bias = random(seed = 3); apply block(8, 8, 50%%); }\n' \
	>"$tmp/epi.pat"
expect "epilogue: --emit=weights" 0 "$patc" "$tmp/epi.pat" --emit=weights -o "$tmp/epi.safetensors"
has "epilogue: the bias in the checkpoint" "$tmp/epi.safetensors" '"b.bias":{"dtype":"F32","shape":\[70\]'
has "epilogue: its activation in the metadata" "$tmp/epi.safetensors" '"b.activation":"silu"'
printf 'op c: spmm(M = 71, K = 90, N = 37) { weights = random(seed = 2); bias = safetensors("epi.safetensors", "b.bias"); }\n' \
	>"$tmp/epi_len.pat"
expect "epilogue: a bias of 70 for M = 71" 1 "$patc" "$tmp/epi_len.pat"
has "epilogue: says what the bias must hold" "$tmp/err" "the bias of op 'c' must hold M = 71 values"
printf 'op d: spmm(M = 7, K = 9, N = 3, activation = tanh) { }\n' >"$tmp/epi_act.pat"
expect "epilogue: an unknown activation" 1 "$patc" "$tmp/epi_act.pat"
has "epilogue: names the activations" "$tmp/err" "expected none, relu, gelu_tanh, gelu_erf or silu"
expect "epilogue on a GPU target" 0 "$patc" "$tmp/epi.pat" -o "$tmp/epi_gpu" --target=sm_80
for t in 1 2; do
	expect "--run --threads=$t under ulimit -s 512" 0 sh -c 'ulimit -s 512 && exec "$0" "$1" --run --threads="$2"' \
		"$patc" "$tmp/stack.pat" "$t"
	has "--run --threads=$t under ulimit -s 512: a speedup" "$tmp/out" "speedup over dense"
done
has "--run checks the result" "$tmp/out" "relative error vs float64 on the masked weight"
if ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1 "; then
	expect "--run on a GPU target without a driver" 3 "$patc" "$tmp/w.pat" --run --target=sm_80
	has "--run without a driver says so" "$tmp/err" "needs an NVIDIA GPU: no CUDA driver"
fi
# a wrong kernel (PATC_RUN_INJECT spoils one op's checked result): named, exit 4, the other op still runs
expect "--run with a wrong kernel" 4 env PATC_RUN_INJECT=wrong:q "$patc" "$tmp/w.pat" --run --threads=2
has "--run names the wrong op" "$tmp/err" "op 'q': the kernel's result is wrong (relative error"
has "--run goes on after a wrong op" "$tmp/out" "^c: 30x40x8"
if grep -q "op 'c'" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL: --run: the right op named wrong"; else pass=$((pass + 1)); fi
expect "--run with an element unwritten" 4 env PATC_RUN_INJECT=unwritten:c "$patc" "$tmp/w.pat" --run --threads=2
has "--run counts the unwritten element" "$tmp/err" "op 'c': the kernel's result is wrong (relative error .*, 1 elements not written)"
expect "--run with --explain" 2 "$patc" "$tmp/w.pat" --run --explain
expect "--threads=0" 2 "$patc" "$tmp/w.pat" --run --threads=0

# options that go with --search only, and outputs --search does not write
for opt in --no-measure --resume --shard=0/2 --op=q --sparsity=50% --tolerance=1% --cost-model=analytic --tune=1 \
	--tie=1% --explore=1% --timeout=5 --budget=5% --topk=3 --max-depth=2 --seed=1 --min-length=4 --max-pattern=8; do
	expect "$opt without --search" 2 "$patc" "$tmp/w.pat" "$opt"
	has "$opt is --search's" "$tmp/err" "${opt%%=*} is an option of --search"
done
expect "--search with --explain" 2 "$patc" "$tmp/w.pat" --search --explain
expect "--search with --emit=weights" 2 "$patc" "$tmp/w.pat" --search --emit=weights -o "$tmp/s.safetensors"
[ ! -e "$tmp/s.safetensors" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: --search --emit=weights wrote"; }
expect "--shard past int" 2 "$patc" "$tmp/w.pat" --search --shard=0/4294967297
expect "--shard with a plus" 2 "$patc" "$tmp/w.pat" --search --shard=+0/2
expect "--tune with --shard" 2 "$patc" "$tmp/w.pat" --search --op=q --shard=0/2 --tune=2 -o "$tmp/shtune"
has "--tune with --shard: why" "$tmp/err" "a shard does not tune"
expect "--tune with a Slurm array's shard" 2 env SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 "$patc" "$tmp/w.pat" \
	--search --op=q --tune=1 -o "$tmp/shtune"
has "--tune with a Slurm array's shard: why" "$tmp/err" "a shard does not tune"
# -o naming a file where a directory goes
: >"$tmp/afile"
expect "-o a file for objects" 3 "$patc" "$tmp/w.pat" -o "$tmp/afile"
has "-o a file: not a directory" "$tmp/err" "cannot create '$tmp/afile': Not a directory"
# a nest of more loops than a tensor reader takes (8): its packed values, one dimension a loop
printf 'op z: spmm(M = 64, K = 64, N = 8) {\n weights = random(seed = 1);\n split m -> m0, m1, m2, m3 : 4, 4, 2, 2;\n split k -> k0, k1, k2, k3, k4 : 4, 2, 2, 2, 2;\n perforate k4 keep 1;\n}\n' >"$tmp/nine.pat"
expect "nine loops --emit=weights" 0 "$patc" "$tmp/nine.pat" --emit=weights -o "$tmp/nine.safetensors"
python3 "$root/tests/read_safetensors.py" "$tmp/nine.safetensors" >"$tmp/out" 2>&1
has "nine loops: values of rank 9" "$tmp/out" "^tensor z.values F32 \[4, 4, 2, 2, 4, 2, 2, 2, 1\]"
# weights past the 16-bit dtype's range, and importance past float32's
printf 'op h: spmm(M = 4, K = 8, N = 4, dtype = f16) { weights = npy("big.npy"); perforate k keep 4; }\nop l: spmm(M = 4, K = 8, N = 4) { weights = npy("huge.npy"); importance = l2; perforate k keep 4; }\n' >"$tmp/range.pat"
python3 - "$tmp" <<'EOF2'
import struct, sys
def npy(path, vals):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }"
    hdr += " " * (63 - len(hdr)) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<32f", *vals))
npy(sys.argv[1] + "/big.npy", [1.0] * 31 + [70000.0])
npy(sys.argv[1] + "/huge.npy", [1.0] * 31 + [1e20])
EOF2
expect "weights past f16" 1 "$patc" "$tmp/range.pat"
has "f16 range named" "$tmp/err" "op 'h': weight 70000 at \[3, 7\] is outside the range of its dtype f16"
# issue 42 (scores in float32): l2 scores are scaled by one power of two (prune/importance.c), so
# the square of 1e20 is no longer past float32's range; 1e20 keeps its place among the kept four
grep -v "^op h" "$tmp/range.pat" >"$tmp/range_l2.pat"
expect "l2 of a weight of 1e20" 0 "$patc" "$tmp/range_l2.pat" --explain
has "l2 of 1e20: retained" "$tmp/out" "retained importance 100"
# finite weights (2e38) whose products with activations float32 cannot hold: the output error is
# still measured (0.5: half of equal weights pruned), in --explain and the metadata, not NaN; --run
# blames the input (exit 1), not the kernel, as the float64 reference is past float32's range (X is
# random, but of its 64 columns, each adding 256 values to N(0, 2), one at least is past 1.7: all but surely)
python3 - "$tmp" <<'EOF2'
import struct, sys
def npy(path, shape, vals):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': %r, }" % (shape,)
    hdr += " " * (127 - len(hdr)) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() +
                           struct.pack("<%df" % len(vals), *vals))
npy(sys.argv[1] + "/bigw.npy", (8, 512), [2e38] * 4096)
npy(sys.argv[1] + "/ones.npy", (512, 4), [1.0] * 2048)
EOF2
printf 'op b: spmm(M = 8, K = 512, N = 64) {\n weights = npy("bigw.npy");\n calibration = npy("ones.npy");\n%s\n}\n' \
	' perforate k keep 256;' >"$tmp/bigw.pat"
expect "output error past float32: --explain" 0 "$patc" "$tmp/bigw.pat" --explain
has "output error past float32: measured" "$tmp/out" "relative output error ||WX - W_sX|| / ||WX|| = 0\.5000"
expect "output error past float32: --emit=weights" 0 "$patc" "$tmp/bigw.pat" --emit=weights -o "$tmp/bigw.safetensors"
python3 "$root/tests/read_safetensors.py" "$tmp/bigw.safetensors" >"$tmp/out" 2>&1
# (0.5 within float32's sgemm: 0.499999848 where OpenBLAS sums in another order, as on Xeon)
has "output error past float32: in the metadata" "$tmp/out" "^meta b.output_error \(0\.5\(0000[0-9]*\)\?\|0\.49999[89][0-9]*\|0\.50000[01][0-9]*\)$"
expect "--run of a product past float32" 1 "$patc" "$tmp/bigw.pat" --run --threads=2
ovf="op 'b': the product of its weights and --run's activations overflows float32"
has "--run: the overflow named" "$tmp/err" "$ovf: C\[[0-9]*, [0-9]*\] is .* in float64, past float32's range"
has "--run: the overflow not checked" "$tmp/out" "not checked: the product overflows float32"
# the GPU path looks at the reference before a launch: under the build's stand-in driver where there is one
mock=$(dirname "$patc")/tests/mock
if [ -e "$mock/libcuda.so.1" ]; then
	expect "--run on a GPU of a product past float32" 1 env LD_LIBRARY_PATH="$mock" PATC_CUBLAS="$mock/libcublas.so.13" \
		"$patc" "$tmp/bigw.pat" --run --target=sm_80
	has "--run on a GPU: the overflow named" "$tmp/err" "$ovf"
fi

# out of memory is the environment's (exit 3), not an input or internal error: a 60000 x 60000
# weight under a 400 MB address space; --explain of 16 ops x 1000 primitives fits in it (each
# step's nest kept as text, not as a PatternIR); not under ASan, whose shadow memory needs more
if [ -z "${ASAN_OPTIONS:-}" ]; then
	printf 'op o: spmm(M = 60000, K = 60000, N = 4) { weights = random(1); perforate k keep 30000; }\n' >"$tmp/huge.pat"
	# (one OpenBLAS thread: each of its threads takes address space before main, and spins where it cannot)
	expect "out of memory" 3 env OPENBLAS_NUM_THREADS=1 timeout 60 \
		bash -c "ulimit -v 400000; exec \"\$0\" \"\$1\"" "$patc" "$tmp/huge.pat"
	has "out of memory said" "$tmp/err" "^patc: error: out of memory for the 60000 x 60000 weight of op 'o'$"
	python3 -c "
print('pattern p() {'); [print('  reorder k, m;') for _ in range(1000)]; print('}')
for i in range(16): print('op o%d: spmm(M = 8, K = 8, N = 4) { apply p(); }' % i)" >"$tmp/mem.pat"
	expect "--explain of 16000 primitives" 0 env OPENBLAS_NUM_THREADS=1 timeout 60 \
		bash -c "ulimit -v 400000; exec \"\$0\" \"\$1\" --explain" "$patc" "$tmp/mem.pat"
	has "--explain of 16000 primitives: the last" "$tmp/out" "step 1000: reorder k, m"
	# (and a search's: the X its kernels are measured on, 64 x 2e9)
	printf 'op a: spmm(M = 64, K = 64, N = 2000000000) { weights = random(1); }\n' >"$tmp/wide.pat"
	expect "out of memory in a search" 3 env OPENBLAS_NUM_THREADS=1 timeout 60 \
		bash -c "ulimit -v 400000; exec \"\$0\" \"\$1\" --search -o \"\$2\"" "$patc" "$tmp/wide.pat" "$tmp/wide"
	has "out of memory in a search said" "$tmp/err" "out of memory for the 64 x 2000000000 input X"
fi
# a refused primitive stops the op's body: the settings after it are not checked (no false errors)
printf 'op a: spmm(M = 8, K = 8, N = 4) {\n    rank = total;\n    perforate k keep 99;\n    weights = random(1);\n}\n' >"$tmp/stop.pat"
expect "a refused primitive" 1 "$patc" "$tmp/stop.pat"
if grep -q "has no weights" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL: a false error after a refusal"; else pass=$((pass + 1)); fi

# -o: the base name keeps all but the extension (bert.layer0 and bert.layer1 do not collide);
# a program without ops has nothing to write; a launch past CUDA's grid is refused
printf 'op q: spmm(M = 16, K = 16, N = 8) { weights = random(1); perforate k keep 8; }\n' >"$tmp/bert.layer0.pat"
expect "a dotted name" 0 "$patc" "$tmp/bert.layer0.pat" -o "$tmp/dots"
[ -s "$tmp/dots/bert_layer0.o" ] && [ -s "$tmp/dots/bert_layer0.h" ] && pass=$((pass + 1)) ||
	{ fail=$((fail + 1)); echo "FAIL: a dotted name: $(ls "$tmp/dots")"; }
printf 'pattern p() { perforate k keep 2; }\n' >"$tmp/noops.pat"
expect "-o without ops" 1 "$patc" "$tmp/noops.pat" --target=sm_90 -o "$tmp/noops"
printf 'op big: spmm(M = 64, K = 64, N = 8400000) { weights = random(1); perforate k keep 32; }\n' >"$tmp/bign.pat"
expect "a grid past CUDA's" 1 "$patc" "$tmp/bign.pat" --target=sm_90 -o "$tmp/bign"
has "the grid's limit named" "$tmp/err" "op 'big': N = 8400000 tokens make .* past the 65535 of CUDA's grid"
holds "a failed compile takes away the -o directory it made" test ! -e "$tmp/bign"
expect "--run of a grid past CUDA's" 1 "$patc" "$tmp/bign.pat" --target=sm_90 --run
has "--run: the grid's limit named" "$tmp/err" "op 'big': N = 8400000 tokens make .* past the 65535 of CUDA's grid"
# the summary's density is the real weights' where padding keeps more (3200 of 100 x 70 kept)
printf 'include "all.pat";\nop a: spmm(M = 100, K = 70, N = 8) { weights = random(1); apply block(32, 32, 25%%); }\n' >"$tmp/pad.pat"
expect "a padded op" 0 "$patc" "$tmp/pad.pat"
has "a padded op's density" "$tmp/out" "(density 45.71%, the pattern's 33.33% over the padded nest, retained"
# the headers declare C linkage for C++ callers
if command -v g++ >/dev/null; then
	printf '#include "bert_layer0.h"\nint main() { float w[256]; bert_layer0_q_unpack(&bert_layer0_q_packed, w); return w[0] != w[0]; }\n' \
		>"$tmp/cxx.cpp"
	g++ -I "$tmp/dots" "$tmp/cxx.cpp" "$tmp/dots/bert_layer0.o" -lpthread -o "$tmp/cxx" && "$tmp/cxx" &&
		pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the header from C++"; }
fi

# importance that ranks nothing (zero activations for wanda, zero scores) is refused, not an arbitrary mask
python3 - "$tmp" <<'EOF2'
import struct, sys
def npy(path, shape):
	d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % shape
	h = d + " " * ((64 - (11 + len(d)) % 64) % 64) + "\n"
	body = struct.pack("<%df" % (shape[0] * shape[1]), *[0.0] * (shape[0] * shape[1]))
	open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + body)
npy(sys.argv[1] + "/zcalib.npy", (8, 4))
npy(sys.argv[1] + "/zscores.npy", (8, 8))
EOF2
printf 'op a: spmm(M = 8, K = 8, N = 4) { weights = random(1); calibration = npy("zcalib.npy"); importance = wanda; perforate k keep 4; }\n' >"$tmp/zc.pat"
expect "wanda on zero activations" 1 "$patc" "$tmp/zc.pat"
has "wanda on zero activations: why" "$tmp/err" "every calibration activation is zero, so no weight is more important"
printf 'op a: spmm(M = 8, K = 8, N = 4) { weights = random(1); importance = npy("zscores.npy"); perforate k keep 4; }\n' >"$tmp/zs.pat"
expect "zero scores" 1 "$patc" "$tmp/zs.pat"
has "zero scores: why" "$tmp/err" "every importance score is zero"
# ... and so is importance that is zero for another reason: weights of zeros, or wanda's weights and
# activations nonzero at different inputs k
python3 - "$tmp" <<'EOF2'
import struct, sys
def npy(path, rows, cols, f):
	d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
	h = d + " " * ((64 - (11 + len(d)) % 64) % 64) + "\n"
	body = struct.pack("<%df" % (rows * cols), *[f(r, c) for r in range(rows) for c in range(cols)])
	open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + body)
npy(sys.argv[1] + "/wleft.npy", 8, 8, lambda m, k: 1.0 + m if k < 4 else 0.0)
npy(sys.argv[1] + "/xright.npy", 8, 4, lambda k, t: 0.0 if k < 4 else 1.0 + t)
EOF2
printf 'op a: spmm(M = 8, K = 8, N = 4) { weights = npy("zscores.npy"); perforate k keep 4; }\n' >"$tmp/zw.pat"
expect "zero weights" 1 "$patc" "$tmp/zw.pat"
has "zero weights: why" "$tmp/err" "every weight is zero, so no weight is more important"
printf 'op a: spmm(M = 8, K = 8, N = 4) { weights = npy("wleft.npy"); calibration = npy("xright.npy"); importance = wanda; perforate k keep 4; }\n' >"$tmp/zd.pat"
expect "wanda, weights and activations apart" 1 "$patc" "$tmp/zd.pat"
has "wanda, weights and activations apart: why" "$tmp/err" "no input k has both a nonzero weight and a nonzero calibration"
# the output error is the same for weights and activations scaled by powers of two and by 1e-23
# (whose products sink below float32's normal range), and is not cut to what fits a slab of tokens
python3 - "$tmp" <<'EOF2'
import random, struct, sys
random.seed(5)
def npy(path, rows, cols, vals):
	d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
	h = d + " " * ((64 - (11 + len(d)) % 64) % 64) + "\n"
	open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%df" % len(vals), *vals))
w = [random.gauss(0, 1) for _ in range(64 * 64)]
x = [random.gauss(0, 1) for _ in range(64 * 16)]
for name, s in (("", 1.0), ("s", 1e-23)):
	npy(sys.argv[1] + "/ow%s.npy" % name, 64, 64, [v * s for v in w])
	npy(sys.argv[1] + "/ox%s.npy" % name, 64, 16, [v * s for v in x])
EOF2
printf 'op a: spmm(M = 64, K = 64, N = 16) { weights = npy("ow.npy"); calibration = npy("ox.npy"); perforate k keep 16; }\n%s\n' \
	'op b: spmm(M = 64, K = 64, N = 16) { weights = npy("ows.npy"); calibration = npy("oxs.npy"); perforate k keep 16; }' \
	>"$tmp/oe.pat"
expect "output error of tiny values" 0 "$patc" "$tmp/oe.pat" --emit=weights -o "$tmp/oe.safetensors"
python3 - "$tmp/oe.safetensors" <<'EOF2' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: output error of tiny values"; }
import json, struct, sys
b = open(sys.argv[1], "rb").read()
m = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]
a, s = float(m["a.output_error"]), float(m["b.output_error"])
sys.exit(0 if 0.3 < a < 0.7 and abs(a - s) < 1e-6 * a else print("output errors", a, s) or 1)
EOF2

# options that would do nothing are refused: --threads without --run or --search, a .pir file's
# --rank, --importance and -I; train-cost-model's target is one patc knows
expect "--threads alone" 2 "$patc" "$root/examples/quick.pat" --threads=2
has "--threads alone: why" "$tmp/err" "--threads is for --run and --search"
printf 'pir a m=8 k=8 {\n  loop m 8 = m[8]*1\n  loop k 8 = k[8]*1\n}\n' >"$tmp/plain.pir"
expect ".pir" 0 "$patc" "$tmp/plain.pir"
for arg in --rank=total --importance=l2 "-I$tmp" --wgmma --split-workspace; do
	expect ".pir with $arg" 2 "$patc" "$tmp/plain.pir" "$arg" --target=sm_90
	has ".pir with $arg: why" "$tmp/err" "a .pir file has no weights, primitives or includes"
done
expect "train-cost-model --target=bogus" 2 "$patc" train-cost-model "$tmp/none.jsonl" -o "$tmp/m" --target=bogus
has "train-cost-model --target=bogus: why" "$tmp/err" "unknown target 'bogus'"
# a file with no end and no newline is no tuning log: refused at its first MiB, not read until memory runs out
expect "merge of /dev/zero" 1 timeout 20 "$patc" merge /dev/zero -o "$tmp/zero.jsonl"
has "merge of /dev/zero: said" "$tmp/err" "'/dev/zero' is not a tuning log: line 1 is longer than 1 MiB"
expect "merge of /dev/zero: no output" 1 test -e "$tmp/zero.jsonl"
expect "merge --help" 0 "$patc" merge --help
has "merge --help: its usage" "$tmp/out" "^usage: patc merge LOG... -o OUT"
expect "train-cost-model --help" 0 "$patc" train-cost-model x.jsonl --help
has "train-cost-model --help: its defaults" "$tmp/out" "default native"
expect "train-cost-model of /dev/zero" 1 timeout 20 "$patc" train-cost-model /dev/zero -o "$tmp/zero.model"
has "train-cost-model of /dev/zero: said" "$tmp/err" "'/dev/zero' is not a tuning log: line 1 is longer than 1 MiB"

# an error inside a pattern applied by another names where it was applied
printf "pattern outer(x) { apply inner(); }\npattern inner(y) { perforate k keep y; }\nop a: spmm(M = 8, K = 8, N = 4) { apply outer(1); }\n" >"$tmp/nest.pat"
expect "a nested apply's error" 1 "$patc" "$tmp/nest.pat"
has "a nested apply's error: where" "$tmp/err" "note: in pattern 'outer' applied here"

# -o never writes over what the program reads: the .pat file itself, or a tensor file an op
# reads (-o FILE, or one of the files -o DIR writes); the inputs are left as they were
mkdir -p "$tmp/self" && cp "$root/examples/quick.pat" "$tmp/self/quick.pat"
expect "-o over the .pat file" 2 "$patc" "$tmp/self/quick.pat" --emit=pir -o "$tmp/self/quick.pat"
has "-o over the .pat file: why" "$tmp/err" "would write over '$tmp/self/quick.pat', the file being compiled"
holds "-o over the .pat file left it" cmp -s "$tmp/self/quick.pat" "$root/examples/quick.pat"
python3 - "$tmp/self/w.safetensors" <<'EOF2'
import json, struct, sys
data = struct.pack("<32f", *range(32))
hdr = json.dumps({"w": {"dtype": "F32", "shape": [4, 8], "data_offsets": [0, len(data)]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + data)
EOF2
printf 'op a: spmm(M = 4, K = 8, N = 4) { weights = safetensors("w.safetensors", "w"); perforate k keep 4; }\n' \
	>"$tmp/self/w.pat"
cp "$tmp/self/w.safetensors" "$tmp/self/w0.safetensors"
expect "-o over a weight file" 2 "$patc" "$tmp/self/w.pat" --emit=weights -o "$tmp/self/w.safetensors"
has "-o over a weight file: why" "$tmp/err" "a tensor file the program reads"
expect "-o DIR over a weight file" 2 "$patc" "$tmp/self/w.pat" -o "$tmp/self"
holds "-o over a weight file left it" cmp -s "$tmp/self/w.safetensors" "$tmp/self/w0.safetensors"
# options parsed strictly: no sign, space or hex where a count or seconds go, no empty --emit kind
# (each beside what it goes with, where the file without weights would fail otherwise with exit 1,
# and --emit alone, which would exit 0)
for arg in "--run --threads=+4" "--run --threads= 4" "--search --timeout=0x10" "--search --timeout=1e-300" \
	"--emit=" "--emit=pir," "--emit=,pir" "--emit=pir,,weights"; do
	read -r with opt <<<"$arg"
	[ -n "$opt" ] || { opt=$with; with=; }
	expect "$arg" 2 "$patc" "$root/examples/quick.pat" $with "$opt"
	has "$arg: why" "$tmp/err" "takes"
done
# a name so long that its temporary file's would be too long is written all the same
long=$(printf 'a%.0s' $(seq 250))
expect "-o with a 254-byte name" 0 "$patc" "$root/examples/quick.pat" --emit=pir -o "$tmp/$long.pir"
holds "-o with a 254-byte name: written" test -s "$tmp/$long.pir"
holds "-o with a 254-byte name: no temporary file left" test -z "$(ls "$tmp" | grep '\.tmp\.')"

# -o through a symbolic link writes where it leads and leaves the link; a link to a descriptor
# (/dev/stdout is one) is written in place, to what the shell redirected; a dangling link makes
# its target; links in a loop are refused
: >"$tmp/real.pir"
ln -s real.pir "$tmp/link.pir"
expect "-o through a link" 0 "$patc" "$root/examples/quick.pat" --emit=pir -o "$tmp/link.pir"
holds "-o through a link: still a link" test -L "$tmp/link.pir"
holds "-o through a link: its target written" grep -q "^pir proj" "$tmp/real.pir"
ln -s /proc/self/fd/1 "$tmp/mystdout"
expect "-o to a descriptor's link" 0 sh -c 'exec "$0" "$1" --emit=pir -o "$2" >"$3"' "$patc" \
	"$root/examples/quick.pat" "$tmp/mystdout" "$tmp/captured"
holds "-o to a descriptor's link: still a link" test -L "$tmp/mystdout"
holds "-o to a descriptor's link: written through the redirection" grep -q "^pir proj" "$tmp/captured"
ln -s made.pir "$tmp/dangling.pir"
expect "-o through a dangling link" 0 "$patc" "$root/examples/quick.pat" --emit=pir -o "$tmp/dangling.pir"
holds "-o through a dangling link: its target made" grep -q "^pir proj" "$tmp/made.pir"
ln -s loop2 "$tmp/loop1" && ln -s loop1 "$tmp/loop2"
expect "-o through links in a loop" 3 "$patc" "$root/examples/quick.pat" --emit=pir -o "$tmp/loop1"
has "-o through links in a loop: why" "$tmp/err" "Too many levels of symbolic links"
# -o over a file the program includes is refused like -o over the program
mkdir "$tmp/inc"
printf 'pattern mine() { split k -> k0, k1 : _, 4; }\n' >"$tmp/inc/lib.pat"
cp "$tmp/inc/lib.pat" "$tmp/inc/lib0.pat"
printf 'include "lib.pat";\nop a: spmm(M = 16, K = 16, N = 8) { weights = random(3); apply mine(); }\n' >"$tmp/inc/main.pat"
expect "-o over an included file" 2 "$patc" "$tmp/inc/main.pat" --emit=weights -o "$tmp/inc/lib.pat"
has "-o over an included file: why" "$tmp/err" "would write over '$tmp/inc/lib.pat', a file the program includes"
holds "-o over an included file left it" cmp -s "$tmp/inc/lib.pat" "$tmp/inc/lib0.pat"
# a PatternIR of more than 4 KB goes into the weights' metadata whole (it was cut at 4095 bytes)
python3 - "$tmp/long.pat" <<'EOF2'
import sys
lines, prev = ["op a: spmm(M = 64, K = 256, N = 4) {", " weights = random(1);"], "k"
for r in range(10):
	kids = [("r%dc%d" % (r, i)).ljust(31, "q") for i in range(8)]
	lines.append(" split %s -> %s : %s;" % (prev, ", ".join(kids), ", ".join(["2"] * 8)))
	prev = ("r%dj" % r).ljust(31, "q")
	lines.append(" join %s -> %s;" % (", ".join(kids), prev))
open(sys.argv[1], "w").write("\n".join(lines + [" perforate %s keep 64;" % prev, "}"]) + "\n")
EOF2
expect "a long PatternIR into the metadata" 0 "$patc" "$tmp/long.pat" --emit=weights -o "$tmp/long.safetensors"
python3 - "$tmp/long.safetensors" "$tmp/long_meta.pir" <<'EOF2'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
open(sys.argv[2], "w").write(json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]["a.pir"])
EOF2
"$patc" "$tmp/long.pat" --emit=pir >"$tmp/long_want.pir" 2>/dev/null
expect "a long PatternIR read back from the metadata" 0 "$patc" "$tmp/long_meta.pir" --emit=pir
holds "a long PatternIR: the metadata's is the program's" cmp -s "$tmp/out" "$tmp/long_want.pir"
holds "a long PatternIR: longer than 4 KB" test "$(wc -c <"$tmp/long_want.pir")" -gt 4096
# percentages parsed strictly too
for v in " 50%" "+50%" "0x.8" "1e-3" "-0%" "50%%" "."; do
	expect "--budget='$v'" 2 "$patc" "$tmp/w.pat" --search --op=q --no-measure --budget="$v"
	has "--budget='$v': why" "$tmp/err" "--budget takes a percentage"
done
expect "--sparsity=0%" 2 "$patc" "$tmp/w.pat" --search --op=q --no-measure --sparsity=0%
has "--sparsity=0%: why" "$tmp/err" "a percentage over 0 and under 100, such as 75%, or a range such as 70%..80%, not '0%'"
expect "--sparsity with a first part past 64 bytes" 2 "$patc" "$tmp/w.pat" --search --op=q --no-measure \
	--sparsity="0.5$(printf '0%.0s' $(seq 70))x..0.9"
# options that shape measurements are refused with --no-measure, which makes none
for opt in --resume --shard=0/2 --tune=1 --tie=1% --explore=1% --timeout=5; do
	expect "$opt with --no-measure" 2 "$patc" "$tmp/w.pat" --search --op=q --no-measure "$opt"
	has "$opt with --no-measure: why" "$tmp/err" "${opt%%=*} shapes the search's measurements"
done
# a learned cost model ranks for the kind of target it was learned on
sed 's/^target x86-64$/target sm_90/' "$root/stdlib/cost-x86-64.model" >"$tmp/sm90.model"
expect "a GPU's cost model for x86" 1 "$patc" "$tmp/w.pat" --search --op=q --no-measure \
	--cost-model="$tmp/sm90.model" -o "$tmp/cm"
has "a GPU's cost model for x86: why" "$tmp/err" "learned on measurements for target sm_90 and cannot rank"
expect "the x86 cost model for sm_90" 1 "$patc" "$tmp/w.pat" --search --op=q --no-measure --target=sm_90 \
	--cost-model="$root/stdlib/cost-x86-64.model" -o "$tmp/cm"
holds "a failed search takes away the -o directory it made" test ! -e "$tmp/cm"
mkdir "$tmp/cm"
expect "a failed search into a directory there before" 1 "$patc" "$tmp/w.pat" --search --op=q --no-measure \
	--cost-model="$tmp/sm90.model" -o "$tmp/cm"
holds "a failed search keeps the -o directory that was there" test -d "$tmp/cm"
# the model is read before the directory is made or the log opened: a bad one leaves neither
expect "a measuring search with a GPU's cost model" 1 "$patc" "$tmp/w.pat" --search --op=q --topk=1 --tune=0 \
	--cost-model="$tmp/sm90.model" -o "$tmp/cm2"
holds "a measuring search with a GPU's cost model: no directory" test ! -e "$tmp/cm2"
expect "a measuring search with a GPU's cost model, into a directory" 1 "$patc" "$tmp/w.pat" --search --op=q \
	--topk=1 --tune=0 --cost-model="$tmp/sm90.model" -o "$tmp/cm"
holds "a measuring search with a GPU's cost model, into a directory: no log" test ! -e "$tmp/cm/tune.jsonl"
# a model file is untrusted: each fault named with its line, in the file's own count
m=$root/stdlib/cost-x86-64.model
awk 'NR == 300 { $0 = $0 " 7" } 1' "$m" >"$tmp/m300.model"
sed '1s/.*/patc-cost-model 12/' "$m" >"$tmp/m12.model"
sed '/^target /d' "$m" >"$tmp/mnt.model"
sed 's/^features 51$/features 51xyz/' "$m" >"$tmp/mfx.model"
sed 's/^spearman .*/spearman 7/' "$m" >"$tmp/msp.model"
awk '/^gbt / { $4 = 800 } 1' "$m" >"$tmp/minf.model"
awk '/^gbt / { $4 = -800 } 1' "$m" >"$tmp/mzero.model"
sed '/^trees$/,$d' "$m" >"$tmp/mhdr.model"
for c in "m300:line 300: unexpected '7'" "m12:is not a patc cost model" "mnt:names no target" \
	"mfx:line 4: features '51xyz' is not a count" "msp:spearman '7' is neither 'none' nor a number in -1..1" \
	"minf:its predictions reach e^8" "mzero:its predictions reach e^-8" "mhdr:ends before its 'trees' line"; do
	expect "a cost model: ${c#*:}" 1 "$patc" "$tmp/w.pat" --search --op=q --no-measure --cost-model="$tmp/${c%%:*}.model" \
		-o "$tmp/cm"
	has "a cost model: ${c#*:}: said" "$tmp/err" "${c#*:}"
done
expect "a cost model that is a directory" 1 "$patc" "$tmp/w.pat" --search --op=q --no-measure --cost-model="$tmp" \
	-o "$tmp/cm"
has "a cost model that is a directory: said" "$tmp/err" "cannot read cost model '$tmp': Is a directory"
sed 's/$/\r/' "$m" >"$tmp/mcrlf.model"
expect "a cost model with CRLF line ends" 0 "$patc" "$tmp/w.pat" --search --op=q --no-measure \
	--cost-model="$tmp/mcrlf.model" -o "$tmp/cm"
# Slurm's array variables split measurements: --no-measure, which makes none, ignores them
expect "--no-measure in a Slurm array task" 0 env SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 "$patc" "$tmp/w.pat" \
	--search --op=q --no-measure -o "$tmp/cm"
holds "--no-measure in a Slurm array task: no shard" sh -c "! grep -q 'shard' '$tmp/out' '$tmp/err'"
# --op naming an op without weights is the input's (exit 1), naming none a usage error (exit 2)
printf 'op a: spmm(M = 8, K = 8, N = 4) { weights = random(1); }\nop b: spmm(M = 8, K = 8, N = 4) { }\n' >"$tmp/nw.pat"
expect "--op= an op without weights" 1 "$patc" "$tmp/nw.pat" --search --op=b --no-measure -o "$tmp/nws"
has "--op= an op without weights: why" "$tmp/err" "op 'b' in '$tmp/nw.pat' has no weights"
expect "--op= no such op" 2 "$patc" "$tmp/nw.pat" --search --op=c --no-measure -o "$tmp/nws"
# a tuning log that is not a regular file (a FIFO would hang the search) is refused at once
mkdir "$tmp/fifo" && mkfifo "$tmp/fifo/tune.jsonl"
expect "a FIFO for tune.jsonl" 3 timeout 20 "$patc" "$tmp/w.pat" --search --op=q --topk=1 --tune=0 -o "$tmp/fifo"
has "a FIFO for tune.jsonl: why" "$tmp/err" "tune.jsonl' is not a regular file"
# merge: a line with a NUL byte is not a measurement, whatever JSON comes before the NUL
zcat "$root/bench/costmodel/x86-64.jsonl.gz" | head -1 >"$tmp/one.jsonl"
python3 -c 'import sys; l = open(sys.argv[1], "rb").read().rstrip(b"\n"); open(sys.argv[2], "wb").write(l + b"\0junk\n\0" + l + b"\n")' \
	"$tmp/one.jsonl" "$tmp/nul.jsonl"
expect "merge of lines with NUL bytes" 1 "$patc" merge "$tmp/nul.jsonl" -o "$tmp/nul.out"
has "merge of lines with NUL bytes: why" "$tmp/err" "none of its 2 lines is a measurement"
# --run with a wrong kernel and -o FILE: FILE not written, the report beside the errors on stderr;
# stdout that cannot be written leaves the wrong kernel's exit code
expect "--run -o with a wrong kernel" 4 env PATC_RUN_INJECT=wrong:q "$patc" "$tmp/w.pat" --run --threads=2 \
	-o "$tmp/run.txt"
holds "--run -o with a wrong kernel: not written" test ! -e "$tmp/run.txt"
has "--run -o with a wrong kernel: the report on stderr" "$tmp/err" "^c: 30x40x8"
if [ -w /dev/full ]; then
	expect "--run with a wrong kernel, stdout full" 4 env PATC_RUN_INJECT=wrong:q sh -c \
		'exec "$0" "$1" --run --threads=2 >/dev/full' "$patc" "$tmp/w.pat"
	has "--run with a wrong kernel, stdout full: said" "$tmp/err" "cannot write to standard output"
fi

# the 64th -I directory is searched like the first
incs=()
mkdir -p "$tmp/incs" && for i in $(seq 64); do mkdir -p "$tmp/incs/d$i"; incs+=(-I "$tmp/incs/d$i"); done
printf 'pattern mine() { split k -> k0, k1 : _, 2; }\n' >"$tmp/incs/d64/far.pat"
printf 'include "far.pat";\nop a: spmm(M = 8, K = 8, N = 4) { apply mine(); }\n' >"$tmp/incs/main.pat"
expect "the 64th -I directory" 0 "$patc" "$tmp/incs/main.pat" "${incs[@]}"
expect "a 65th -I" 2 "$patc" "$tmp/incs/main.pat" "${incs[@]}" -I "$tmp/incs"
# long lists parse in linear time: 400000 statements (5.6 MB; appending by walking each list took
# 8 s for 80000) and 200000 patterns (found through a hash table; 40000 took 4.8 s), each within a
# generous limit that the quadratic walks would run past
python3 -c 'import sys; open(sys.argv[1], "w").write("op o: spmm(M = 10, K = 6, N = 1) {\n" + "reorder k, m; " * 400000 + "\n}\n")' \
	"$tmp/many.pat"
expect "400000 statements" 1 timeout 60 "$patc" "$tmp/many.pat"
has "400000 statements: the limit said" "$tmp/err" "applies more than 1024 primitives"
python3 -c 'import sys; open(sys.argv[1], "w").write("".join("pattern p%d() { }\n" % i for i in range(200000)) +
	"op o: spmm(M = 10, K = 6, N = 1) { apply p199999(); }\n")' "$tmp/pats.pat"
expect "200000 patterns" 0 timeout 60 "$patc" "$tmp/pats.pat"

# safetensors headers the reference reader refuses: __metadata__ twice, a shape past 2^53 (its
# nearest double is 2^53 itself)
python3 - "$tmp" <<'EOF2'
import struct, sys
data = struct.pack("<4f", 1, 2, 3, 4)
for name, hdr in (("twometa", '{"__metadata__": {"a": "1"}, "__metadata__": {"b": "2"}, '
                   '"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}'),
                  ("huge", '{"w": {"dtype": "F32", "shape": [9007199254740993, 0], "data_offsets": [0, 0]}}')):
	h = hdr.encode()
	open("%s/%s.safetensors" % (sys.argv[1], name), "wb").write(struct.pack("<Q", len(h)) + h + (data if name != "huge" else b""))
EOF2
printf 'op a: spmm(M = 2, K = 2, N = 4) { weights = safetensors("twometa.safetensors", "w"); }\n' >"$tmp/twometa.pat"
expect "__metadata__ twice" 1 "$patc" "$tmp/twometa.pat"
has "__metadata__ twice: why" "$tmp/err" "__metadata__ appears twice in the header"
printf 'op a: spmm(M = 2, K = 2, N = 4) { weights = safetensors("huge.safetensors", "w"); }\n' >"$tmp/huge.pat"
expect "a shape of 2^53 + 1" 1 "$patc" "$tmp/huge.pat"
has "a shape of 2^53 + 1: why" "$tmp/err" "below 2^53"

# Big checkpoints (issue 42): a tensor is read by its header and its own bytes. A sparse 3 GiB
# safetensors file (no disk taken) whose header names a 16 KiB tensor and a 3 GiB one: binding
# the small one, naming a missing one (the list of names), and a sparse 3 GiB .npy with bytes
# past its data each stay under 200 MB of peak memory (ru_maxrss of the run); timeout: a hang guard.
python3 - "$tmp" <<'EOF2'
import json, os, struct, sys
small = 64 * 64 * 4
big = 786432 * 1024 * 4
h = json.dumps({"small": {"dtype": "F32", "shape": [64, 64], "data_offsets": [0, small]},
                "big": {"dtype": "F32", "shape": [786432, 1024], "data_offsets": [small, small + big]}}).encode()
p = "%s/bigfile.safetensors" % sys.argv[1]
with open(p, "wb") as f:
	f.write(struct.pack("<Q", len(h)) + h + struct.pack("<4096f", *[(i % 7) - 3 for i in range(4096)]))
os.truncate(p, 8 + len(h) + small + big)
hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (64, 64), }"
hdr += b" " * (63 - (10 + len(hdr)) % 64) + b"\n"
p = "%s/bigfile.npy" % sys.argv[1]
with open(p, "wb") as f:
	f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + b"\0" * small)
os.truncate(p, 3 << 30)
EOF2
peak_kb() { # command...: runs it, its exit status as its own; its peak memory (KiB) in $tmp/peak
	python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$tmp/peak" "$@"
}
under_200mb() { [ "$(cat "$tmp/peak")" -lt 200000 ] || { echo "  peak $(cat "$tmp/peak") KiB"; false; }; }
printf 'op a: spmm(M = 64, K = 64, N = 4) { weights = safetensors("bigfile.safetensors", "small"); }\n' >"$tmp/bigfile.pat"
expect "a 16 KiB tensor of a sparse 3 GiB file" 0 peak_kb timeout 60 "$patc" "$tmp/bigfile.pat"
holds "a 16 KiB tensor of a sparse 3 GiB file: under 200 MB" under_200mb
printf 'op a: spmm(M = 64, K = 64, N = 4) { weights = safetensors("bigfile.safetensors", "smal"); }\n' >"$tmp/bigmiss.pat"
expect "a missing tensor of a sparse 3 GiB file" 1 peak_kb timeout 60 "$patc" "$tmp/bigmiss.pat"
has "a missing tensor of a sparse 3 GiB file: the names listed" "$tmp/err" "no tensor 'smal' in the file (it holds 2: 'small', 'big')"
holds "a missing tensor of a sparse 3 GiB file: under 200 MB" under_200mb
printf 'op a: spmm(M = 64, K = 64, N = 4) { weights = npy("bigfile.npy"); }\n' >"$tmp/bignpy.pat"
expect "a sparse 3 GiB .npy with a 16 KiB array" 1 peak_kb timeout 60 "$patc" "$tmp/bignpy.pat"
has "a sparse 3 GiB .npy: why" "$tmp/err" "bytes after the data the shape describes"
holds "a sparse 3 GiB .npy: under 200 MB" under_200mb

# An output directory against SIGKILL and a second run at once (support/outfile.h; PATC_TEST_KILL_AT is
# its test hook): killed before each step of the set's end (1: links kept, 2: journal, 3-5: renames,
# 6: journal removed), the directory shows the old set whole until the journal, a journal after it;
# the next run into it (here one that fails at its link: it writes nothing of its own) leaves the old
# set whole (a kill before the journal) or the new one (after), and no temporary file or journal.
mkdir "$tmp/kp" "$tmp/kp/re"
printf 'op k: spmm(M = 8, K = 8, N = 1) { weights = random(seed = 3); perforate k keep 4; }\n' >"$tmp/kp/w.pat"
sed 's/seed = 3/seed = 7/' "$tmp/kp/w.pat" >"$tmp/kp/re/w.pat"
expect "kill hook: the old set" 0 "$patc" "$tmp/kp/w.pat" -o "$tmp/kold"
expect "kill hook: the new set" 0 "$patc" "$tmp/kp/re/w.pat" -o "$tmp/knew"
for n in 1 2 3 4 5 6; do
	rm -rf "$tmp/kd" && cp -a "$tmp/kold" "$tmp/kd"
	expect "killed before step $n of the set's end" 137 sh -c 'PATC_TEST_KILL_AT=$1 "$2" "$3" -o "$4"; exit $?' \
		sh $n "$patc" "$tmp/kp/re/w.pat" "$tmp/kd"
	if [ $n -le 2 ]; then
		expect "killed before step $n: the old set in place" 0 sh -c "cd '$tmp/kd' && cmp w.o ../kold/w.o &&
			cmp w.h ../kold/w.h && cmp w.safetensors ../kold/w.safetensors && ! test -e .patc-journal"
	else
		expect "killed before step $n: a journal says the set is not whole" 0 test -e "$tmp/kd/.patc-journal"
	fi
	expect "the run after a kill at step $n" 3 env CC=false "$patc" "$tmp/kp/w.pat" -o "$tmp/kd" --emit=so
	want=kold && [ $n -gt 2 ] && want=knew
	holds "killed before step $n, then a run: the $want set whole, nothing else" diff -r "$tmp/$want" "$tmp/kd"
done
# two runs into one directory at once: the first stopped between its renames, the second waits for its
# lock (saying so), then replaces its set whole; the set is never the two mixed
rm -rf "$tmp/kd" && cp -a "$tmp/knew" "$tmp/kd"
PATC_TEST_KILL_AT=4:stop "$patc" "$tmp/kp/re/w.pat" -o "$tmp/kd" 2>/dev/null &
first=$!
for _ in $(seq 300); do [ "$(awk '{print $3}' /proc/$first/stat 2>/dev/null)" = T ] && break; sleep 0.1; done
timeout 60 "$patc" "$tmp/kp/w.pat" -o "$tmp/kd" 2>"$tmp/second.err" &
second=$!
for _ in $(seq 300); do grep -qs "waiting for another patc run" "$tmp/second.err" && break; sleep 0.1; done
has "a second run into a directory in use: it waits" "$tmp/second.err" \
	"patc: waiting for another patc run writing into '.*kd' to finish"
expect "a second run into a directory in use: still waiting" 0 kill -0 $second
kill -CONT $first
wait $first
expect "a second run into a directory in use: the first done (exit $?)" 0 test $? -eq 0
wait $second
expect "a second run into a directory in use: then the second (exit $?)" 0 test $? -eq 0
holds "a second run into a directory in use: its set whole" diff -r "$tmp/kold" "$tmp/kd"

# Hostile bytes in sources (lexer and PatternIR reader): multi-MB runs of
# NULs and of other bytes, NULs in comments and strings, a binary include
# end in an answer, never a hang (timeout 20 is only a guard), with a
# bounded stderr ("too many errors, stopping"); a byte-order mark at the
# start is accepted.  (The small cases are goldens: errors/lexhard_*.)
python3 - "$tmp/lexhard" <<'EOF'
import os, sys
d = sys.argv[1]
os.makedirs(d)
N = 10 << 20
op = b'op a: spmm(M = 64, K = 64, N = 8);\n'
def w(name, data):
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)
w('nul_line_comment.pat', b'// ' + b'\0' * 100000 + b'\n' + op)
w('nul_block_comment.pat', b'/*' + b'\0' * N + b'*/\n' + op)
w('nul_string.pat', b'include "' + b'\0' * 100000 + b'";\n' + op)
w('nul_escapes.pat', b'include "' + b'\\\0' * 100000 + b'";\n' + op)
w('nul_10mb.pat', b'\0' * N)
w('nul_lines_10mb.pat', b'\0\n' * (N // 2))
w('ff_10mb.pat', b'\xff' * N)
w('digits_10mb.pat', b'9' * N)
w('bad_escapes.pat', b'include "' + b'\\q' * 150000 + b'";\n')
w('nul_10mb.pir', b'\0' * N)
w('binary.bin', bytes(range(256)) * (N // 256))
w('inc_binary.pat', b'include "binary.bin";\n' + op)
w('bom.pat', b'\xef\xbb\xbf' + op)
w('bom.pir', b'\xef\xbb\xbfpir a m=4 k=4 {\n  loop m 4 = m[4]*1\n  loop k 4 = k[4]*1\n}\n')
EOF
for f in nul_line_comment nul_block_comment bom; do
	expect "hostile bytes: $f.pat compiles" 0 timeout 20 "$patc" "$tmp/lexhard/$f.pat"
done
expect "hostile bytes: bom.pir reads" 0 timeout 20 "$patc" "$tmp/lexhard/bom.pir" --emit=pir
for f in nul_string nul_escapes nul_10mb nul_lines_10mb ff_10mb digits_10mb bad_escapes inc_binary; do
	expect "hostile bytes: $f.pat refused" 1 timeout 20 "$patc" "$tmp/lexhard/$f.pat"
	holds "hostile bytes: $f.pat's stderr bounded" test "$(wc -c <"$tmp/err")" -lt 65536
done
expect "hostile bytes: nul_string.pat" 1 timeout 20 "$patc" "$tmp/lexhard/nul_string.pat"
has "hostile bytes: a NUL in a string is an error at its column" "$tmp/err" "nul_string.pat:1:10: error: NUL byte"
expect "hostile bytes: inc_binary.pat" 1 timeout 20 "$patc" "$tmp/lexhard/inc_binary.pat"
has "hostile bytes: a binary include stops" "$tmp/err" "too many errors, stopping"
expect "hostile bytes: bad_escapes.pat" 1 timeout 20 "$patc" "$tmp/lexhard/bad_escapes.pat"
has "hostile bytes: 150,000 bad escapes stop" "$tmp/err" "too many errors, stopping"
expect "hostile bytes: nul_10mb.pir refused" 1 timeout 20 "$patc" "$tmp/lexhard/nul_10mb.pir"
if [ "$(id -u)" != 0 ]; then # (root reads any file)
	printf 'op a: spmm(M = 64, K = 64, N = 8);\n' >"$tmp/lexhard/locked.pat"
	chmod 000 "$tmp/lexhard/locked.pat"
	printf 'include "locked.pat";\n' >"$tmp/lexhard/inc_locked.pat"
	expect "an unreadable include" 1 "$patc" "$tmp/lexhard/inc_locked.pat"
	has "an unreadable include: its reason" "$tmp/err" "cannot read include file 'locked.pat'.*: Permission denied"
fi
rm -rf "$tmp/lexhard"

holds "nothing written into the working directory" test -z "$(ls -A "$tmp/cwd")"

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
