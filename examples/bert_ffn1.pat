// bert_ffn1.pat - the search's headline example: the first feed-forward
// matrix of a BERT-base layer (3072 x 768, 512 tokens) at 75% sparsity.
//
//   patc examples/bert_ffn1.pat --search
//
// The weights are seeded and head-structured (a log-normal scale per 64 x 64
// block, as attention-derived layers show), since the real model's are not
// fetched by default; with `make fetch-weights`, bind one of its matrices
// instead: weights = safetensors("../data/use-lite.safetensors", "NAME").
op ffn1: spmm(M = 3072, K = 768, N = 512) {
    weights = random(seed = 11, kind = heads, group = 64);
    search = search(sparsity = 75%, budget = 5%);
}
