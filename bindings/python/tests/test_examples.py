"""The five examples ported from E2B's README and docs (examples/e2b/), each run
as a script against fake-e2b, configured only by E2B's variables
(E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL) and E2B_TEMPLATE."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

from fake import Fake

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples", "e2b")
fake: Fake


def setUpModule() -> None:
    global fake
    if not os.environ.get("SANDBOX_E2B_BIN"):
        raise RuntimeError("set SANDBOX_E2B_BIN to the sandbox-e2b binary")
    fake = Fake("--sandbox-disk-mb", os.environ.get("ITEST_SANDBOX_DISK_MB", "64"))


def tearDownModule() -> None:
    fake.stop()


def run(name: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("E2B_", "SANDBOX_E2B_CONFIG"))}
    env.update(E2B_API_KEY="e2b_py_test", E2B_API_URL=fake.url, E2B_SANDBOX_URL=fake.url,
               E2B_TEMPLATE="capybara-sandbox", PYTHONPATH=os.path.join(HERE, "..", "src"))
    p = subprocess.run([sys.executable, "-W", "error::ResourceWarning", os.path.join(EXAMPLES, name)], env=env,
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"{name} exited {p.returncode}: {p.stderr}")
    return p.stdout


ID = r"[0-9a-z]{20,}"


class ExamplesTest(unittest.TestCase):
    def test_hello(self) -> None:
        self.assertEqual(run("hello.py"), "Hello from E2B!\n\n")

    def test_streaming(self) -> None:
        self.assertEqual(run("streaming.py"),
                         "hello\n\nworld\n\n"
                         "CommandResult(stderr='', stdout='hello\\nworld\\n', exit_code=0, error=None, "
                         "truncated=False)\n")

    def test_background(self) -> None:
        self.assertEqual(run("background.py"), "hello\n\nworld\n\n")

    def test_connect(self) -> None:
        self.assertRegex(run("connect.py"), rf'^Running in sandbox {ID} as "sandbox"\n$')

    def test_persistence(self) -> None:
        out = run("persistence.py")
        m = re.fullmatch(rf"Sandbox created ({ID})\nSandbox paused \1\nConnected to the sandbox \1\n", out)
        self.assertIsNotNone(m, out)


if __name__ == "__main__":
    unittest.main()
