// semantic: condense of a loop that is not perforated
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 16, 4;
    condense k0 on x;
}
