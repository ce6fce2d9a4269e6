# The loops do not tile axis k: k has stride 2.
pir a m=4 k=4 {
  loop m 4 = m[4]*1
  loop k 4 = k[4]*2
}
