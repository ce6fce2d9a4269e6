pir out m=130 k=576 {
  loop m 130 keep 65 = m[130]*1
  loop k 576 = k[576]*1
}

pir in m=130 k=576 {
  loop k 576 keep 144 = k[576]*1
  loop m 130 = m[130]*1
}
