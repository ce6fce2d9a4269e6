op a: spmm(M = 8, K = 8, N = 8) { weights = safetensors("missing.safetensors", "w"); }
op b: spmm(M = 8, K = 8, N = 8) { weights = npy("w.safetensors"); }
op c: spmm(M = 8, K = 8, N = 8) { weights = random(1); weights = random(2); }
