// row_balanced and unstructured on an odd shape.
include "elementwise.pat";
op rb: spmm(M = 77, K = 333, N = 10) { apply row_balanced(25%); }
op un: spmm(M = 77, K = 333, N = 10) { apply unstructured(6.25%); }
