// semantic: an integer division that is not exact
include "hybrid.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply hybrid(8, 10, 50%, group = 4);
}
