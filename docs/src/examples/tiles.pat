pattern tiles(bm, bk = bm * 2, frac = 25%) {
    split m -> m0, m1 : _, bm;
    split k -> k0, k1 : _, bk;
    reorder m0, k0, m1, k1;
    perforate k0 keep frac;
}
op a: spmm(M = 64, K = 128, N = 8) { apply tiles(16); }                      // bk = 32, frac = 25%
op b: spmm(M = 64, K = 128, N = 8) { apply tiles(16, frac = 2); }
op c: spmm(M = 64, K = 128, N = 8) { apply tiles(bk = 32, bm = 8, frac = 50%); }
op d: spmm(M = 64, K = 128, N = 8) { apply tiles(-(-16), (4 + 4) * 128 / 32); }
