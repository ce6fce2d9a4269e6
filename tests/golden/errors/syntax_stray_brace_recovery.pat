// A stray brace inside a statement does not derail the recovery of later items.
op a: spmm(M = 64, K = 64, N = 4) { split m -> a { b : 2, 2; }
op b: spmm(M = 64 K = 64, N = 4);
op c: spmm(M = 64, K = 64, N = 4) { perforate m keep 2 }
