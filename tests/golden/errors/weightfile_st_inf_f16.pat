// weights file: a -Inf in F16 safetensors weights (at [7, 0])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_inf_f16.safetensors", "w");
    perforate k keep 4;
}
