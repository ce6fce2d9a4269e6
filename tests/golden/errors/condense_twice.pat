// semantic: condensing a loop that is already condensed
op a: spmm(M = 64, K = 64, N = 8) {
    perforate k keep 32;
    condense k on x;
    condense k on x;
}
