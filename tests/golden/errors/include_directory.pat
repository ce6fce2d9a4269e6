// include: an include path that names a directory, not a file
include "inc";
op a: spmm(M = 64, K = 64, N = 8);
