// semantic: too many positional arguments to a pattern
include "nm.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply nm(2, 4, 8);
}
