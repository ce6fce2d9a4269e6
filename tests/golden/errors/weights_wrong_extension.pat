// weights: a safetensors source given a file of another kind
op a: spmm(M = 64, K = 64, N = 8) {
    weights = safetensors("model.bin", "layer.weight");
}
