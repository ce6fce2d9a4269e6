// weights file: safetensors data_offsets [256, 0] ending before they begin
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_offsets_reversed.safetensors", "w");
    perforate k keep 4;
}
