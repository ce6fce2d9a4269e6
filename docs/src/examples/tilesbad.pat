pattern tiles(bm, bk = bm * 2, frac = 25%) {
    split m -> m0, m1 : _, bm;
    split k -> k0, k1 : _, bk;
    reorder m0, k0, m1, k1;
    perforate k0 keep frac;
}
op e: spmm(M = 64, K = 128, N = 8) { apply tile(16); }
op f: spmm(M = 64, K = 128, N = 8) { apply tiles(bm = 8, 16); }
op g: spmm(M = 64, K = 128, N = 8) { apply tiles(8, 25%); }
