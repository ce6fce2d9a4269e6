// lexical: a number running into letters (12ab)
op a: spmm(M = 64, K = 64, N = 8) {
    perforate k keep 12ab;
}
