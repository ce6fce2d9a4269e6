// semantic: applying an unknown pattern, with a did-you-mean note
include "block.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply blok(8, 8, 25%);
}
