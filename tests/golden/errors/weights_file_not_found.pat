// weights: a weight file that does not exist
op a: spmm(M = 64, K = 64, N = 8) {
    weights = npy("no_such_weights.npy");
}
