op a: spmm(M = 100, K = 64, N = 8) {
    split m -> m0, m1 : _, 32 pad;   // m0 is the most significant m loop
    reorder k, m0;                   // ... even when nested inside k
    split m0 -> a, b : _, 3 pad;     // so it may be padded again: 4 -> 6
}
