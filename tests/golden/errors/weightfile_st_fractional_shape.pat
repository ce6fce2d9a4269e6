// weights file: a safetensors shape holding a non-integer [8, 8.5]
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_fractional_shape.safetensors", "w");
    perforate k keep 4;
}
