// Paddable and unpaddable hints: k0 is outermost on k, k1 is not.
op a: spmm(M = 64, K = 64, N = 1) { split k -> k0, k1 : 8, 8; split k0 -> a, b : 3, _; }
op b: spmm(M = 64, K = 64, N = 1) { split k -> k0, k1 : 8, 8; split k1 -> a, b : 3, _; }
