// lexical: an unknown escape in an include's path is the one error (no file looked for)
include "a\qb.pat";
