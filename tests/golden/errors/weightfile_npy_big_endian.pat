// weights file: a big-endian '>f4' .npy file
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_big_endian.npy");
    perforate k keep 4;
}
