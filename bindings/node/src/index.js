// sandbox-e2b for Node: the sandbox@1 provider (createE2BSandbox, the seed's
// shapes) and the JSON-RPC client under it, both over `sandbox-e2b serve`.
export { createE2BSandbox } from './provider.js'
export { Client } from './client.js'
export { BridgeError, SandboxError, SandboxGoneError } from './errors.js'
export { findBinary } from './child.js'
// E2B's own shape (the official `e2b` SDK's Sandbox, its handles and error classes).
export { CommandHandle, PtyHandle, Sandbox, Sandbox as default, SandboxPaginator, WatchHandle, closeAll } from './e2b/index.js'
export {
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  InvalidArgumentError,
  NotEnoughSpaceError,
  NotFoundError,
  RateLimitError,
  SandboxNotFoundError,
  TimeoutError,
} from './e2b-errors.js'
