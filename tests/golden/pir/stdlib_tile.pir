pir tv m=1000 k=768 {
  split m -> m0, m1 : 8, 128 pad 24
  loop m0 8 = m[8]*128
  loop k 768 keep 384 = k[768]*1
  loop m1 128 = m[128]*1
}

pir th m=1000 k=768 {
  split k -> k0, k1 : 8, 96
  loop k0 8 = k[8]*96
  loop m 1000 keep 250 = m[1000]*1
  loop k1 96 = k[96]*1
}
