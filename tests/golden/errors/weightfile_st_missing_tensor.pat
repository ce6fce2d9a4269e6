// weights file: asking for tensor 'w' of a safetensors file that holds other names
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_missing_tensor.safetensors", "w");
    perforate k keep 4;
}
