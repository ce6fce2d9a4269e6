// syntax: several errors in one file; recovery reports each of them
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0 k1 : 16, 4;
    perforate k1 2;
    reorder k1, , k0;
}
op b spmm(M = 64, K = 64, N = 8);
op c: spmm(M = 64, K = 64, N = 8) {
    join k0, k1 -> ;
}
