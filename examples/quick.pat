include "nm.pat";

op proj: spmm(M = 100, K = 30, N = 64) {
    apply nm(2, 4);
}
