// The same weights and pattern, ranked both ways.
include "hybrid.pat";

op t: spmm(M = 16, K = 16, N = 8) {
    weights = random(seed = 7);
    rank = total;
    apply hybrid(8, 8, 50%);
}

op l: spmm(M = 16, K = 16, N = 8) {
    weights = random(seed = 7);           // rank: the command line's (lookahead)
    apply hybrid(8, 8, 50%);
}
