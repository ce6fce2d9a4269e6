// channel (output rows) and channel_in (input columns).
include "channel.pat";
op out: spmm(M = 130, K = 576, N = 784) { apply channel(50%); }
op in: spmm(M = 130, K = 576, N = 784) { apply channel_in(144); }
