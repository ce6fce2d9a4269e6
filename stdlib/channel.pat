// channel.pat - channel-wise (structured) pruning.
//
// channel(density): whole output channels (rows of W) are kept or pruned:
// the outermost m loop is perforated.  Nest: M^c K.  Reproduces filter
// pruning (Li et al., "Pruning Filters for Efficient ConvNets", ICLR 2017)
// and channel pruning (He et al., "Channel Pruning for Accelerating Very
// Deep Neural Networks", ICCV 2017) once a convolution enters as im2col.
pattern channel(density) {
    perforate m keep density;
}

// channel_in(density): whole input channels (columns of W) are kept or
// pruned.  Nest: K^c M.
pattern channel_in(density) {
    reorder k, m;
    perforate k keep density;
}
