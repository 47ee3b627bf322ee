# E2B's docs, "Connect to running sandbox" (https://e2b.dev/docs/sandbox/connect),
# its two steps in one file, with only the import changed.
from sandbox_e2b import Sandbox

sbx = Sandbox.create()

# Get all running sandboxes
paginator = Sandbox.list()

# Get the ID of the sandbox you want to connect to
running_sandboxes = paginator.next_items()
if len(running_sandboxes) == 0:
    raise Exception("No running sandboxes found")

# Get the ID of the sandbox you want to connect to
sandbox_id = running_sandboxes[0].sandbox_id

# Connect to the sandbox
sandbox = Sandbox.connect(sandbox_id)

# Now you can use the sandbox as usual
# ...
r = sandbox.commands.run("whoami")
print(f"Running in sandbox {sandbox.sandbox_id} as \"{r.stdout.strip()}\"")
