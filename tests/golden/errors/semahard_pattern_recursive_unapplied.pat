// semantic: a pattern that applies itself, directly or through others, is an error
// even where no op applies it; one that an op applies is reported once, with the op's notes
pattern itself() {
    split m -> m0, m1 : 2, _;
    apply itself();
}
pattern ping(d) {
    apply pong(d);
}
pattern pong(d) {
    perforate k keep d;
    apply ping(d);
}
pattern outer() {
    apply inner();
}
pattern inner() {
    apply outer();
}
pattern fine() {
    split k -> k0, k1 : 4, _;
}
op a: spmm(M = 64, K = 64, N = 8) {
    apply fine();
    apply outer();
}
