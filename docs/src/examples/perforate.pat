op a: spmm(M = 64, K = 10, N = 8) { perforate k keep 3; }
op b: spmm(M = 64, K = 10, N = 8) { perforate k keep 25%; }   // 2.5 rounds up to 3
op c: spmm(M = 64, K = 10, N = 8) { perforate k keep 100%; }  // stays dense
