// weights file: a float64 '<f8' .npy file (NumPy's default dtype)
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_float64.npy");
    perforate k keep 4;
}
