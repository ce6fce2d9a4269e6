// a sparsity range whose top is not above its bottom
op w: spmm(M = 64, K = 64, N = 8) {
    weights = random(1);
    search = search(sparsity = 80%, max_sparsity = 70%);
}
