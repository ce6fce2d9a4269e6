// weights file: an .npy header without 'shape'
op a: spmm(M = 8, K = 8, N = 4) {
    weights = npy("weights/npy_no_shape.npy");
    perforate k keep 4;
}
