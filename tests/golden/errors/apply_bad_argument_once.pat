// A bad argument is reported once, not again as missing.
pattern t(bm) { split m -> a, b : _, bm; }
op c: spmm(M = 8, K = 8, N = 1) { apply t(10 / 4); }
