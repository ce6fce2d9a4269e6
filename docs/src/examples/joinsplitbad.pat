op d: spmm(M = 8, K = 16, N = 8) { join m, k -> mk; split mk -> x, y : 6, 64 pad; }
op e: spmm(M = 6, K = 4, N = 8) { join m, k -> mk; split mk -> x, y : 4, 6; }
