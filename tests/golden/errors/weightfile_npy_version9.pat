// weights file: an .npy file of unsupported version 9.0
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_version9.npy");
    perforate k keep 4;
}
