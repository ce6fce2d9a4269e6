op a: spmm(M = 8, K = 8, N = 8) { weights = safetensors("layer.safetensors", "encoder.0.weight"); }
op b: spmm(M = 8, K = 8, N = 8) { weights = npy(file = "w.npy"); }
op c: spmm(M = 8, K = 8, N = 8) { weights = random(); }
