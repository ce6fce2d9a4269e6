// A broken header whose body is never closed: the open brace is named.
op b: spmm(M = 64 K = 64, N = 4) {
 split m -> a, b : 2, 32;
