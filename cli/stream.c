/*
 * cli/stream.c: live output and stdin forwarding (stream.h).
 */
#include "stream.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

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

int cli_stream_stdin(size_t *len_out, unsigned char *buf, size_t cap, void *payload)
{
	cli_stream *s = payload;
	struct pollfd pfd[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
	                        {.fd = sbx_signal_fd(s->c->sig), .events = POLLIN}};
	ssize_t n;

	*len_out = 0;
	for (;;) {
		if (sbx_signal_aborted(s->c->sig))
			return 0; /* EOF: the library sees the abort itself */
		if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			s->read_errno = errno;
			return 1;
		}
		if (pfd[1].fd >= 0 && (pfd[1].revents & POLLIN))
			continue; /* aborted: checked at the top */
		n = read(STDIN_FILENO, buf, cap);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			s->read_errno = errno;
			return 1;
		}
		*len_out = (size_t)n;
		return 0;
	}
}
