// weights file: safetensors weights of shape [8, 4] for an op with K = 8
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_wrong_k.safetensors", "w");
    perforate k keep 4;
}
