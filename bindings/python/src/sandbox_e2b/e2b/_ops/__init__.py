"""The blocking steps of ``Sandbox`` and ``AsyncSandbox``: one engine call (or
a few) each, over a shared ``Client`` per connection options, results in
E2B's shapes and failures as E2B's exceptions. ``AsyncSandbox`` runs each
step on a thread of its own (``sandbox_async.in_thread``), so both share this code
(and ``_base``, what their classes share).

One module a concept, as E2B's SDK splits them: connection (the shared Client, checks,
failures), sandboxes, commands, files (with the watch), pty. This package is what the
wrappers import (``from . import _ops as ops``)."""
from .connection import (check_opts, client_for, _close_all, _paused)  # noqa: F401
from .sandboxes import (  # noqa: F401
    connect, create, get_host, get_metrics, info, is_running, kill, list_all, Pages, pause,
    set_timeout)
from .commands import (  # noqa: F401
    advertises, attach, close_stdin, exec_params, kill_all, kill_process, kill_tagged, outcome, ps,
    run, send_stdin, start, sync_handler, texts, wait)
from .files import (  # noqa: F401
    data_of, get_info, make_dir, path_info, read, remove, rename, walk, watch, watch_notify,
    watch_params, write, write_many)
from .pty import (pty_attach, pty_input, pty_kill, pty_resize, pty_start)  # noqa: F401
