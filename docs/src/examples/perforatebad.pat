op a: spmm(M = 64, K = 10, N = 8) { perforate k keep 11; }
op b: spmm(M = 64, K = 10, N = 8) { perforate k keep 1%; }
op c: spmm(M = 64, K = 10, N = 8) { perforate k keep 3; perforate k keep 2; }
