// weights file: an F64 weight of 1e300 (at [2, 3]), finite but beyond the f32 range
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_f64_overflow.safetensors", "w");
    perforate k keep 4;
}
