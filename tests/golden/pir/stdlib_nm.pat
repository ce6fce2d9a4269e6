// nm(n, group): 2:4 by default, 1:8 named, on a K that 8 does not divide.
include "nm.pat";
op two_four: spmm(M = 96, K = 576, N = 3136) { apply nm(); }
op one_eight: spmm(M = 64, K = 100, N = 16, layout = nk) { apply nm(group = 8, n = 1); }
