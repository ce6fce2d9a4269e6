// Bare CR characters start no line: the line is shown with each as a space.
op o: spmm(M = 10, K = 6, N = 1) {  perforate q keep 1;}
