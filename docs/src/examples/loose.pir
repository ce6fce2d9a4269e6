pir loose m=100 k=64 { split m -> m0, m1 : 4, 32 pad 28   split k -> k0, k1 : 16, 04 pad 0
  loop m0 4 keep 4 = m[4]*32   loop k0 16 keep 8 = k[16]*4   # a comment
  loop m1 32 = m[32]*1         loop k1 4 = k[4]*1 }
