op q: spmm(768, 768, 512, f16, nk);     // positional: M, K, N, dtype, layout
op r: spmm(M = 64, K = 576, N = 3136);  // dtype = f32, layout = kn
