// weights file: an Inf in F32 safetensors weights (at [1, 6])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_inf_f32.safetensors", "w");
    perforate k keep 4;
}
