// semantic: a pattern that applies itself through another pattern
pattern outer(d) {
    apply inner(d);
}
pattern inner(d) {
    perforate k keep d;
    apply outer(d);
}
op a: spmm(M = 64, K = 64, N = 8) {
    apply outer(50%);
}
