"""``python -m sandbox_e2b --version``: this package's version, the engine it
would run (and from where: SANDBOX_E2B_BIN, PATH or bundled) and what that
engine says its version is."""
from __future__ import annotations

import subprocess
import sys
from typing import List, Optional

from . import __version__
from ._protocol import find_engine
from .errors import SandboxError


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["--version"]:
        print("usage: python -m sandbox_e2b --version", file=sys.stderr)
        return 2
    print(f"sandbox_e2b {__version__}")
    try:
        path, where = find_engine()
    except SandboxError as e:
        print(f"engine: {e}", file=sys.stderr)
        return 1
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        print(f"engine: {path} ({where}) cannot run: {e}", file=sys.stderr)
        return 1
    if out.returncode != 0:
        print(f"engine: {path} ({where}) --version exited {out.returncode}: {out.stderr.strip()}",
              file=sys.stderr)
        return 1
    print(f"engine: {path} ({where}): {out.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
