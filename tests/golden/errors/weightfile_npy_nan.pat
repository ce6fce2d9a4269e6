// weights file: a NaN in .npy weights (at [5, 2])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_nan.npy");
    perforate k keep 4;
}
