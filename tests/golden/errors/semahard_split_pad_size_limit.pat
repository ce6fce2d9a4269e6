// split: a pad that would take the axis past 2^31 is refused for the size limit,
// not for divisibility, and no hint suggests such a pad
op a: spmm(M = 2147483647, K = 64, N = 8) {
    split m -> m0, m1 : _, 1000 pad 5;
}
op b: spmm(M = 2147483647, K = 64, N = 8) {
    split m -> m0, m1 : _, 1000 pad;
}
op c: spmm(M = 2147483647, K = 64, N = 8) {
    split m -> m0, m1 : _, 1000;
}
op d: spmm(M = 64, K = 64, N = 8) {
    split m -> m0, m1 : _, 2 pad 1099511627776;
}
op e: spmm(M = 1073741824, K = 64, N = 8) {
    split m -> m0, m1 : 2, _;
    split m0 -> ma, mb : _, 4 pad 3;
}
op f: spmm(M = 2147483647, K = 64, N = 8) {
    split m -> m0, m1 : 1000, 2147484;
}
op g: spmm(M = 65536, K = 65536, N = 8) {
    join m, k -> mk;
    split mk -> a, b : _, 2 pad 1099511627776;
}
