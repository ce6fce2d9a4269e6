// semantic: two patterns with the same name
pattern rows(density) {
    perforate m keep density;
}
pattern rows(density) {
    perforate k keep density;
}
op a: spmm(M = 64, K = 64, N = 8) {
    apply rows(50%);
}
