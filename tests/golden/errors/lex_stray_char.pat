// lexical: a stray character '$' in an op body
op a: spmm(M = 64, K = 64, N = 8) {
    perforate k keep $ 8;
}
