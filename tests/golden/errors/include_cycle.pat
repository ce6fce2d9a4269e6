// include: a cycle (inc/cycle_a.pat includes inc/cycle_b.pat, which includes cycle_a.pat)
include "inc/cycle_a.pat";
op a: spmm(M = 64, K = 64, N = 8);
