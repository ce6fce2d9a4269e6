// weights file: an .npy header length past the end of the file
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_header_past_end.npy");
    perforate k keep 4;
}
