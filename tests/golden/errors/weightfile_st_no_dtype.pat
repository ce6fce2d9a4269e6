// weights file: a safetensors header entry without 'dtype'
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_no_dtype.safetensors", "w");
    perforate k keep 4;
}
