/*
 * fake-e2b/main.c: command line, start-up and clean shutdown of fake-e2b.
 *
 *   fake-e2b [--host 127.0.0.1] [--port N] [--state-dir DIR] [--port-file FILE]
 *            [--api-key KEY] [--legacy-routes] [--quiet]
 *
 * Flags are described in README.md "Command line".
 *
 * Prints exactly one line "fake-e2b listening on http://HOST:PORT" when ready.
 * SIGINT/SIGTERM: every sandbox destroyed, then exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "clock.h"
#include "router.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: fake-e2b [--host 127.0.0.1] [--port N] [--state-dir DIR] "
	           "[--port-file FILE] [--api-key KEY] [--legacy-routes] [--quiet]\n");
}

typedef struct cli_opts {
	const char *host;
	unsigned port;
	const char *api_key;
	int quiet;
	int legacy_routes;
} cli_opts;

static int parse_args(cli_opts *srv, int argc, char **argv, char **state_dir, char **port_file)
{
	static const struct option opts[] = {
	    {"host", required_argument, NULL, 'h'},
	    {"port", required_argument, NULL, 'p'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"port-file", required_argument, NULL, 'f'},
	    {"api-key", required_argument, NULL, 'k'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"legacy-routes", no_argument, NULL, 'L'},
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
		case 'L':
			srv->legacy_routes = 1;
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
	cli_opts o = {.host = "127.0.0.1"};
	char *state_dir = NULL, *port_file = NULL;
	unsigned char seed[32];
	fk_app app = {0};
	fk_http *http = NULL;
	fk_reaper *reaper = NULL;
	unsigned port = 0;
	int status = 1;
	if (parse_args(&o, argc, argv, &state_dir, &port_file) < 0)
		return 2;
	if (strcmp(o.host, "localhost") == 0)
		o.host = "127.0.0.1";
	app.api_key = o.api_key;
	app.quiet = o.quiet;
	app.legacy_routes = o.legacy_routes;

	/* SIGINT/SIGTERM are taken by sigwait below; every thread inherits the mask. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigaction(SIGPIPE, &ign, NULL);

	if (RAND_bytes(seed, sizeof(seed)) != 1) {
		fprintf(stderr, "fake-e2b: no randomness for the token seed\n");
		return 1;
	}
	fk_rt_options ro = {.state_dir = state_dir};
	fk_err err = {0};
	if (fk_rt_new(&app.rt, &ro, &err) < 0) {
		fprintf(stderr, "fake-e2b: runtime: %s\n", err.message);
		return 1;
	}
	if (!(app.faults = fk_faults_new()) || !(app.log = fk_reqlog_new()) ||
	    fk_registry_new(&app.reg, app.rt, seed) < 0 || !(reaper = fk_reaper_start(app.reg))) {
		fprintf(stderr, "fake-e2b: out of memory\n");
		goto done;
	}
	fk_http_hooks hooks = fk_router_hooks(&app);
	fk_http_options ho = {.host = o.host, .port = o.port};
	if (fk_http_start(&http, &ho, &hooks, &port) < 0)
		goto done;
	if (port_file && write_port_file(port_file, port) < 0) {
		fprintf(stderr, "fake-e2b: cannot write %s\n", port_file);
		goto done;
	}
	printf("fake-e2b listening on http://%s:%u\n", o.host, port);
	fflush(stdout);

	int sig = 0;
	while (sigwait(&stop, &sig) != 0)
		;
	if (!o.quiet)
		fprintf(stderr, "fake-e2b: signal %d, shutting down\n", sig);
	status = 0;
done:
	fk_stop_begin(); /* fault delays end now */
	fk_http_quiesce(http);
	fk_reaper_stop(reaper);
	fk_registry_shutdown(app.reg); /* destroys every sandbox: streams end */
	fk_http_stop(http);
	fk_registry_free(app.reg);
	fk_reqlog_free(app.log);
	fk_faults_free(app.faults);
	fk_rt_free(app.rt);
	return status;
}
