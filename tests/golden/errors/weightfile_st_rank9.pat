// weights file: a safetensors tensor of rank 9 (above the 8 allowed)
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_rank9.safetensors", "w");
    perforate k keep 4;
}
