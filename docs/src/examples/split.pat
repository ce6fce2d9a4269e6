op s: spmm(M = 10, K = 24, N = 4) {
    split m -> m0, m1 : _, 4 pad;     // 10 rows -> 3 x 4 = 12 (2 zero rows)
    split k -> k0, k1, k2 : _, 3, 2;  // 24 = 4 x 3 x 2, no padding needed
}
