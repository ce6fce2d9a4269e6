// K = 10: 2:4 pads k to 12; the last group of every row has 2 real weights.
include "nm.pat";

op p: spmm(M = 4, K = 10, N = 4) {
    weights = random(seed = 1);
    apply nm(2, 4);
}
