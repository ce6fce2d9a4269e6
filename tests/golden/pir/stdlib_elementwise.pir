pir rb m=77 k=333 {
  loop m 77 = m[77]*1
  loop k 333 keep 83 = k[333]*1
}

pir un m=77 k=333 {
  join m, k -> mk
  loop mk 25641 keep 1603 = m[77]*1 . k[333]*1
}
