// weights file: an Inf in BF16 safetensors weights (at [5, 5])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_inf_bf16.safetensors", "w");
    perforate k keep 4;
}
