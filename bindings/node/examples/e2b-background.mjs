// E2B's docs, "Commands: running commands in background", with only the import changed: the
// call returns a handle at once; kill() ends the command.
import { Sandbox } from 'sandbox-e2b'

const sandbox = await Sandbox.create()

// Start the command in the background
const command = await sandbox.commands.run('echo hello; sleep 10; echo world', {
  background: true,
  onStdout: (data) => {
    console.log(data)
  },
})

// Kill the command
await command.kill()
