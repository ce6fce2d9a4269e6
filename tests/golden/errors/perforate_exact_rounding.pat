// Percentages round exactly, halves up: 9.2% of 375 = 34.5 -> 35, 64.35% of 1000 = 643.5 -> 644.
op a: spmm(M = 8, K = 375, N = 1) { perforate k keep 9.2%; }
op b: spmm(M = 8, K = 1000, N = 1) { perforate k keep 64.35%; }
op c: spmm(M = 8, K = 1000, N = 1) { perforate k keep 0.000001%; }
