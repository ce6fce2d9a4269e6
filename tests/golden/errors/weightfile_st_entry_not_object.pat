// weights file: a safetensors header entry that is an array, not an object
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_entry_not_object.safetensors", "w");
    perforate k keep 4;
}
