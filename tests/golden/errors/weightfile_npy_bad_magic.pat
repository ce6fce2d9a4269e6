// weights file: an .npy file with a bad magic string
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_bad_magic.npy");
    perforate k keep 4;
}
