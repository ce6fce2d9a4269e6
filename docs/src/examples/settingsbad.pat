op a: spmm(M = 8, K = 8, N = 4) {
    importance = l2;                      // nothing to score
    perforate k keep 4;
}

op b: spmm(M = 8, K = 8, N = 4) {
    weights = random(seed = 1, kind = stripes);
}

op c: spmm(M = 8, K = 8, N = 4) {
    weights = random(1);
    importance = wanda;                   // needs calibration
    rank = best;
    sparsity = 50%;
}
