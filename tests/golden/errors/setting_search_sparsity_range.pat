// search settings outside their range
op w: spmm(M = 64, K = 64, N = 8) {
    weights = random(1);
    search = search(sparsity = 100%);
}
