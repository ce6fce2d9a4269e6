// weights: an op binding its weights twice
op a: spmm(M = 64, K = 64, N = 8) {
    weights = random(seed = 1);
    weights = random(seed = 2);
}
