// weights file: an empty safetensors tensor (shape [0, 8])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_empty.safetensors", "w");
    perforate k keep 4;
}
