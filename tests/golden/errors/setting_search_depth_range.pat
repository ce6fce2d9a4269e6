// max_depth beyond 3
op w: spmm(M = 64, K = 64, N = 8) {
    weights = random(1);
    search = search(max_depth = 4);
}
