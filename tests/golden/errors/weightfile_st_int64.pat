// weights file: an integer (I64) safetensors tensor bound as weights
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_int64.safetensors", "w");
    perforate k keep 4;
}
