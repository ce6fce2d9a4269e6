op a: spmm(M = 64, K = 64, N = 8) { split k -> k0, k1, k2 : 4, 4, 4; join k2, k1 -> x; }
op b: spmm(M = 64, K = 64, N = 8) { split k -> k0, k1, k2 : 4, 4, 4; join k0, k2 -> x; }
op c: spmm(M = 64, K = 64, N = 8) { perforate k keep 8; join m, k -> x; }
