// weights file: a NaN in F16 safetensors weights (at [0, 1])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_nan_f16.safetensors", "w");
    perforate k keep 4;
}
