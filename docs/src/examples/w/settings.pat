// The other settings: calibration, importance and rank.
include "all.pat";

// layout nk: the activations are PyTorch's [tokens, in] = [16, 8]
op proj: spmm(M = 8, K = 8, N = 16, layout = nk) {
    weights = npy("w.npy");
    calibration = npy("calib.npy");
    importance = wanda;
    apply nm(2, 4);
}

// a score tensor of your own, [out, in] like the weight
op scored: spmm(M = 8, K = 8, N = 16) {
    weights = npy("w.npy");
    importance = npy("scores.npy");
    apply nm(2, 4);
}

// seeded activations (N = 16 tokens), squared weights, the paper's ranking
op synth: spmm(M = 8, K = 16, N = 16) {
    weights = random(seed = 3, kind = cols);
    calibration = random(seed = 4);
    importance = l2;
    rank = total;
    apply hybrid(4, 8, 50%);
}
