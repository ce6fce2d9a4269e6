// weights file: a safetensors tensor of unknown dtype 'F7'
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_unknown_dtype.safetensors", "w");
    perforate k keep 4;
}
