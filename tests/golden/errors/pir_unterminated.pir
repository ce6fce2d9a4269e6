# A block that is never closed.
pir a m=8 k=8 {
  loop m 8 = m[8]*1
