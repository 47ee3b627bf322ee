"""The README's walk-through as a script, against fake-e2b (or E2B):

    build/fake-e2b/fake-e2b --port 0 --api-key e2b_local_key    # prints its URL
    export SANDBOX_E2B_BIN=$PWD/build/cli/sandbox-e2b PYTHONPATH=$PWD/bindings/python/src
    python3 bindings/python/examples/quickstart.py http://127.0.0.1:PORT

Creates a sandbox, streams an exec, aborts one (a CancelToken, then an asyncio
task cancelled), writes and reads a file, destroys the sandbox and sees it
gone. E2B_API_KEY overrides the key. The asserts say what each step returns;
the test suite runs this file.
"""
import asyncio
import os
import sys
import threading
import time

from sandbox_e2b import AsyncClient, CancelToken, Client, Limits, SandboxGone

if len(sys.argv) != 2:
    sys.exit("usage: quickstart.py http://127.0.0.1:PORT (the URL fake-e2b printed)")
url = sys.argv[1]
config = {"apiKey": os.environ.get("E2B_API_KEY", "e2b_local_key"), "template": "capybara-sandbox",
          "apiUrl": url}


def wait_for(c: Client, sid: str, path: str) -> None:
    while c.stat(sid, path) is None:
        time.sleep(0.02)


with Client(config, envd_url=url) as c:  # fake-e2b serves envd on the same port
    sid = c.create("quickstart-py", Limits(egress="none"))
    print("created", sid)
    streamed = []
    r = c.exec(sid, "for i in 1 2 3; do echo line $i; done",
               on_stdout=lambda text: (streamed.append(text), print(text, end="")))
    assert (r.exit_code, r.stdout, r.truncated, r.timed_out) == (0, "line 1\nline 2\nline 3\n", False, False)
    assert "".join(streamed) == r.stdout

    # Abort from another thread: the result says aborted, with the output so far;
    # the remote process tree is killed before exec returns.
    # (One Client serves many threads at once.)
    token = CancelToken()
    threading.Thread(target=lambda: (wait_for(c, sid, "/tmp/started"), token.cancel())).start()
    r = c.exec(sid, "echo started; touch /tmp/started; sleep 300", cancel=token)
    print("aborted:", r.aborted, r.exit_code, repr(r.stdout))
    assert (r.aborted, r.exit_code, r.stdout) == (True, None, "started\n")

    c.write_file(sid, "/workspace/hello.txt", b"hi\n")
    f = c.read_file(sid, "/workspace/hello.txt")
    assert f is not None and (f.data, f.truncated) == (b"hi\n", False)
    st = c.stat(sid, "/workspace/hello.txt")
    assert st is not None and (st.size, st.is_dir) == (3, False)
    c.destroy(sid)
    try:
        c.exec(sid, "true")
        raise AssertionError("exec after destroy succeeded")
    except SandboxGone:
        print("destroyed; exec after it raises SandboxGone")


async def main() -> None:
    async with AsyncClient(config, envd_url=url) as c:
        sid = await c.create("quickstart-async")
        rs = await asyncio.gather(*(c.exec(sid, f"echo {i}") for i in range(4)))
        assert [r.stdout for r in rs] == ["0\n", "1\n", "2\n", "3\n"]
        task = asyncio.ensure_future(c.exec(sid, "touch /tmp/started; sleep 300"))
        while await c.stat(sid, "/tmp/started") is None:
            await asyncio.sleep(0.02)
        task.cancel()  # aborts the call on the server; the task ends once the command is killed
        (outcome,) = await asyncio.gather(task, return_exceptions=True)
        assert isinstance(outcome, asyncio.CancelledError)
        assert (await c.exec(sid, "pgrep -f 'sleep 30[0]' || true")).stdout == ""
        await c.destroy(sid)
        print("asyncio: task cancelled, command killed")


asyncio.run(main())
