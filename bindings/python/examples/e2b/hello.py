# E2B's Python README, "Start a sandbox and run commands" (e2b-dev/E2B
# packages/python-sdk/README.md), with only the import changed.
from sandbox_e2b import Sandbox

with Sandbox.create() as sandbox:
    result = sandbox.commands.run('echo "Hello from E2B!"')
    print(result.stdout)  # Hello from E2B!
