// semantic: a pattern with two parameters of the same name
pattern blocks(b, density, b) {
    split k -> k0, k1 : _, b;
    perforate k0 keep density;
}
op a: spmm(M = 64, K = 64, N = 8);
