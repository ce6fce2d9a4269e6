// semantic: condense on an operand other than x
op a: spmm(M = 64, K = 64, N = 8) {
    perforate k keep 32;
    condense k on w;
}
