op a: spmm(M = 64, K = 64, N = 8) { perforate q keep 2; } // a byte-order mark at the start is skipped: columns as without it
