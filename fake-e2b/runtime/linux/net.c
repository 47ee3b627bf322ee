/*
 * fake-e2b/runtime/linux/net.c — network namespace primitives (see net.h).
 */
#define _GNU_SOURCE
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct conn_job {
	int netns_fd;
	uint16_t port;
	int timeout_ms;
	int fd;
	int errnum;
} conn_job;

static void *connect_main(void *arg)
{
	conn_job *j = arg;
	j->fd = -1;
	/* setns(CLONE_NEWNET) affects this thread only; it ends right after */
	if (j->netns_fd >= 0 && setns(j->netns_fd, CLONE_NEWNET) < 0) {
		j->errnum = errno;
		return NULL;
	}
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		j->errnum = errno;
		return NULL;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(j->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int rc = connect(s, (struct sockaddr *)&a, sizeof(a));
	if (rc < 0 && errno == EINPROGRESS) {
		struct pollfd p = {.fd = s, .events = POLLOUT};
		int n;
		while ((n = poll(&p, 1, j->timeout_ms)) < 0 && errno == EINTR)
			;
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		if (n == 0)
			soerr = ETIMEDOUT;
		else if (n < 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		rc = soerr ? -1 : 0;
		errno = soerr;
	}
	if (rc < 0) {
		j->errnum = errno;
		close(s);
		return NULL;
	}
	int fl = fcntl(s, F_GETFL);
	if (fl >= 0)
		fcntl(s, F_SETFL, fl & ~O_NONBLOCK);
	j->fd = s;
	return NULL;
}

int fk_lx_connect_in_netns(int netns_fd, uint16_t port, int timeout_ms)
{
	conn_job j = {.netns_fd = netns_fd, .port = port, .timeout_ms = timeout_ms, .fd = -1};
	pthread_t t;
	int rc = pthread_create(&t, NULL, connect_main, &j);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_join(t, NULL);
	if (j.fd < 0)
		errno = j.errnum ? j.errnum : EIO;
	return j.fd;
}
