include "sub/x.pat";
