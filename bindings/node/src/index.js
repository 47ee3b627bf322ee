// sandbox-e2b for Node: the sandbox@1 provider (createE2BSandbox, the seed's
// shapes) and the JSON-RPC client under it, both over `sandbox-e2b serve`.
export { createE2BSandbox } from './provider.js'
export { Client } from './client.js'
export { BridgeError, SandboxError, SandboxGoneError } from './errors.js'
export { findBinary } from './child.js'
