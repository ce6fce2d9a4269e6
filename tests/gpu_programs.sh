# SPDX-License-Identifier: MIT
# gpu_programs.sh - sourced by tests/ptx.sh and tests/gpu/run.sh: the stdlib
# patterns the GPU legality rules allow (tile_h perforates m inside a k loop
# and unstructured joins m and k: both are refused), and one .pat program
# per shape and layout with one op per pattern, and one per shape with the
# 16-bit ops (DIR/sI_tc.pat).
gpu_patterns=("block(8, 8, 25%)" "block(32, 32, 25%)" "nm(2, 4)" "nm(1, 4)" "nm(1, 8)" "tile_v(32, 25%)"
	"channel(50%)" "channel_in(25%)" "row_balanced(25%)" "hybrid(32, 32, 50%, 2, 4)")

# The tensor-core ops (dtype f16 or bf16, kept tiles dense 16 x 16 tiles;
# pattern|dtype|layout), the sparse tensor-core ones (2:4 along k: mma.sp)
# and a 16-bit op that stays on CUDA cores (1:4 keeps no dense tiles and is
# not 2:4).
gpu_tc_patterns=("block(16, 16, 50%)|bf16|kn" "block(32, 32, 25%)|bf16|kn" "block(32, 32, 25%)|f16|kn"
	"block(64, 64, 25%)|bf16|kn" "block(32, 32, 25%)|bf16|nk" "block(16, 16, 50%)|f16|nk" "nm(2, 4)|bf16|kn"
	"nm(2, 4)|f16|nk" "hybrid(32, 32, 50%, 2, 4)|bf16|kn" "nm(1, 4)|bf16|kn" "block(64, 64, 50%)|f16|nk")

# gpu_programs DIR SEEDS SHAPE...: writes DIR/sI_kn.pat and DIR/sI_nk.pat for
# the I-th "M K N" shape; SEEDS=fixed seeds the weights by op, SEEDS=fresh
# draws them from $RANDOM.
gpu_programs() {
	local dir=$1 seeds=$2
	shift 2
	local s=0 M K N layout p seed f pat dtype
	for shape in "$@"; do
		read -r M K N <<<"$shape"
		for layout in kn nk; do
			f=$dir/s${s}_$layout.pat
			echo 'include "all.pat";' >"$f"
			for p in "${!gpu_patterns[@]}"; do
				seed=$p
				[ "$seeds" = fresh ] && seed=$RANDOM
				echo "op p$p: spmm(M = $M, K = $K, N = $N, layout = $layout) { weights = random(seed = $seed); apply ${gpu_patterns[$p]}; }" >>"$f"
			done
		done
		f=$dir/s${s}_tc.pat
		echo 'include "all.pat";' >"$f"
		for p in "${!gpu_tc_patterns[@]}"; do
			seed=$p
			[ "$seeds" = fresh ] && seed=$RANDOM
			IFS='|' read -r pat dtype layout <<<"${gpu_tc_patterns[$p]}"
			echo "op t$p: spmm(M = $M, K = $K, N = $N, dtype = $dtype, layout = $layout) { weights = random(seed = $seed); apply $pat; }" >>"$f"
		done
		s=$((s + 1))
	done
}
