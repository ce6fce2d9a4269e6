// weights file: safetensors data_offsets with one number, not two
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_offsets_one.safetensors", "w");
    perforate k keep 4;
}
