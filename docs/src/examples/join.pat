op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1, k2 : 4, 4, 4;
    join k1, k2 -> k12;         // contiguous: one component k[16]*1
}
op b: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1, k2 : 4, 4, 4;
    reorder k2, k1;             // k0 k2 k1
    join k0, k2 -> x;           // not contiguous: two components
}
op c: spmm(M = 64, K = 64, N = 8) {
    join m, k -> mk;            // element-wise index space
}
