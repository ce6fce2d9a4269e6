// weights file: calibration activations [4, 16] for a layout kn op with K = 8 (needs [K, tokens])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = random(seed = 1);
    calibration = npy("weights/calib_wrong_k_kn.npy");
    importance = wanda;
    perforate k keep 4;
}
