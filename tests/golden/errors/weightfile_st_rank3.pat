// weights file: a 3-D safetensors tensor [2, 8, 4] bound as weights
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_rank3.safetensors", "w");
    perforate k keep 4;
}
