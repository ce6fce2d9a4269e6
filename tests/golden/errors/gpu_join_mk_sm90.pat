// args: --target=sm_90
// target: a join of m and k, illegal on sm_90
op a: spmm(M = 64, K = 64, N = 8) {
    join m, k -> mk;
    perforate mk keep 50%;
}
