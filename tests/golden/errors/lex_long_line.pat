// lexical: a name of 154 characters on a line of 400: the name shown by its
// first 64 characters, the line by a window around the error's column
op a: spmm(M = 64, K = 64, N = 8) {
    split m -> m0, m1 : 8, 8; reorder m0, k, m1, n; split k -> k0, k1 : 8, 8; reorder m0, k0, m1, k1, n; reorder m0, k0, m1, k1, n; reorder m0, k0, m1, k1, n; reorder m0, k0, m1, k1, n; reorder m0, k0, m1, k1, n; reorder m0, k0, m1, k1, n; split n -> very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_very_long, n1 : 2, 4;
}
