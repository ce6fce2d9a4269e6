// weights file: a safetensors __metadata__ value that is a number, not a string
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_metadata_not_string.safetensors", "w");
    perforate k keep 4;
}
