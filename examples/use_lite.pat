// use_lite.pat - the search on real weights: two 1536 x 512 matrices of the
// Universal Sentence Encoder lite model (`make fetch-weights` first), 512
// tokens, 75% sparsity.  The feed-forward layer's importance has no block
// structure; the attention projection's follows its heads.
//
//   patc examples/use_lite.pat --search --op=ffn1
//   patc examples/use_lite.pat --search --op=qkv1
op ffn1: spmm(M = 1536, K = 512, N = 512) {
    weights = safetensors("../data/use-lite.safetensors",
        "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_0/TransformerLayer/FFN/conv1/Tensordot/Reshape_1");
    search = search(sparsity = 75%, budget = 5%);
}
op qkv1: spmm(M = 1536, K = 512, N = 512) {
    weights = safetensors("../data/use-lite.safetensors",
        "module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0");
    search = search(sparsity = 75%, budget = 5%);
}
