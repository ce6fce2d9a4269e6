// weights file: data_gap
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_data_gap.safetensors", "w");
    perforate k keep 4;
}
