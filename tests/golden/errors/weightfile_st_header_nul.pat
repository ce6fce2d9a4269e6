// weights file: a safetensors header holding a NUL byte
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_header_nul.safetensors", "w");
    perforate k keep 4;
}
