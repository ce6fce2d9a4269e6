// weights file: an .npy file with 4 bytes after the data its shape describes
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_trailing.npy");
    perforate k keep 4;
}
