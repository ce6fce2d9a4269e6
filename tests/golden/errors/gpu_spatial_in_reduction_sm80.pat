// args: --target=sm_80
// target: a hand-written K0 M^c K1 nest, illegal on sm_80
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 4, 16;
    reorder k0, m, k1;
    perforate m keep 16;
}
