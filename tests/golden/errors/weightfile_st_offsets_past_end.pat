// weights file: safetensors data_offsets [0, 512] past a 256-byte data section
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_offsets_past_end.safetensors", "w");
    perforate k keep 4;
}
