// semantic: a pattern body using a name that is not one of its parameters
pattern tiles(rows) {
    split m -> m0, m1 : _, cols;
}
op a: spmm(M = 64, K = 64, N = 8) {
    apply tiles(8);
}
