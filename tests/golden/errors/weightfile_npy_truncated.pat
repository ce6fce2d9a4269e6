// weights file: an .npy file with 100 of the 256 bytes of data its shape needs
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_truncated.npy");
    perforate k keep 4;
}
