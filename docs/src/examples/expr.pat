op a: spmm(M = 8, K = 8, N = 8) { perforate k keep 10 / 4; }
op b: spmm(M = 8, K = 8, N = 8) { perforate k keep 1024 * 1024 * 1024 * 1024 * 2; }
op c: spmm(M = 8, K = 8, N = 8) { perforate k keep foo; }
op d: spmm(M = 8, K = 8, N = 8) { perforate k keep _; }
