#include "CZlib.h"

const char *CZlib_compiledVersion(void) { return ZLIB_VERSION; }
