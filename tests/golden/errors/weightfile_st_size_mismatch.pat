// weights file: a safetensors F32 [8, 8] tensor over 128 bytes (dtype and shape disagree with the size)
op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("weights/st_size_mismatch.safetensors", "w");
    perforate k keep 4;
}
