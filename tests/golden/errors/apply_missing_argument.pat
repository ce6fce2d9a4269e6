// semantic: a pattern parameter without default given no argument
include "block.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply block(8, 8);
}
