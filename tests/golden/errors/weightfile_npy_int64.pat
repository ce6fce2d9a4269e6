// weights file: an integer '<i8' .npy file bound as weights
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_int64.npy");
    perforate k keep 4;
}
