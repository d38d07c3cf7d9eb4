#ifndef FLOWSYNC_CLIBPQ_SHIM_H
#define FLOWSYNC_CLIBPQ_SHIM_H
// libpq (Debian's libpq-dev), driven from the libuv loop in non-blocking pipeline mode
// (Sources/FlowSyncPostgres). pkg-config supplies -I/usr/include/postgresql.
#include <libpq-fe.h>
#endif
