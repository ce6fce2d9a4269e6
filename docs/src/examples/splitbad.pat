op a: spmm(M = 100, K = 64, N = 8) { split m -> m0, m1 : _, 32; }
op b: spmm(M = 100, K = 64, N = 8) { split m -> m0, m1 : 4, 32; }
op c: spmm(M = 100, K = 64, N = 8) { split m -> m0, m1 : 4, 32 pad 20; }
op d: spmm(M = 100, K = 64, N = 8) { split m -> m0, m1 : _, 25; split m1 -> m2, m3 : _, 2 pad; }
op e: spmm(M = 100, K = 64, N = 8) { split m -> m0, m1 : _, 32 pad 60; }
