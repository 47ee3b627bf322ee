// Find and run one long-lived `sandbox-e2b serve` child: SANDBOX_E2B_BIN (a
// path), else `sandbox-e2b` on PATH, else the engine prebuilt for this platform
// inside the package (prebuilds/<platform>-<arch>/, which scripts/package.sh
// puts in the npm tarball). Its stdin/stdout carry JSON-RPC, its stderr
// goes to the logger line by line. When it exits, calls in flight reject with
// a BridgeError and the next call starts a new child. The child never outlives
// Node: it reads EOF when Node's end of its stdin closes (also on a crash),
// aborts its calls (killing their remote commands) and exits.
import { spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BridgeError, SandboxError } from './errors.js'
import { RpcConnection } from './rpc.js'

const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url))

function executable(p) {
  try {
    accessSync(p, constants.X_OK)
    return true
  } catch {
    return false
  }
}

// root: the package's directory (tests pass another).
export function findBinary(env = process.env, root = PACKAGE_ROOT) {
  if (env.SANDBOX_E2B_BIN) return env.SANDBOX_E2B_BIN
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue
    const p = join(dir, 'sandbox-e2b')
    if (executable(p)) return p
  }
  const platform = `${process.platform}-${process.arch}`
  const bundled = join(root, 'prebuilds', platform, 'bin', 'sandbox-e2b')
  if (executable(bundled)) return bundled
  throw new SandboxError(
    `sandbox-e2b not found: set SANDBOX_E2B_BIN to the path of the sandbox-e2b binary, or put it on PATH (this package has no engine prebuilt for ${platform})`,
    { code: 'bridge' },
  )
}

// Start a child and return { rpc, child, exited }. log: { warn } for stderr lines; args:
// serve's options.
export function startChild({ bin, args = [], log, onNotification, env }) {
  const child = spawn(bin, ['serve', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: env ?? process.env,
  })
  let exited = false
  const ref = (on) => {
    for (const h of [child, child.stdin, child.stdout, child.stderr]) {
      if (on) h.ref?.()
      else h.unref?.()
    }
  }
  const rpc = new RpcConnection({
    write: (line) => child.stdin.write(line),
    onNotification,
    onBusy: (busy) => {
      if (!exited) ref(busy)
    },
  })
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (d) => rpc.feed(d))
  child.stderr.setEncoding('utf8')
  let errBuf = ''
  child.stderr.on('data', (d) => {
    errBuf += d
    let nl
    while ((nl = errBuf.indexOf('\n')) >= 0) {
      const line = errBuf.slice(0, nl)
      errBuf = errBuf.slice(nl + 1)
      if (line) log?.warn?.(line)
    }
  })
  child.stdin.on('error', () => {}) // EPIPE after a crash: reported through 'exit'
  const gone = (why) => {
    if (exited) return
    exited = true
    rpc.close(
      new BridgeError(
        `sandbox-e2b serve (${bin}) ${why} while the call was in flight; the next call starts a new one`,
      ),
    )
  }
  child.on('error', (e) =>
    gone(e.code === 'ENOENT' ? 'could not be started: no such file (set SANDBOX_E2B_BIN or PATH)' : `failed: ${e.message}`),
  )
  child.on('exit', (code, sig) => gone(sig ? `was killed by ${sig}` : `exited with status ${code}`))
  ref(false)
  return {
    rpc,
    child,
    get exited() {
      return exited
    },
    // End the child: closing stdin is a clean shutdown (calls aborted, exit 0).
    close() {
      if (!exited) child.stdin.end()
    },
  }
}
