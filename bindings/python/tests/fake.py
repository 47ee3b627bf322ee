"""Start and stop a fake-e2b for the tests (FAKE_E2B: its path)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time

LISTEN_RE = re.compile(rb"fake-e2b listening on (http://127\.0\.0\.1:\d+)")


class Fake:
    def __init__(self, *extra: str) -> None:
        path = os.environ.get("FAKE_E2B")
        if not path:
            raise RuntimeError("set FAKE_E2B to the fake-e2b binary")
        self.state = tempfile.mkdtemp(prefix="py-fake-e2b-")
        self.proc = subprocess.Popen([path, "--port", "0", "--state-dir", self.state, "--ephemeral", "--quiet",
                                      "--api-key", "e2b_py_test", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        out = b""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            out += line
            m = LISTEN_RE.search(out)
            if m:
                self.url = m.group(1).decode()
                break
            if not line or time.monotonic() > deadline:
                raise RuntimeError("fake-e2b did not start: " + out.decode(errors="replace"))

    def config(self, **extra: object) -> dict:
        return {"apiKey": "e2b_py_test", "template": "capybara-sandbox", "apiUrl": self.url, **extra}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.state, ignore_errors=True)
