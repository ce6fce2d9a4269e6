// weights file: a safetensors header length (4096) past the end of the file
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_header_past_end.safetensors", "w");
    perforate k keep 4;
}
