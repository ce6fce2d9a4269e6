// an importance name that does not exist
op a: spmm(M = 8, K = 8, N = 4) {
    weights = random(seed = 1);
    importance = movement;
}
