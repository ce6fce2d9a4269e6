// syntax: a statement that starts with something that is not a statement keyword
op a: spmm(M = 64, K = 64, N = 8) {
    prune k keep 2;
}
