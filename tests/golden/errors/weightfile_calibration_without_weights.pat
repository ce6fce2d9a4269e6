// calibration set on an op without weights
op a: spmm(M = 8, K = 8, N = 4) {
    calibration = npy("weights/npy_nan.npy");
    perforate k keep 4;
}
