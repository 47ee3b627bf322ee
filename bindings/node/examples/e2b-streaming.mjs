// E2B's docs, "Commands: streaming", with only the import changed: stdout and stderr as they
// arrive, then the result.
import { Sandbox } from 'sandbox-e2b'

const sandbox = await Sandbox.create()
const result = await sandbox.commands.run('echo hello; sleep 1; echo world', {
  onStdout: (data) => {
    console.log(data)
  },
  onStderr: (data) => {
    console.log(data)
  },
})
console.log(result)
