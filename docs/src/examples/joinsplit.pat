op c: spmm(M = 8, K = 16, N = 8) {
    join m, k -> mk;                 // mk = m[8]*1 . k[16]*1
    split mk -> x, y, z : 4, 8, 4;   // y straddles m and k: m[2] . k[4]
}
