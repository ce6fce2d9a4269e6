// lexical: a byte-order mark anywhere but at the start is an error that names it
op a: spmm(M = 64, K = 64, N = 8) {﻿ perforate k keep 2; }
