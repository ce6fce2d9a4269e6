include "all.pat";
op ok1: spmm(M = 768, K = 768, N = 512) { apply tile_v(32, 25%); }
op bad1: spmm(M = 768, K = 768, N = 512) { apply tile_h(32, 25%); }
op bad2: spmm(M = 768, K = 768, N = 512) { apply unstructured(25%); }
