// lexical: a fractional number without '%'
op a: spmm(M = 64, K = 64, N = 8) {
    perforate k keep 12.5;
}
