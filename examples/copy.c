/*
 * examples/copy.c: copy a local file of any size into a sandbox and back
 * with the streamed calls of sandbox/files.h, comparing every byte, with
 * memory that does not grow with the file.
 *
 * Build (installed library):  cc copy.c $(pkg-config --cflags --libs sandbox-e2b)
 * Built by CMake too:         build/examples/example-copy
 * Run: SANDBOX_E2B_CONFIG='{"apiKey":"e2b_...","template":"capybara-sandbox"}' \
 *        ./example-copy SANDBOX_ID LOCAL_FILE /workspace/PATH
 * (against fake-e2b add "apiUrl" to the config and SANDBOX_E2B_ENVD_URL, as in hello.c)
 */
#include <sandbox.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The sink compares what comes back with the local file, chunk by chunk. */
typedef struct compare {
	int fd;
	unsigned long long same;
	int differs;
} compare;

static int compare_sink(const unsigned char *data, size_t len, void *payload)
{
	compare *c = payload;
	unsigned char buf[65536];
	while (len > 0) {
		size_t want = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t n = read(c->fd, buf, want);
		if (n <= 0 || memcmp(buf, data, (size_t)n) != 0) {
			c->differs = 1;
			return 1; /* stop the read: SBX_EUSER */
		}
		c->same += (unsigned long long)n;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *json = getenv("SANDBOX_E2B_CONFIG");
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_read_result rr;
	sbx_e2b_config *cfg = NULL;
	sbx_provider *p = NULL;
	sbx_error err = {0};
	compare c = {-1, 0, 0};
	int fd = -1, rc = 1;

	if (!json || argc != 4) {
		fprintf(stderr,
		        "usage: SANDBOX_E2B_CONFIG=... copy SANDBOX_ID LOCAL_FILE SANDBOX_PATH\n");
		return 2;
	}
	opts.envd_url = getenv("SANDBOX_E2B_ENVD_URL");
	if ((fd = open(argv[2], O_RDONLY)) < 0 || (c.fd = open(argv[2], O_RDONLY)) < 0) {
		perror(argv[2]);
		goto done;
	}
	if (sbx_e2b_config_parse(&cfg, json, strlen(json), &err) < 0 ||
	    sbx_e2b_provider_new(&p, cfg, &opts, &err) < 0)
		goto fail;
	/* up: the fd is read to its end and uploaded as it is read */
	if (sbx_sandbox_write_file_fd(p, argv[1], argv[3], fd, NULL, NULL, &err) < 0)
		goto fail;
	/* down: every chunk is compared with the local file as it arrives */
	if (sbx_sandbox_read_file_to(&rr, p, argv[1], argv[3], compare_sink, &c, NULL, NULL, &err) <
	        0 &&
	    !c.differs)
		goto fail;
	if (c.differs || !rr.found || (off_t)c.same != lseek(fd, 0, SEEK_CUR)) {
		fprintf(stderr, "copy: the copy differs after %llu bytes\n", c.same);
		goto done;
	}
	printf("copied %llu bytes to %s:%s and back, identical\n", (unsigned long long)rr.bytes,
	       argv[1], argv[3]);
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "copy: %s (%s)\n", err.message, sbx_error_code_name(err.code));
done:
	if (fd >= 0)
		close(fd);
	if (c.fd >= 0)
		close(c.fd);
	sbx_provider_free(p);
	sbx_e2b_config_free(cfg);
	return rc;
}
