# E2B's docs, "Streaming command output" (https://e2b.dev/docs/commands/streaming),
# with only the import changed.
from sandbox_e2b import Sandbox

sandbox = Sandbox.create()

result = sandbox.commands.run('echo hello; sleep 1; echo world', on_stdout=lambda data: print(data), on_stderr=lambda data: print(data))
print(result)
