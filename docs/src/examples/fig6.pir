# The paper's Fig. 6, written by hand.
pir fig6 m=16 k=16 {
  split m -> i0, i1 : 4, 4
  split k -> j0, j1 : 4, 4
  loop i0 4 = m[4]*4
  loop j0 4 keep 2 = k[4]*4
  loop i1 4 keep 2 = m[4]*1
  loop j1 4 = k[4]*1
}
