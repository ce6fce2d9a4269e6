// weights file: a safetensors shape holding a string ["8", 8]
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_string_shape.safetensors", "w");
    perforate k keep 4;
}
