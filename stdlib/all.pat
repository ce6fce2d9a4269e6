// all.pat - the whole standard pattern library.
include "block.pat";
include "nm.pat";
include "tile.pat";
include "channel.pat";
include "elementwise.pat";
include "hybrid.pat";
