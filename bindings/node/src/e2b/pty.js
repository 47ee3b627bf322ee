// sbx.pty (E2B's SDK: sandbox/commands/pty): terminals over serve's pty_* methods.
import { CommandExitError, InvalidArgumentError, SandboxError, TimeoutError } from '../e2b-errors.js'
import { bytesOf, dataToWire } from '../types.js'
import { DEFAULT_COMMAND_TIMEOUT_MS, clean, rpc, userToWire } from './connection.js'

// A terminal's handle: pid, wait() (exitCode; a non-zero end is a CommandExitError, as E2B's
// CommandHandle of a PTY), kill(), disconnect(). Its bytes go to onData as they come.
export class PtyHandle {
  constructor(sbx, pid, unroute) {
    this.pid = pid
    this.stdout = ''
    this.stderr = ''
    this._sbx = sbx
    this._unroute = unroute
    this._result = undefined
    this._error = undefined
    this._ac = new AbortController()
    this._wait = rpc(sbx._client, 'pty_wait', { id: sbx.sandboxId, pid }, { signal: this._ac.signal }).then(
      (r) => {
        unroute()
        if (r.timed_out) throw new TimeoutError(`The terminal ${pid} outlived its timeoutMs and was ended`)
        const killed = r.killed || r.exit_code === null
        const exitCode = killed ? -1 : r.exit_code
        this._result = { exitCode, error: killed ? 'signal: killed' : exitCode === 0 ? undefined : `exit status ${exitCode}`, stdout: '', stderr: '' }
      },
      (e) => {
        unroute()
        throw e
      },
    )
    this._wait.catch((e) => {
      this._error = e
    })
  }
  get exitCode() {
    return this._result?.exitCode
  }
  get error() {
    return this._result?.error
  }
  async wait() {
    await this._wait.catch(() => {})
    if (this._error) throw this._error
    if (this._result.exitCode !== 0) throw new CommandExitError(this._result)
    return this._result
  }
  async kill() {
    return this._sbx.pty.kill(this.pid)
  }
  // Stop receiving its bytes; the terminal goes on (pty.connect(pid) follows it again).
  async disconnect() {
    this._unroute()
    this._ac.abort()
  }
  async sendStdin() {
    throw new SandboxError('Sending stdin is not supported for this command handle: use pty.sendInput(pid, data).')
  }
}

function ptyNotify(onData) {
  return (method, p) => {
    if (method === 'output' && p.stream === 'pty') onData?.(new Uint8Array(bytesOf(p, 'data')))
  }
}

export class Pty {
  constructor(sbx) {
    this._sbx = sbx
  }

  // create({ cols, rows, onData, timeoutMs, user, envs, cwd }): `bash -i -l` in a terminal.
  async create(opts) {
    const sbx = this._sbx
    const envs = { ...(opts.envs ?? {}) }
    envs.TERM ??= 'xterm-256color'
    envs.LANG ??= 'C.UTF-8'
    envs.LC_ALL ??= 'C.UTF-8'
    const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    const params = clean({
      id: sbx.sandboxId,
      cols: opts.cols,
      rows: opts.rows,
      cwd: opts.cwd,
      env: envs,
      timeout_ms: timeoutMs,
      user: userToWire(opts.user),
    })
    const { result, unroute } = await rpc(sbx._client, 'pty_start', params, opts, { onNotify: ptyNotify(opts.onData), routeNotify: true })
    return new PtyHandle(sbx, result.pid, unroute)
  }

  // Follow a running terminal by pid: its bytes from now on, and its end.
  async connect(pid, opts = {}) {
    const sbx = this._sbx
    const { unroute } = await rpc(sbx._client, 'pty_attach', { id: sbx.sandboxId, pid }, opts, { onNotify: ptyNotify(opts.onData), routeNotify: true })
    return new PtyHandle(sbx, pid, unroute)
  }

  async sendInput(pid, data, opts) {
    await rpc(this._sbx._client, 'pty_input', { id: this._sbx.sandboxId, pid, ...dataToWire(data) }, opts)
  }

  async resize(pid, size, opts) {
    await rpc(this._sbx._client, 'pty_resize', { id: this._sbx.sandboxId, pid, cols: size.cols, rows: size.rows }, opts)
  }

  // true when it was killed; false when this process holds no such terminal.
  async kill(pid, opts) {
    try {
      await rpc(this._sbx._client, 'pty_kill', { id: this._sbx.sandboxId, pid }, opts)
      return true
    } catch (e) {
      if (e instanceof InvalidArgumentError && e.rpcCode === -32602) return false
      throw e
    }
  }
}
