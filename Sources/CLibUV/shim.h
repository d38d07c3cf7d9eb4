#ifndef FLOWSYNC_CLIBUV_SHIM_H
#define FLOWSYNC_CLIBUV_SHIM_H
#include <uv.h>

// Swift cannot cast between libuv's "subclassed" handle structs; these tiny
// helpers do the C-style upcasts so the Swift side stays free of pointer puns.
static inline uv_handle_t *CLibUV_tcp_as_handle(uv_tcp_t *t) { return (uv_handle_t *)t; }
static inline uv_stream_t *CLibUV_tcp_as_stream(uv_tcp_t *t) { return (uv_stream_t *)t; }
static inline uv_handle_t *CLibUV_stream_as_handle(uv_stream_t *s) { return (uv_handle_t *)s; }
static inline uv_handle_t *CLibUV_timer_as_handle(uv_timer_t *t) { return (uv_handle_t *)t; }
static inline uv_handle_t *CLibUV_async_as_handle(uv_async_t *a) { return (uv_handle_t *)a; }
static inline uv_handle_t *CLibUV_signal_as_handle(uv_signal_t *s) { return (uv_handle_t *)s; }
static inline uv_handle_t *CLibUV_prepare_as_handle(uv_prepare_t *p) { return (uv_handle_t *)p; }
static inline uv_handle_t *CLibUV_check_as_handle(uv_check_t *c) { return (uv_handle_t *)c; }
static inline uv_handle_t *CLibUV_idle_as_handle(uv_idle_t *i) { return (uv_handle_t *)i; }
static inline uv_handle_t *CLibUV_pipe_as_handle(uv_pipe_t *p) { return (uv_handle_t *)p; }
static inline uv_stream_t *CLibUV_pipe_as_stream(uv_pipe_t *p) { return (uv_stream_t *)p; }
static inline uv_handle_t *CLibUV_poll_as_handle(uv_poll_t *p) { return (uv_handle_t *)p; }
#endif
