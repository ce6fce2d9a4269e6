// weights file: a NaN in F32 safetensors weights (at [3, 4])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_nan_f32.safetensors", "w");
    perforate k keep 4;
}
