// weights file: two safetensors tensors whose data overlap ('w' [0, 256], 'v' [128, 256])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_overlap.safetensors", "w");
    perforate k keep 4;
}
