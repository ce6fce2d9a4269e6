// lexical: a string literal with no closing quote before the end of the line
include "block.pat;
op a: spmm(M = 64, K = 64, N = 8);
