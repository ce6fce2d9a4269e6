// weights file: a safetensors header with more text after its JSON object
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_header_trailing.safetensors", "w");
    perforate k keep 4;
}
