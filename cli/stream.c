/*
 * cli/stream.c: live output and stdin forwarding (stream.h).
 */
#include "stream.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#define PUMP_CHUNK (64 * 1024)

int cli_stream_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	cli_stream *s = payload;
	int fd = stream == SBX_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO;

	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->write_errno = n < 0 ? errno : EIO;
			return 1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static void *pump_main(void *arg)
{
	cli_stdin_pump *p = arg;
	struct pollfd pfd[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
	                        {.fd = sbx_signal_fd(p->stop), .events = POLLIN}};
	unsigned char *buf = malloc(PUMP_CHUNK);
	sbx_error err = {0};
	ssize_t n;

	while (buf && !sbx_signal_aborted(p->stop)) {
		if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1, pfd[1].fd >= 0 ? -1 : 50) < 0) {
			if (errno == EINTR)
				continue;
			p->read_errno = errno;
			break;
		}
		if (pfd[0].revents & POLLNVAL)
			break; /* stdin is not open: EOF */
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(STDIN_FILENO, buf, PUMP_CHUNK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			p->read_errno = errno;
		if (n <= 0)
			break;
		/* A command that stopped reading (ended, closed stdin) just gets no more. */
		if (sbx_process_send_stdin(p->h, buf, (size_t)n, p->stop, &err) < 0)
			goto out;
	}
	if (!sbx_signal_aborted(p->stop))
		(void)sbx_process_close_stdin(p->h, p->stop, &err);
out:
	free(buf);
	return NULL;
}

int cli_stdin_pump_start(cli_stdin_pump *p, cli *c, sbx_process *h)
{
	*p = (cli_stdin_pump){.c = c, .h = h};
	if (sbx_signal_new(&p->stop) < 0)
		return -1;
	if (pthread_create(&p->thread, NULL, pump_main, p) != 0) {
		sbx_signal_free(p->stop);
		p->stop = NULL;
		return -1;
	}
	p->started = true;
	return 0;
}

void cli_stdin_pump_stop(cli_stdin_pump *p)
{
	if (!p->started)
		return;
	sbx_signal_abort(p->stop);
	pthread_join(p->thread, NULL);
	sbx_signal_free(p->stop);
	p->started = false;
}
