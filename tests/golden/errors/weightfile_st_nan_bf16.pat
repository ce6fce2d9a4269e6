// weights file: a NaN in BF16 safetensors weights (at [6, 2])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_nan_bf16.safetensors", "w");
    perforate k keep 4;
}
