// an unknown search parameter and a bare value
op w: spmm(M = 64, K = 64, N = 8) {
    weights = random(1);
    search = search(speed = 2);
}
op v: spmm(M = 64, K = 64, N = 8) {
    weights = random(1);
    search = fast;
}
