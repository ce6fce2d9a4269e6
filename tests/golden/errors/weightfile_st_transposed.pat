// weights file: safetensors weights stored [K, M] = [16, 8] for an op with M = 8, K = 16
op a: spmm(M = 8, K = 16, N = 4) {
    weights = safetensors("weights/st_transposed.safetensors", "w");
    perforate k keep 4;
}
