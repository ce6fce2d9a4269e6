// passes: percentages of joined loops of up to 2^62 iterations are counted exactly
// (a 64-bit product overflowed: 50% "rounded to" 7.05%, 6.123456% was refused as keeping none)
op a: spmm(M = 2147483647, K = 2147483647, N = 8) {
    join m, k -> mk;
    perforate mk keep 50%;
}
op b: spmm(M = 2147483647, K = 10000, N = 8) {
    join m, k -> mk;
    perforate mk keep 6.123456%;
}
op c: spmm(M = 2147483647, K = 2147483647, N = 8) {
    join m, k -> mk;
    perforate mk keep 0.000001%;
}
op d: spmm(M = 8, K = 1000, N = 8) {
    join m, k -> mk;
    perforate mk keep 0.000001%;
}
