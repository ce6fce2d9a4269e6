// weights file: a safetensors header that is not JSON (an unquoted key)
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_header_not_json.safetensors", "w");
    perforate k keep 4;
}
