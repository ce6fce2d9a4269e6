// weights file: a NaN in the calibration activations (at [2, 1])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = random(seed = 1);
    calibration = safetensors("weights/calib_nan.safetensors", "x");
    importance = wanda;
    perforate k keep 4;
}
