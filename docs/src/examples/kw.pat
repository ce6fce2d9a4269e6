pattern rows(keep) { perforate k keep keep; }
