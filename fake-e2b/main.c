/*
 * fake-e2b/main.c: command line, start-up and clean shutdown of fake-e2b.
 *
 *   fake-e2b [--host 127.0.0.1] [--port N] [--state-dir DIR] [--port-file FILE]
 *            [--api-key KEY] [--quiet]
 *
 * Prints exactly one line "fake-e2b listening on http://HOST:PORT" when ready.
 * SIGINT/SIGTERM: every sandbox destroyed, then exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "control.h"
#include "runtime.h"
#include "server.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: fake-e2b [--host 127.0.0.1] [--port N] [--state-dir DIR] "
	           "[--port-file FILE] [--api-key KEY] [--quiet]\n");
}

static int parse_args(fk_server *srv, int argc, char **argv, char **state_dir, char **port_file)
{
	static const struct option opts[] = {
	    {"host", required_argument, NULL, 'h'},
	    {"port", required_argument, NULL, 'p'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"port-file", required_argument, NULL, 'f'},
	    {"api-key", required_argument, NULL, 'k'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'H'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		long port;
		switch (c) {
		case 'h':
			srv->host = optarg;
			break;
		case 'p':
			port = strtol(optarg, &end, 10);
			if (!*optarg || *end || port < 0 || port > 65535) {
				fprintf(stderr, "fake-e2b: bad --port '%s'\n", optarg);
				return -1;
			}
			srv->port = (unsigned)port;
			break;
		case 's':
			*state_dir = optarg;
			break;
		case 'f':
			*port_file = optarg;
			break;
		case 'k':
			srv->api_key = optarg;
			break;
		case 'q':
			srv->quiet = 1;
			break;
		case 'H':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static int write_port_file(const char *path, unsigned port)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%u\n", port);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	fk_server srv = {.host = "127.0.0.1"};
	char *state_dir = NULL, *port_file = NULL;
	int status = 1;
	if (parse_args(&srv, argc, argv, &state_dir, &port_file) < 0)
		return 2;

	/* SIGINT/SIGTERM are taken by sigwait below; every thread inherits the mask. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigaction(SIGPIPE, &ign, NULL);

	if (RAND_bytes(srv.seed, sizeof(srv.seed)) != 1) {
		fprintf(stderr, "fake-e2b: no randomness for the token seed\n");
		return 1;
	}
	fk_rt_options ro = {.state_dir = state_dir};
	fk_err err = {0};
	if (fk_rt_new(&srv.rt, &ro, &err) < 0) {
		fprintf(stderr, "fake-e2b: runtime: %s\n", err.message);
		return 1;
	}
	if (!(srv.admin = fk_admin_new()) || fk_control_new(&srv.control, &srv) < 0) {
		fprintf(stderr, "fake-e2b: out of memory\n");
		goto done;
	}
	if (fk_server_start(&srv) < 0)
		goto done;
	if (port_file && write_port_file(port_file, srv.port) < 0) {
		fprintf(stderr, "fake-e2b: cannot write %s\n", port_file);
		goto done;
	}
	printf("fake-e2b listening on http://%s:%u\n", srv.host, srv.port);
	fflush(stdout);

	int sig = 0;
	while (sigwait(&stop, &sig) != 0)
		;
	if (!srv.quiet)
		fprintf(stderr, "fake-e2b: signal %d, shutting down\n", sig);
	status = 0;
done:
	fk_server_begin_stop(&srv); /* fault delays end now */
	if (srv.daemon) {
		MHD_socket ls = MHD_quiesce_daemon(srv.daemon);
		if (ls != MHD_INVALID_SOCKET)
			close(ls);
	}
	fk_control_shutdown(srv.control); /* destroys every sandbox: streams end */
	fk_server_stop(&srv);
	fk_control_free(srv.control);
	fk_admin_free(srv.admin);
	fk_rt_free(srv.rt);
	return status;
}
