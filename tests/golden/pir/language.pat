// Language features: named and default arguments, defaults that use earlier
// parameters, expressions, patterns applying patterns, several ops.
pattern tiles(t, cols = t / 2, keep_cols = cols - 2 * 2) {
    split m -> m0, m1 : _, t pad;
    split k -> k0, k1 : _, cols pad;
    reorder m0, k0, m1, k1;
    perforate k1 keep keep_cols;
}
pattern outer(t) {
    apply tiles(t);
    perforate k0 keep 50%;
    condense k1 on x;
}
op a: spmm(M = 100, K = 90, N = 7) { apply outer(16); }
op b: spmm(100, 90, 7, bf16, nk) { apply tiles(t = 20, keep_cols = (3 + 1) * 2); }
op dense: spmm(M = 5, K = 5, N = 5);
