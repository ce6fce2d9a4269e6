// A default that names a parameter declared after its own.
pattern q(a = b, b = 2) { split k -> k0, k1 : a, _; }
op o: spmm(M = 10, K = 8, N = 1) { apply q(); }
