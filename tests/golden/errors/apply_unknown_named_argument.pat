// semantic: a named argument that the pattern has no parameter for
include "nm.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply nm(n = 2, size = 4);
}
