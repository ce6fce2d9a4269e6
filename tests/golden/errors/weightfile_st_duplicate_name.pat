// weights file: a safetensors header naming tensor 'w' twice
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_duplicate_name.safetensors", "w");
    perforate k keep 4;
}
