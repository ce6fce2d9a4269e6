// weights: an unknown weight source
op a: spmm(M = 64, K = 64, N = 8) {
    weights = pytorch("w.pt");
}
