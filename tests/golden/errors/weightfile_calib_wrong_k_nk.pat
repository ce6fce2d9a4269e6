// weights file: calibration activations [16, 4] for a layout nk op with K = 8 (needs [tokens, K])
op a: spmm(M = 8, K = 8, N = 4, layout = nk) {
    weights = random(seed = 1);
    calibration = safetensors("weights/calib_wrong_k_nk.safetensors", "x");
    importance = wanda;
    perforate k keep 4;
}
