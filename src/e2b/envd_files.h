/*
 * e2b/envd_files.h: envd's /files routes (docs/protocol.md, envd files): a
 * multipart POST /files from memory, or whose part is pulled from a callback
 * (sent chunked) for bytes that do not fit in memory, and GET /files with the
 * body handed to a callback as it arrives. Raw bytes both ways, no base64.
 *
 * Both act as `user` on `path` exactly as envd does: as root they follow
 * symlinks, so callers point them only at root-only staging files.
 */
#ifndef SBX_E2B_ENVD_FILES_H
#define SBX_E2B_ENVD_FILES_H

#include "e2b/envd.h"
#include "e2b/http.h"

/*
 * Upload `len` bytes to `path` as `user` (multipart part "file", filename the
 * last path segment). 0, SBX_EHTTP ("E2B file upload failed: …"), ...
 */
int sbx__envd_upload(sbx_http *http, const sbx_envd_target *t, const char *path, const char *user,
                     const void *data, size_t len, uint64_t deadline_ms, sbx_signal *sig,
                     sbx_error *err);

/*
 * One multipart POST /files (no path query) of n parts named "file", each
 * written by envd to its filename, an absolute path, as `user`. As
 * sbx__envd_upload(); parts after the first are copied by curl.
 */
int sbx__envd_upload_many(sbx_http *http, const sbx_envd_target *t, const char *user,
                          const sbx_http_part *parts, size_t n, uint64_t deadline_ms,
                          sbx_signal *sig, sbx_error *err);

/* Pull up to `cap` bytes into buf: the count, 0 at the end, SIZE_MAX to fail. */
typedef size_t (*sbx__envd_pull_fn)(unsigned char *buf, size_t cap, void *payload);

/*
 * Upload to `path` as `user` (multipart part "file", filename the last path
 * segment), the bytes pulled from `pull` until it returns 0. Returns 0,
 * SBX_EHTTP ("E2B file upload failed: ..."), SBX_ETIMEOUT, SBX_EABORTED (err
 * not filled for these two), SBX_ENETWORK (also when `pull` failed: the
 * caller knows), SBX_ENOMEM.
 */
int sbx__envd_upload_stream(sbx_http *http, const sbx_envd_target *t, const char *path,
                            const char *user, sbx__envd_pull_fn pull, void *payload,
                            uint64_t deadline_ms, sbx_signal *sig, sbx_error *err);

/*
 * GET /files?path=&username= : a 200 body goes to `on_data` chunk by chunk
 * (return 0 to go on, 1 to stop as complete, or a negative SBX_E* with err
 * filled). Returns 0, SBX_EHTTP ("E2B file download failed: HTTP 404: ..."),
 * SBX_ETIMEOUT, SBX_EABORTED (err not filled), SBX_ENETWORK, on_data's
 * error, SBX_ENOMEM.
 */
int sbx__envd_download(sbx_http *http, const sbx_envd_target *t, const char *path, const char *user,
                       sbx_http_data_fn on_data, void *payload, uint64_t deadline_ms,
                       sbx_signal *sig, sbx_error *err);

/*
 * GET /files?path=&username= with the 200 body kept whole in *out (at most `max` bytes;
 * a longer body is SBX_ETOOLARGE): curl's bytes go straight into it on the transfer's
 * thread, and the caller is woken once, at the end. Returns as sbx__envd_download().
 */
int sbx__envd_download_buf(sbx_http *http, const sbx_envd_target *t, const char *path,
                           const char *user, sbx_buf *out, size_t max, uint64_t deadline_ms,
                           sbx_signal *sig, sbx_error *err);

#endif
