// search settings without weights
op w: spmm(M = 64, K = 64, N = 8) {
    search = search(topk = 4);
}
