// lexical: an unknown escape of an invalid UTF-8 byte is quoted escaped
include "a\ÿ.pat";
