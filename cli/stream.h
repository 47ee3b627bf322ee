/*
 * cli/stream.h: live output and stdin forwarding for exec and wait.
 *
 * cli_stream_output is an sbx_output_fn that writes each chunk at once to
 * the tool's own stdout or stderr (write(2), no stdio buffering), so a
 * command's output appears as it arrives. cli_stream_stdin is an
 * sbx_input_fn that reads the tool's stdin; it waits on stdin and on the
 * run's abort signal together, so Ctrl-C is never stuck behind a read.
 */
#ifndef SBX_CLI_STREAM_H
#define SBX_CLI_STREAM_H

#include "cli.h"

typedef struct cli_stream {
	cli *c;
	int write_errno; /* set when writing to stdout/stderr failed (the command is then stopped)
	                  */
	int read_errno;  /* set when reading stdin failed */
} cli_stream;

/* sbx_output_fn: payload is a cli_stream. Returns non-zero (stop) when a write fails. */
int cli_stream_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload);

/* sbx_input_fn: payload is a cli_stream. 0 bytes at EOF or when the run was aborted. */
int cli_stream_stdin(size_t *len_out, unsigned char *buf, size_t cap, void *payload);

#endif
