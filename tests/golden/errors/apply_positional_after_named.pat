// semantic: a positional argument after a named one
include "nm.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply nm(n = 2, 4);
}
