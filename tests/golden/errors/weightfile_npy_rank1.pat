// weights file: a 1-D .npy array (64,) bound as weights
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_rank1.npy");
    perforate k keep 4;
}
