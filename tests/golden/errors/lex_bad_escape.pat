// lexical: an unknown escape sequence in a string
op a: spmm(M = 64, K = 64, N = 8) {
    weights = npy("w\q.npy");
}
