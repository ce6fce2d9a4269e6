// lexical: a block comment that is never closed
op a: spmm(M = 64, K = 64, N = 8);
/* this comment
   runs to the end of the file
op b: spmm(M = 64, K = 64, N = 8);
