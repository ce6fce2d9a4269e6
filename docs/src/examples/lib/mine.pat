pattern mine(c) { perforate k keep c; }
