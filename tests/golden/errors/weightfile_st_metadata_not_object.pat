// weights file: a safetensors __metadata__ that is a string, not an object
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_metadata_not_object.safetensors", "w");
    perforate k keep 4;
}
