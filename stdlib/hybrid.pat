// hybrid.pat - the multi-level pattern the Fractal paper introduces.
//
// hybrid(bm, bk, density, n, group): block-wise outside, N:M inside.  W is
// tiled into bm x bk blocks, each block row keeps `density` of its blocks,
// and inside every kept block each group of `group` weights along k keeps
// `n`.  Nest: M0 K0^c M1_bm K1 K2_group^n.  Total density is density * n /
// group.  Reproduces the hybrid block + vector pattern of Guan et al.,
// "Fractal: Joint Multi-Level Sparse Pattern Tuning of Accuracy and
// Performance for DNN Pruning" (ASPLOS 2024).  bk must be a multiple of group.
pattern hybrid(bm, bk, density, n = 2, group = 4) {
    split m -> m0, m1 : _, bm pad;
    split k -> k0, k1, k2 : _, bk / group, group pad;
    reorder m0, k0, m1, k1, k2;
    perforate k0 keep density;
    perforate k2 keep n;
}
