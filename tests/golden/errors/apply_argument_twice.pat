// semantic: the same argument given positionally and by name
include "nm.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply nm(2, n = 1);
}
