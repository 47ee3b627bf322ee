// E2B's README, "Start a sandbox and run commands", with only the import changed (E2B's
// package name → this one's). E2B_API_KEY (and, for fake-e2b, E2B_API_URL and
// E2B_SANDBOX_URL) configure it as they configure E2B's SDK.
import { Sandbox } from 'sandbox-e2b'

const sandbox = await Sandbox.create()
const result = await sandbox.commands.run('echo "Hello from E2B!"')
console.log(result.stdout) // Hello from E2B!
