/*
 * cli/stream.h: live output and stdin forwarding for exec and wait.
 *
 * cli_stream_output is an sbx_output_fn that writes each chunk at once to
 * the tool's own stdout or stderr (write(2), no stdio buffering), so a
 * command's output appears as it arrives.
 */
#ifndef SBX_CLI_STREAM_H
#define SBX_CLI_STREAM_H

#include "cli.h"

#include <pthread.h>

typedef struct cli_stream {
	cli *c;
	int write_errno; /* set when writing to stdout/stderr failed (the command is then stopped)
	                  */
} cli_stream;

/* sbx_output_fn: payload is a cli_stream. Returns non-zero (stop) when a write fails. */
int cli_stream_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload);

/*
 * Forwarding the tool's stdin to a background-command handle (exec -i): a
 * thread reads stdin and sends it (sbx_process_send_stdin), then closes the
 * command's stdin at EOF. It stops at once when told to, so the tool never
 * waits for stdin after the command ended (unlike a blocking stdin callback).
 */
typedef struct cli_stdin_pump {
	cli *c;
	sbx_process *h;
	sbx_signal *stop; /* aborted by cli_stdin_pump_stop */
	pthread_t thread;
	bool started;
	int read_errno; /* reading stdin failed (the command then got EOF) */
} cli_stdin_pump;

/* Start the thread. 0, or -1 (no signal or thread: message printed by the caller). */
int cli_stdin_pump_start(cli_stdin_pump *p, cli *c, sbx_process *h);
/* Stop and join the thread (no call on the handle is left running). Accepts a pump never started.
 */
void cli_stdin_pump_stop(cli_stdin_pump *p);

#endif
