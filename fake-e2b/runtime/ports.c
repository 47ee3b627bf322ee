/*
 * fake-e2b/runtime/ports.c — connections to a box's own ports (E2B's getHost(port): traffic for
 * <port>-<id>.<domain> reaches that port inside the sandbox). Enters the box's network
 * namespace through its PID 1 (linux/net.c); never touches the server's own sockets.
 */
#define _GNU_SOURCE
#include "backend.h"
#include "linux/net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int fk_box_connect(fk_rt *rt, const char *id, uint16_t port, int timeout_ms, int *fd_out,
                   fk_err *err)
{
	*fd_out = -1;
	if (port == 0)
		return fk__fail(err, FK_EINVAL, 0, "invalid port 0");
	fk_box *b = fk__box_get(rt, id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", id);
	pthread_rwlock_rdlock(&b->life);
	int rc = 0, ns = -1;
	if (b->dead)
		rc = fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", id);
	else if (b->frozen)
		rc = fk__fail(err, FK_ESTATE, 0, "sandbox %s is paused", id);
	else if (b->init_pid > 0) {
		ns = fk__box_init_open(b, "ns/net", O_RDONLY);
		if (ns < 0)
			rc =
			    fk__fail(err, FK_EIO, errno, "sandbox network: %s", fk_strerror(errno));
	}
	if (rc == 0) {
		int fd = fk_lx_connect_in_netns(ns, port, timeout_ms);
		if (fd < 0) {
			int e = errno;
			rc = fk__fail(err, e == ECONNREFUSED ? FK_ENOTFOUND : FK_EIO, e,
			              "port %u in sandbox %s: %s", (unsigned)port, id,
			              fk_strerror(e));
		} else {
			*fd_out = fd;
		}
	}
	if (ns >= 0)
		close(ns);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return rc;
}
