// weights: a weights binding inside a pattern
pattern seeded(density) {
    weights = random(seed = 7);
    perforate k keep density;
}
op a: spmm(M = 64, K = 64, N = 8) {
    apply seeded(50%);
}
