// rank set on an op that has no weights to prune
op a: spmm(M = 8, K = 8, N = 4) {
    rank = total;
    perforate k keep 4;
}
