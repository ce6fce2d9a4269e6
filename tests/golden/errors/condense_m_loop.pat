// semantic: condense of a (perforated) m loop
op a: spmm(M = 64, K = 64, N = 8) {
    perforate m keep 32;
    condense m on x;
}
