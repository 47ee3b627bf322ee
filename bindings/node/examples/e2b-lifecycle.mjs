// E2B's docs, "Sandbox lifecycle: change sandbox timeout during runtime" and "Retrieve sandbox
// information", with only the import changed.
import { Sandbox } from 'sandbox-e2b'

// Create sandbox with and keep it running for 60 seconds.
const sandbox = await Sandbox.create({ timeoutMs: 60_000 })
// Change the sandbox timeout to 30 seconds.
// 🚨 The new timeout will be measured from now, not from the start of the sandbox.
await sandbox.setTimeout(30_000)

// Retrieve sandbox information.
const info = await sandbox.getInfo()
console.log(info)
