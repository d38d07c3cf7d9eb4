#ifndef FLOWSYNC_CZLIB_H
#define FLOWSYNC_CZLIB_H
#include <zlib.h>

// deflateInit2 / inflateInit2 are function-like macros (they pass
// ZLIB_VERSION and sizeof(z_stream) for an ABI check), which Swift cannot
// import. These wrappers are the only reason this target exists.
static inline int CZlib_deflateInit2(z_streamp strm, int level, int method,
                                     int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}

static inline int CZlib_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}

/// The zlib version string the shim was compiled against.
const char *CZlib_compiledVersion(void);
#endif
