// include: a file that is not found in any search directory
include "no_such_file.pat";
op a: spmm(M = 64, K = 64, N = 8);
