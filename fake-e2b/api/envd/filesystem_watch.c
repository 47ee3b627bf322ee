/*
 * fake-e2b/api/envd/filesystem_watch.c: filesystem.Filesystem/WatchDir, a
 * server stream the fake does not serve yet: one end-stream error.
 */
#include "envd.h"

enum MHD_Result fk_envd_fs_watch_dir(fk_call *c)
{
	return fk_connect_stream_error(c->req, "unimplemented",
	                               "filesystem.Filesystem/WatchDir is not implemented");
}
