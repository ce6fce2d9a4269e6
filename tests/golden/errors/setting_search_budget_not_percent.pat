// a search setting that is not a percentage
op w: spmm(M = 64, K = 64, N = 8) {
    weights = random(1);
    search = search(budget = 5);
}
