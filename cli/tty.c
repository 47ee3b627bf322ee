/*
 * cli/tty.c: `exec -t` / `-it`: a command on a terminal in the sandbox
 * (sandbox/pty.h), driven from this tool's terminal like ssh -t does.
 *
 * With -i and stdin a terminal, that terminal goes into raw mode, so every
 * key (Ctrl-C 0x03, Ctrl-D 0x04, Ctrl-Z 0x1a, arrows...) travels as a byte to
 * the remote terminal, whose line discipline gives it its meaning; stdin that
 * is not a terminal is forwarded as is, and its EOF is typed as one Ctrl-D.
 * The window size goes with the start and follows SIGWINCH (pty_resize). The
 * remote output is written to stdout as it comes, unchanged.
 *
 * One thread (this one) polls stdin, a self-pipe the signal handlers write
 * to (SIGWINCH, SIGHUP), the run's abort signal (SIGINT, SIGTERM) and an
 * eventfd-like pipe a waiter thread raises when the command ended. The saved
 * termios is put back on every way out of tty_session() (the command's end,
 * its kill, a network failure, SIGINT/SIGTERM/SIGHUP of this tool); a signal
 * of ours kills the remote command first, as a terminal's hangup would.
 */
#include "tty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#define INPUT_CHUNK (64 * 1024)

/* A local failure as the library reports one: code and message in err. */
static int local_error(sbx_error *err, int code, const char *msg)
{
	if (err && err->code == 0) {
		memset(err, 0, sizeof(*err));
		err->code = code;
		snprintf(err->message, sizeof(err->message), "%s", msg);
	}
	return code;
}

static int self_pipe[2] = {-1, -1}; /* written by the handlers: 'W' (SIGWINCH), 'H' (SIGHUP) */

static void on_signal(int signo)
{
	int saved = errno;
	char c = signo == SIGWINCH ? 'W' : 'H';
	ssize_t n = write(self_pipe[1], &c, 1);
	(void)n; /* a full pipe already says it */
	errno = saved;
}

typedef struct session {
	cli *c;
	sbx_pty *h;
	int out_errno; /* writing stdout failed (the command is then killed) */
	int done_pipe[2];
	sbx_signal *wstop;   /* ends the waiter's wait when the kill could not */
	uint16_t cols, rows; /* the remote terminal's size as last set */
	sbx_pty_result res;
	sbx_error err;
	int rc;
} session;

static int on_output(const unsigned char *data, size_t len, void *payload)
{
	session *s = payload;

	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->out_errno = n < 0 ? errno : EIO;
			return 1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static void *waiter(void *arg)
{
	session *s = arg;
	char c = 'E';

	s->rc = sbx_pty_wait(&s->res, s->h, s->wstop, &s->err);
	if (write(s->done_pipe[1], &c, 1) < 0)
		abort(); /* a fresh pipe of our own takes one byte */
	return NULL;
}

/* The window size of the tool's terminal (stdout, else stdin), or 80 x 24. */
static void window_size(uint16_t *cols, uint16_t *rows)
{
	struct winsize ws = {0};

	if ((ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row) &&
	    (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row)) {
		ws.ws_col = 80;
		ws.ws_row = 24;
	}
	*cols = ws.ws_col;
	*rows = ws.ws_row;
}

static void install(struct sigaction *old_winch, struct sigaction *old_hup)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, old_winch);
	sigaction(SIGHUP, &sa, old_hup);
}

static int pipe_nb(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		fds[0] = fds[1] = -1;
		return -1;
	}
	return 0;
}

static void close_pipe(int fds[2])
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fds[0] = fds[1] = -1;
}

/*
 * Resize the remote terminal when this one's size changed. Called on SIGWINCH and before
 * every input forwarded: the signal reaches some thread of ours at some point after the
 * resize, while keys typed after a resize must find the remote terminal resized.
 */
static void follow_size(session *s)
{
	uint16_t cols, rows;

	window_size(&cols, &rows);
	if (cols == s->cols && rows == s->rows)
		return;
	s->cols = cols;
	s->rows = rows;
	(void)sbx_pty_resize(s->h, cols, rows, NULL, NULL); /* the command may have ended */
}

/* The signals of self_pipe: resize on 'W'; true on 'H' (hang up). */
static bool drain_signals(session *s)
{
	char buf[64];
	bool winch = false, hup = false;
	ssize_t n;

	while ((n = read(self_pipe[0], buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			winch |= buf[i] == 'W';
			hup |= buf[i] == 'H';
		}
	if (winch)
		follow_size(s);
	return hup;
}

/*
 * Forward what stdin has: one read, one send. Returns 0 to go on, 1 at EOF
 * (after typing Ctrl-D once), -1 when the send failed (err filled).
 */
static int forward_input(session *s, unsigned char *buf, bool raw, sbx_error *err)
{
	ssize_t n = read(STDIN_FILENO, buf, INPUT_CHUNK);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		/* EOF of a pipe: the terminal's end of input, as a user types it */
		static const unsigned char eot = 0x04;
		if (!raw)
			(void)sbx_pty_send_input(s->h, &eot, 1, NULL, NULL);
		return 1;
	}
	if (sbx_pty_send_input(s->h, buf, (size_t)n, NULL, err) < 0)
		return -1;
	return 0;
}

/* The session's loop: until the command ended (0), a signal of ours (its number), a failure. */
static int pump(session *s, bool input, bool raw, sbx_error *err)
{
	unsigned char *buf = input ? malloc(INPUT_CHUNK) : NULL;
	struct pollfd pfd[4] = {{s->done_pipe[0], POLLIN, 0},
	                        {self_pipe[0], POLLIN, 0},
	                        {sbx_signal_fd(s->c->sig), POLLIN, 0},
	                        {input ? STDIN_FILENO : -1, POLLIN, 0}};
	int rc = 0;

	if (input && !buf)
		return -1;
	for (;;) {
		if (poll(pfd, 4, -1) < 0 && errno != EINTR) {
			rc = -1;
			break;
		}
		if (pfd[0].revents)
			break; /* ended */
		if (pfd[1].revents && drain_signals(s)) {
			rc = SIGHUP;
			break;
		}
		if (sbx_signal_aborted(s->c->sig)) {
			rc = cli_signo ? cli_signo : SIGINT;
			break;
		}
		/* signals first: a resize before the keys typed after it */
		if (pfd[3].fd >= 0 && pfd[3].revents) {
			int f;
			follow_size(s);
			f = forward_input(s, buf, raw, err);
			if (f < 0) {
				rc = -1;
				break;
			}
			if (f > 0)
				pfd[3].fd = -1; /* EOF: no more input */
		}
	}
	free(buf);
	return rc;
}

/* How the session ended as the tool's exit code (0) or a library failure (err filled). */
static int session_result(session *s, int sig, int *exit_code, sbx_error *err)
{
	cli *c = s->c;
	char ebuf[128];
	int rc;

	if (sig > 0) {
		rc = 0;
		*exit_code = 128 + sig;
	} else if (sig < 0) {
		rc = err && err->code ? err->code : SBX_EINTERNAL;
	} else if ((rc = s->rc) < 0 && rc != SBX_EUSER) {
		if (err && err->code == 0)
			*err = s->err;
	} else if (rc == SBX_EUSER) { /* our on_output stopped it: stdout failed */
		rc = 0;
		*exit_code = s->out_errno == EPIPE ? CLI_EXIT_PIPE : CLI_EXIT_ERROR;
		if (s->out_errno != EPIPE)
			fprintf(stderr,
			        "%s exec: cannot write the output: %s; the command was killed\n",
			        c->prog, cli_strerror(s->out_errno, ebuf, sizeof(ebuf)));
	} else if (s->res.timed_out) {
		*exit_code = CLI_EXIT_TIMEOUT;
		fprintf(stderr, "%s exec: the terminal's command timed out and was killed\n",
		        c->prog);
	} else {
		*exit_code = s->res.has_exit_code ? s->res.exit_code : CLI_EXIT_NOCODE;
	}
	return rc;
}

int cli_tty_session(cli *c, const char *id, const char *command, const sbx_pty_options *in,
                    bool input, int *exit_code, sbx_error *err)
{
	session s = {.c = c, .done_pipe = {-1, -1}};
	sbx_pty_options o = *in;
	struct sigaction old_winch, old_hup;
	struct termios saved, raw_t;
	bool raw = false, waiting = false;
	pthread_t th;
	int rc, sig;

	*exit_code = CLI_EXIT_ERROR;
	if (pipe_nb(self_pipe) < 0 || pipe_nb(s.done_pipe) < 0 || sbx_signal_new(&s.wstop) < 0) {
		close_pipe(self_pipe);
		close_pipe(s.done_pipe);
		return local_error(err, SBX_EINTERNAL, "cannot make a pipe");
	}
	install(&old_winch, &old_hup);
	window_size(&o.cols, &o.rows);
	s.cols = o.cols;
	s.rows = o.rows;
	o.on_output = on_output;
	o.output_payload = &s;
	if ((rc = sbx_pty_start(&s.h, c->prov, id, command, &o, c->sig, err)) < 0)
		goto out;
	if (input && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw_t = saved;
		cfmakeraw(&raw_t);
		raw = tcsetattr(STDIN_FILENO, TCSADRAIN, &raw_t) == 0;
	}
	if (pthread_create(&th, NULL, waiter, &s) != 0) {
		(void)sbx_pty_kill(s.h, NULL, NULL);
		rc = local_error(err, SBX_EINTERNAL, "cannot start a thread");
		goto out;
	}
	waiting = true;
	sig = pump(&s, input, raw, err);
	if (raw) /* first, before any message of ours or a kill that may take long */
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	raw = false;
	if (sig != 0) { /* our signal, or the input failed: the remote command goes too */
		(void)sbx_pty_kill(s.h, NULL, NULL);
		sbx_signal_abort(s.wstop);
	}
	pthread_join(th, NULL);
	waiting = false;
	rc = session_result(&s, sig, exit_code, err);
out:
	if (waiting)
		pthread_join(th, NULL);
	if (raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	sbx_pty_free(s.h);
	sigaction(SIGWINCH, &old_winch, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	close_pipe(self_pipe);
	close_pipe(s.done_pipe);
	sbx_signal_free(s.wstop);
	return rc;
}
