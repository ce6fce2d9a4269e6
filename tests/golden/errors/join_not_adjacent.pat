// semantic: join of loops that are not adjacent in the nest
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1, k2 : 4, 4, 4;
    join k0, k2 -> k02;
}
