// include: a file that is not a program stops after 100 errors ("too many errors")
include "inc/lexhard_binary.bin";
op a: spmm(M = 64, K = 64, N = 8);
