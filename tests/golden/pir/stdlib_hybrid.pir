pir h1 m=3072 k=768 {
  split m -> m0, m1 : 96, 32
  split k -> k0, k1, k2 : 12, 16, 4
  loop m0 96 = m[96]*32
  loop k0 12 keep 6 = k[12]*64
  loop m1 32 = m[32]*1
  loop k1 16 = k[16]*4
  loop k2 4 keep 2 = k[4]*1
}

pir h2 m=1000 k=1000 {
  split m -> m0, m1 : 63, 16 pad 8
  split k -> k0, k1, k2 : 32, 8, 4 pad 24
  loop m0 63 = m[63]*16
  loop k0 32 keep 3 = k[32]*32
  loop m1 16 = m[16]*1
  loop k1 8 = k[8]*4
  loop k2 4 keep 1 = k[4]*1
}
