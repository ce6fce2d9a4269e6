// Broken item headers: each is reported once, their bodies are skipped.
pattern tiles(bm, keep = 25%) { split m -> m0, m1 : _, bm; reorder m0, k; }
op d: spmm(M = 8 K = 8) { split m -> a, b : 2, 4; perforate a keep 1; }
op e: spmm(M = 8, K = 8, N = 1) { perforate m keep 3 }
