// lexical: an identifier longer than 31 characters
op a: spmm(M = 64, K = 64, N = 8) {
    split m -> this_loop_name_is_far_too_long_to_use, m1 : 8, 8;
}
