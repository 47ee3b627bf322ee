// Sandbox: the official `e2b` SDK's shape (2.51.0: Sandbox.create / connect /
// list / kill, sbx.commands, sbx.files, pause, setTimeout, getInfo, getMetrics,
// getHost, isRunning, pty, E2B's error classes) over the same engine as
// createE2BSandbox: one `sandbox-e2b serve` child per connection config
// (bindings/protocol/methods.md). What E2B has and serve does not yet is left
// out, not faked; bindings/MIGRATING.md lists every call and difference.
import { randomUUID } from 'node:crypto'
import { Client } from './client.js'
import {
  CommandExitError,
  FileNotFoundError,
  InvalidArgumentError,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
  toE2BError,
} from './e2b-errors.js'
import { bytesOf, dataToWire } from './types.js'

// E2B's default is 'base'; the engine runs commands as its own user in its own template
// (templates/capybara-sandbox), so Sandbox.create() without one takes E2B_TEMPLATE, else that.
const DEFAULT_TEMPLATE = 'capybara-sandbox'
const DEFAULT_TIMEOUT_MS = 300_000 // E2B's sandbox timeout
const DEFAULT_COMMAND_TIMEOUT_MS = 60_000 // E2B's command timeout
const NO_TIMEOUT_MS = Number.MAX_SAFE_INTEGER // E2B's 0: no limit
// E2B keeps no cap on output or reads; the engine always has one (a result lives in memory).
const DEFAULT_MAX_OUTPUT_BYTES = 64 << 20
const DEFAULT_MAX_READ_BYTES = 64 << 20

// ---- connection: one Client (one serve child) per distinct config ----------------------

const clients = new Map()
// Sandboxes this process paused and did not resume since: a command stream of one that breaks
// broke because of the pause (said as code 'paused', not curl's words).
const paused = new Set()
// Handles of the commands this process started and still waits for, by sandbox id and pid.
const live = new Map()
const liveKey = (sbx, pid) => `${sbx.sandboxId}:${pid}`

// timeoutMs: the sandbox's lifetime. The engine connects before each command or file call (as
// the seed does), which sets the sandbox's end to now + the config's timeoutSeconds (60..86400):
// that is this timeout, so a call never shortens or stretches it past what was asked.
function resolveConn(opts = {}, template, timeoutMs = DEFAULT_TIMEOUT_MS) {
  const env = process.env
  const apiKey = opts.apiKey ?? env.E2B_API_KEY
  const domain = opts.domain ?? env.E2B_DOMAIN ?? 'e2b.app'
  const apiUrl = opts.apiUrl ?? env.E2B_API_URL ?? `https://api.${domain}`
  const sandboxUrl = opts.sandboxUrl ?? env.E2B_SANDBOX_URL
  const tpl = template ?? env.E2B_TEMPLATE ?? DEFAULT_TEMPLATE
  const timeoutSeconds = Math.min(86400, Math.max(60, Math.ceil(timeoutMs / 1000)))
  const key = JSON.stringify([apiKey ?? null, apiUrl, domain, sandboxUrl ?? null, tpl, timeoutSeconds, opts.bin ?? null])
  let client = clients.get(key)
  if (!client) {
    // allowOpenEgress: E2B's sandboxes reach the internet unless told otherwise.
    const config = { apiUrl, domain, template: tpl, timeoutSeconds, allowOpenEgress: true }
    if (apiKey !== undefined) config.apiKey = apiKey
    client = new Client({ config, envdUrl: sandboxUrl, log: opts.logger, bin: opts.bin })
    clients.set(key, client)
  }
  return { client, domain, conn: { apiKey, domain, apiUrl, sandboxUrl, logger: opts.logger, bin: opts.bin } }
}

// ---- one call: signal, requestTimeoutMs, E2B's error classes ----------------------------

function withTimeout(opts) {
  const signal = opts?.signal
  const ms = opts?.requestTimeoutMs
  if (!ms) return { signal, done: () => {} }
  const ac = new AbortController()
  const t = setTimeout(() => ac.abort(new TimeoutError(`Request timed out after ${ms} ms (requestTimeoutMs)`)), ms)
  t.unref?.()
  if (signal) {
    if (signal.aborted) ac.abort(signal.reason)
    else signal.addEventListener('abort', () => ac.abort(signal.reason), { once: true })
  }
  return { signal: ac.signal, done: () => clearTimeout(t) }
}

async function rpc(client, method, params, opts, extra = {}) {
  const { signal, done } = withTimeout(opts)
  signal?.throwIfAborted()
  try {
    return await client.call(method, params, { signal, ...extra })
  } catch (e) {
    if (signal?.aborted && e instanceof SandboxError && e.code === 'aborted') throw signal.reason
    throw toE2BError(e)
  } finally {
    done()
  }
}

function clean(o) {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k]
  return o
}

// E2B's users: 'user' (the template's default) and 'root'; the engine's 'sandbox' and 'root'.
function userToWire(user) {
  if (user === undefined || user === 'user') return undefined
  if (user === 'root') return 'root'
  throw new InvalidArgumentError(`user must be 'user' or 'root' (this engine has no other users), not ${JSON.stringify(user)}`)
}

function dateOf(s) {
  if (s === null || s === undefined) return undefined
  // RFC 3339 with 0..9 fraction digits: milliseconds, as E2B's SDK keeps them
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(s)
  if (!m) return new Date(s)
  const ms = m[2] ? m[2].slice(0, 3).padEnd(3, '0') : '000'
  return new Date(`${m[1]}.${ms}${m[3]}`)
}

function sandboxInfoOf(s) {
  return {
    sandboxId: s.id,
    templateId: s.template_id,
    startedAt: dateOf(s.started_at),
    endAt: dateOf(s.end_at),
    state: s.state,
  }
}

function entryInfoOf(e) {
  return {
    name: bytesOf(e, 'name').toString('utf8'),
    type: e.type === 'other' ? undefined : e.type,
    path: bytesOf(e, 'path').toString('utf8'),
    size: e.size,
    mode: e.mode,
    permissions: e.permissions,
    owner: e.owner,
    group: e.group,
    modifiedTime: dateOf(e.mtime),
    symlinkTarget: e.symlink_target === null && e.symlink_target_b64 === undefined ? undefined : bytesOf(e, 'symlink_target').toString('utf8'),
    metadata: undefined,
  }
}

// E2B resolves a relative path against the user's home: the engine's user's is /workspace,
// root's /root.
function absPath(p, user) {
  if (typeof p !== 'string' || p.startsWith('/')) return p
  const home = userToWire(user) === 'root' ? '/root' : '/workspace'
  return p === '' || p === '.' ? home : `${home}/${p.replace(/^\.\//, '')}`
}

const basename = (p) => p.replace(/\/+$/, '').split('/').pop()
const joinPath = (dir, name) => (dir.endsWith('/') ? dir + name : `${dir}/${name}`)

async function toWireData(data) {
  if (typeof data === 'string' || data instanceof Uint8Array || data instanceof ArrayBuffer) return dataToWire(data)
  if (typeof Blob !== 'undefined' && data instanceof Blob) return dataToWire(new Uint8Array(await data.arrayBuffer()))
  if (data && typeof data.getReader === 'function') {
    const parts = []
    const reader = data.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      parts.push(typeof value === 'string' ? Buffer.from(value) : Buffer.from(value))
    }
    return dataToWire(new Uint8Array(Buffer.concat(parts)))
  }
  throw new InvalidArgumentError('data must be a string, an ArrayBuffer, a Uint8Array, a Blob or a ReadableStream')
}

// ---- commands --------------------------------------------------------------------------

// A stream's text: decoded without splitting a UTF-8 character, kept and passed to the callback.
class TextSink {
  constructor(cb) {
    this.cb = cb
    this.dec = new TextDecoder('utf-8')
    this.text = ''
    this.muted = false
    this.taps = new Set() // sinks of handles that commands.connect() attached to this command
  }
  push(bytes) {
    for (const t of this.taps) t.push(bytes)
    if (!this.muted) this.add(this.dec.decode(bytes, { stream: true }))
  }
  end() {
    if (!this.muted) this.add(this.dec.decode())
  }
  add(s) {
    if (!s) return
    this.text += s
    this.cb?.(s)
  }
}

function outputTo(out, err) {
  return (method, p) => {
    if (method !== 'output') return
    ;(p.stream === 'stderr' ? err : out).push(bytesOf(p, 'data'))
  }
}

// serve's exec result as E2B's CommandResult (+ truncated when the cap cut the output).
function commandResultOf(r, stdout, stderr) {
  const killed = r.exit_code === null || r.exit_code === undefined
  const exitCode = killed ? -1 : r.exit_code
  const res = {
    exitCode,
    error: killed ? 'signal: killed' : exitCode === 0 ? undefined : `exit status ${exitCode}`,
    stdout,
    stderr,
  }
  if (r.truncated) res.truncated = true
  return res
}

function commandTimeout(ms) {
  return new TimeoutError(
    `The command did not end in ${ms} ms (timeoutMs); it was killed with its whole process tree. Pass a larger 'timeoutMs', or 0 for none.`,
  )
}

// pid: a background command's; undefined: a foreground one (its pid is in commands.list()).
function pausedError(id, pid) {
  const what = pid === undefined ? 'the command' : `command ${pid}`
  const then = pid === undefined ? 'commands.connect(pid) (pid from commands.list())' : `handle.wait() again or commands.connect(${pid})`
  return new SandboxError(
    `sandbox ${id} was paused while ${what} ran; it goes on after a resume: Sandbox.connect(id), then ${then} for the rest of its output and its exit code`,
    { code: 'paused' },
  )
}

function isStreamBreak(e) {
  return e instanceof SandboxError && (e.code === 'network' || e.code === 'protocol')
}

// A running command (E2B's CommandHandle): pid, stdout / stderr so far, exitCode once it
// ended, wait(), kill(), sendStdin(), closeStdin(), disconnect().
export class CommandHandle {
  // out / err: the sinks an exec's output notifications already feed (else new ones).
  constructor(sbx, pid, { onStdout, onStderr, out, err, unroute, maxOutputBytes, timeoutMs, stdin, follow }) {
    this.pid = pid
    this._sbx = sbx
    this._out = out ?? new TextSink(onStdout)
    this._err = err ?? new TextSink(onStderr)
    this._unroute = unroute ?? (() => {})
    this._max = maxOutputBytes
    this._timeoutMs = timeoutMs
    this._stdin = stdin
    this._result = undefined
    this._error = undefined
    this._ac = null
    if (follow) this._follow(follow)
    else {
      live.set(liveKey(sbx, pid), this)
      this._start()
    }
  }

  // A command this process started already streams to its first handle (serve sends a command's
  // output once): another handle taps that stream from now on and ends with it.
  _follow(orig) {
    this._orig = orig
    orig._out.taps.add(this._out)
    orig._err.taps.add(this._err)
    this._wait = orig._wait.then(
      () => {
        this._out.end()
        this._err.end()
        this._result = { ...orig._result, stdout: this._out.text, stderr: this._err.text }
      },
      (e) => {
        throw e
      },
    )
    this._wait.catch((e) => {
      this._error = e
    })
  }

  _restartIfPaused() {
    if (this._error?.code !== 'paused' || paused.has(this._sbx.sandboxId)) return
    if (this._orig) {
      this._orig._restartIfPaused()
      this._follow(this._orig)
    } else this._start()
  }

  _start() {
    const sbx = this._sbx
    const ac = new AbortController()
    this._ac = ac
    this._error = undefined
    const params = clean({ id: sbx.sandboxId, pid: this.pid, max_output_bytes: this._max, stream: true })
    const toSinks = outputTo(this._out, this._err)
    // serve says "attached" once an attach by pid is live (a command it did not start)
    this._attached = new Promise((resolve) => (this._onAttached = resolve))
    const onNotify = (method, p) => (method === 'attached' ? this._onAttached() : toSinks(method, p))
    this._wait = rpc(sbx._client, 'wait', params, { signal: ac.signal }, { onNotify }).then(
      (r) => {
        this._out.end()
        this._err.end()
        this._unroute()
        live.delete(liveKey(sbx, this.pid))
        if (r.timed_out) throw commandTimeout(this._timeoutMs)
        this._result = commandResultOf(r, this._out.text, this._err.text)
      },
      (e) => {
        if (isStreamBreak(e) && paused.has(sbx.sandboxId)) e = pausedError(sbx.sandboxId, this.pid)
        else if (!(e instanceof SandboxError && e.code === 'paused')) {
          this._unroute()
          if (!ac.signal.aborted) live.delete(liveKey(sbx, this.pid))
        }
        throw e
      },
    )
    this._wait.catch((e) => {
      this._error = e
    })
  }

  get stdout() {
    return this._out.text
  }
  get stderr() {
    return this._err.text
  }
  get exitCode() {
    return this._result?.exitCode
  }
  get error() {
    return this._result?.error
  }

  // The result once it ends; a non-zero exit is a CommandExitError. After a pause broke the
  // stream (a SandboxError of code 'paused') and the sandbox was resumed, wait() attaches anew.
  async wait() {
    const id = this._sbx.sandboxId
    if (this._error?.code === 'paused' && paused.has(id)) {
      // resumed by another process? info does not resume it (a wait's attach would)
      if ((await rpc(this._sbx._client, 'info', { id })).state === 'running') paused.delete(id)
    }
    this._restartIfPaused()
    await this._wait.catch(() => {})
    if (this._error) throw this._error
    if (this._result.exitCode !== 0) throw new CommandExitError(this._result)
    return this._result
  }

  // Stop receiving output (stdout / stderr stay as they are); the command goes on and
  // commands.connect(pid) follows it again. serve streams a command it started to that start
  // only, so this process keeps reading it underneath.
  async disconnect() {
    this._out.muted = this._err.muted = true
    if (this._orig) {
      this._orig._out.taps.delete(this._out)
      this._orig._err.taps.delete(this._err)
    }
  }

  async kill() {
    return this._sbx.commands.kill(this.pid)
  }

  async sendStdin(data, opts) {
    if (!this._stdin) throw new SandboxError('Sending stdin is not supported for this command handle: start it with { stdin: true }.')
    return this._sbx.commands.sendStdin(this.pid, data, opts)
  }

  async closeStdin(opts) {
    if (!this._stdin) throw new SandboxError('Closing stdin is not supported for this command handle: start it with { stdin: true }.')
    return this._sbx.commands.closeStdin(this.pid, opts)
  }
}

class Commands {
  constructor(sbx) {
    this._sbx = sbx
  }

  // run(cmd, { background, cwd, user, envs, onStdout, onStderr, stdin, timeoutMs,
  // requestTimeoutMs, signal, maxOutputBytes, tag }).
  async run(cmd, opts = {}) {
    const sbx = this._sbx
    const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    const params = clean({
      id: sbx.sandboxId,
      command: cmd,
      cwd: opts.cwd,
      env: opts.envs,
      timeout_ms: timeoutMs === 0 ? NO_TIMEOUT_MS : timeoutMs,
      max_output_bytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      tag: opts.tag,
      user: userToWire(opts.user),
    })
    const out = new TextSink(opts.onStdout)
    const err = new TextSink(opts.onStderr)
    if (opts.background) {
      Object.assign(params, { background: true, stream: true, stdin_open: opts.stdin ? true : undefined })
      clean(params)
      const { result, unroute } = await rpc(sbx._client, 'exec', params, { signal: opts.signal, requestTimeoutMs: opts.requestTimeoutMs }, {
        onNotify: outputTo(out, err),
        routeNotify: true,
      })
      return new CommandHandle(sbx, result.pid, {
        out,
        err,
        unroute,
        maxOutputBytes: params.max_output_bytes,
        timeoutMs,
        stdin: !!opts.stdin,
      })
    }
    if (opts.stdin) throw new InvalidArgumentError('stdin: true needs background: true here (then handle.sendStdin)')
    params.stream = true
    let r
    try {
      r = await rpc(sbx._client, 'exec', params, { signal: opts.signal }, { onNotify: outputTo(out, err) })
    } catch (e) {
      if (isStreamBreak(e) && paused.has(sbx.sandboxId)) throw pausedError(sbx.sandboxId)
      throw e
    }
    out.end()
    err.end()
    if (r.aborted && opts.signal?.aborted) throw opts.signal.reason
    if (r.timed_out) throw commandTimeout(timeoutMs)
    const res = commandResultOf(r, out.text, err.text)
    if (res.exitCode !== 0) throw new CommandExitError(res)
    return res
  }

  // The running commands: [{ pid, tag, cmd, args, cwd }] (no envs: serve's ps has none).
  async list(opts) {
    const r = await rpc(this._sbx._client, 'ps', { id: this._sbx.sandboxId }, opts)
    return r.processes.map((p) => clean({ pid: p.pid, tag: p.tag ?? undefined, cmd: p.cmd, args: p.args, cwd: p.cwd ?? undefined }))
  }

  // Kill a command and its whole tree: true, or false when no such command runs.
  async kill(pid, opts) {
    const running = (await this.list(opts)).some((p) => p.pid === pid)
    if (!running) return false
    await rpc(this._sbx._client, 'kill_process', { id: this._sbx.sandboxId, pid }, opts)
    return true
  }

  // Attach to a running command by pid: its output from now on, and its end.
  async connect(pid, opts = {}) {
    if (!Number.isInteger(pid) || pid <= 0) throw new InvalidArgumentError('pid must be a positive integer')
    const running = (await this.list(opts)).some((p) => p.pid === pid)
    if (!running) throw new SandboxError(`Process with pid ${pid} not found`, { code: 'not_found' })
    const orig = live.get(liveKey(this._sbx, pid))
    const follow = orig && orig._sbx._client === this._sbx._client ? orig : undefined
    const h = new CommandHandle(this._sbx, pid, {
      onStdout: opts.onStdout,
      onStderr: opts.onStderr,
      maxOutputBytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      timeoutMs: opts.timeoutMs,
      follow,
    })
    // as E2B's connect: resolved once the stream is live (or the command already ended), when the
    // engine says so (initialize's notifications; an older one: at once)
    const init = await this._sbx._client.info()
    if (!follow && init.notifications?.includes('attached')) await Promise.race([h._attached, h._wait.catch(() => {})])
    return h
  }

  // Only commands started here with { background: true, stdin: true } (serve keeps their pipes).
  async sendStdin(pid, data, opts) {
    await rpc(this._sbx._client, 'send_stdin', { id: this._sbx.sandboxId, pid, ...dataToWire(data) }, opts)
  }

  async closeStdin(pid, opts) {
    await rpc(this._sbx._client, 'close_stdin', { id: this._sbx.sandboxId, pid }, opts)
  }

  // ---- the engine's, not E2B's ----
  // Kill every command started with one of these tags (commands.run's `tag`), trees too.
  async killTagged(tags, opts) {
    await rpc(this._sbx._client, 'kill_tagged', { id: this._sbx.sandboxId, tags: [...tags] }, opts)
  }

  // Kill every command of the sandbox, trees too.
  async killAll(opts) {
    await rpc(this._sbx._client, 'kill_all', { id: this._sbx.sandboxId }, opts)
  }
}

// ---- terminals (E2B's sbx.pty, serve's pty_*) ------------------------------------------

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

class Pty {
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

// ---- files -----------------------------------------------------------------------------

class Filesystem {
  constructor(sbx) {
    this._sbx = sbx
  }

  _rpc(method, params, opts) {
    return rpc(this._sbx._client, method, { id: this._sbx.sandboxId, ...params }, opts)
  }

  async _pathInfo(path, opts) {
    return this._rpc('path_info', clean({ path, user: userToWire(opts?.user) }), opts)
  }

  async _notFound(path, opts) {
    const i = await this._pathInfo(path, opts)
    if (i.exists === false) return new FileNotFoundError(`file or directory '${path}' not found`)
    if (i.type === 'dir') return new InvalidArgumentError(`path '${path}' is a directory`)
    return new SandboxError(`cannot read '${path}'`)
  }

  // read(path, { format: 'text' | 'bytes' | 'blob' | 'stream', maxBytes }) as the sandbox user.
  async read(path, opts = {}) {
    path = absPath(path, opts.user)
    if (userToWire(opts.user) === 'root') throw new InvalidArgumentError("files.read as 'root' is not in serve yet: read as 'user', or run `cat` with commands.run(..., { user: 'root' })")
    const r = await this._rpc('read_file', { path, max_bytes: opts.maxBytes ?? DEFAULT_MAX_READ_BYTES }, opts)
    if (!r.exists) throw await this._notFound(path, opts)
    if (r.truncated && opts.maxBytes === undefined) {
      throw new SandboxError(`file '${path}' is larger than ${DEFAULT_MAX_READ_BYTES} bytes: pass { maxBytes } to read a prefix`, { code: 'too_large' })
    }
    const bytes = bytesOf(r, 'content')
    switch (opts.format ?? 'text') {
      case 'text':
        return typeof r.content === 'string' ? r.content : bytes.toString('utf8')
      case 'bytes':
        return new Uint8Array(bytes)
      case 'blob':
        return new Blob([bytes])
      case 'stream':
        return new ReadableStream({
          start(c) {
            if (bytes.length) c.enqueue(new Uint8Array(bytes))
            c.close()
          },
        })
      default:
        throw new InvalidArgumentError(`format must be 'text', 'bytes', 'blob' or 'stream'`)
    }
  }

  // write(path, data, opts) → { name, type: 'file', path }; write([{ path, data }], opts) → [...].
  async write(pathOrFiles, dataOrOpts, opts) {
    const many = Array.isArray(pathOrFiles)
    const o = (many ? dataOrOpts : opts) ?? {}
    const files = (many ? pathOrFiles : [{ path: pathOrFiles, data: dataOrOpts }]).map((f) => ({ path: absPath(f.path, o.user), data: f.data }))
    if (typeof pathOrFiles !== 'string' && !many) throw new Error('Path or files are required')
    if (o.metadata && Object.keys(o.metadata).length) throw new InvalidArgumentError('file metadata (user.e2b.* attributes) is not in serve yet')
    if (files.length === 0) return []
    // one upload for them all (serve's write_files), as E2B's write of many files
    const wire = []
    for (const f of files) wire.push({ path: f.path, ...(await toWireData(f.data)) })
    await this._rpc('write_files', clean({ files: wire, user: userToWire(o.user) }), o)
    const out = files.map((f) => ({ path: f.path, name: basename(f.path), type: 'file', metadata: undefined })) // E2B's WriteInfo
    return many ? out : out[0]
  }

  async writeFiles(files, opts) {
    return this.write(files, opts)
  }

  // list(path, { depth = 1, user }) → EntryInfo[] (sorted by name; depth > 1: each directory's
  // entries after it).
  async list(path, opts = {}) {
    path = absPath(path, opts.user)
    const depth = opts.depth ?? 1
    if (typeof depth === 'number' && depth < 1) throw new InvalidArgumentError('depth should be at least one')
    const info = await this._pathInfo(path, opts)
    if (info.exists === false) throw new FileNotFoundError(`directory '${path}' not found`)
    if (info.type !== 'dir') throw new InvalidArgumentError(`path '${path}' is not a directory`)
    const out = []
    const walk = async (dir, level) => {
      const r = await this._rpc('list_dir', { path: dir }, opts)
      if (r.exists === false) return
      const names = r.entries.map((e) => bytesOf(e, 'name').toString('utf8'))
      const infos = await Promise.all(names.map((n) => this._pathInfo(joinPath(dir, n), opts)))
      for (const i of infos) {
        if (i.exists === false || i.type === 'other') continue
        const e = entryInfoOf(i)
        out.push(e)
        if (e.type === 'dir' && level < depth) await walk(e.path, level + 1)
      }
    }
    await walk(path, 1)
    return out
  }

  async exists(path, opts) {
    path = absPath(path, opts?.user)
    return (await this._pathInfo(path, opts)).exists !== false
  }

  async getInfo(path, opts) {
    path = absPath(path, opts?.user)
    const i = await this._pathInfo(path, opts)
    if (i.exists === false) throw new FileNotFoundError(`file or directory '${path}' not found`)
    return entryInfoOf(i)
  }

  async makeDir(path, opts) {
    path = absPath(path, opts?.user)
    return (await this._rpc('make_dir', clean({ path, user: userToWire(opts?.user) }), opts)).created
  }

  async rename(oldPath, newPath, opts) {
    oldPath = absPath(oldPath, opts?.user)
    newPath = absPath(newPath, opts?.user)
    const r = await this._rpc('rename', clean({ from: oldPath, to: newPath, user: userToWire(opts?.user) }), opts)
    if (r.exists === false) throw new FileNotFoundError(`file or directory '${oldPath}' not found`)
    return entryInfoOf(r)
  }

  // watchDir(path, onEvent, { recursive, user, timeoutMs = 60000 (0: none), onExit }) resolves
  // once the watch is live (serve's watch_started); events are { name, type } with E2B's
  // type names ('create', 'write', 'remove', 'rename', 'chmod').
  async watchDir(path, onEvent, opts = {}) {
    path = absPath(path, opts.user)
    const sbx = this._sbx
    const ac = new AbortController()
    let timedOut = false
    const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    let onStarted
    const started = new Promise((r) => (onStarted = r))
    const onNotify = (method, p) => {
      if (method === 'watch_started') onStarted()
      else if (method === 'watch_event') onEvent({ name: bytesOf(p, 'name').toString('utf8'), type: p.op })
    }
    const params = clean({ id: sbx.sandboxId, path, recursive: opts.recursive || undefined, user: userToWire(opts.user) })
    const call = rpc(sbx._client, 'watch', params, { signal: ac.signal }, { onNotify })
    let timer
    // a cancel (stop, the timeout) ends serve's watch with a result
    const timeoutError = () => new TimeoutError(`The watch of ${path} ended after ${timeoutMs} ms (timeoutMs); pass 0 for none`)
    const ended = call.then(
      () => (timedOut ? timeoutError() : undefined),
      (e) => {
        if (timedOut) return timeoutError()
        if (ac.signal.aborted) return undefined
        return watchError(e, path)
      },
    )
    const exited = ended.then(async (err) => {
      clearTimeout(timer)
      await opts.onExit?.(err)
    })
    const first = await Promise.race([started.then(() => null), ended.then((err) => err ?? new SandboxError(`the watch of ${path} ended before it started`))])
    if (first) throw first
    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        timedOut = true
        ac.abort()
      }, timeoutMs)
      timer.unref?.()
    }
    return new WatchHandle(() => ac.abort(), exited)
  }

  async remove(path, opts) {
    path = absPath(path, opts?.user)
    await this._rpc('remove', clean({ path, user: userToWire(opts?.user) }), opts)
  }
}

// A watch's failure as E2B's class: the check's "no such directory" is a FileNotFoundError,
// "not a directory" an InvalidArgumentError.
function watchError(e, path) {
  if (e instanceof SandboxError && e.code === 'sandbox') {
    if (/no such directory/.test(e.message)) return new FileNotFoundError(e.message)
    if (/not a directory/.test(e.message)) return new InvalidArgumentError(e.message)
  }
  return e
}

// E2B's WatchHandle: stop() ends the watch (onExit then runs without an error).
export class WatchHandle {
  constructor(stop, exited) {
    this._stop = stop
    this._exited = exited
  }
  async stop() {
    this._stop()
    await this._exited
  }
}

// ---- list ------------------------------------------------------------------------------

// E2B's SandboxPaginator over serve's list (which follows E2B's pages to the end): the first
// nextItems() takes the list once, later pages come from it. nextToken is an offset into it.
export class SandboxPaginator {
  constructor(opts = {}) {
    const q = opts.query ?? {}
    if (q.metadata && Object.keys(q.metadata).length) {
      throw new InvalidArgumentError('Sandbox.list: query.metadata is not in serve yet (its list filters by state only)')
    }
    if (opts.limit !== undefined && (!Number.isInteger(opts.limit) || opts.limit < 1)) throw new InvalidArgumentError('limit must be a positive integer')
    this._opts = opts
    this._limit = opts.limit ?? 100
    this._hasNext = true
    this._nextToken = opts.nextToken
    this._all = null
  }

  get hasNext() {
    return this._hasNext
  }
  get nextToken() {
    return this._nextToken
  }

  async nextItems(opts) {
    if (!this._hasNext) throw new Error('No more items to fetch')
    if (!this._all) {
      const q = this._opts.query ?? {}
      const states = q.state ?? ['running', 'paused']
      const state = states.includes('running') && states.includes('paused') ? 'any' : states[0] ?? 'any'
      const { client } = resolveConn(this._opts)
      const r = await rpc(client, 'list', { state, all: true }, { ...this._opts, ...opts })
      let all = r.map(sandboxInfoOf)
      if (q.template !== undefined) all = all.filter((s) => s.templateId === q.template)
      if (q.startedAfter !== undefined) all = all.filter((s) => s.startedAt && s.startedAt >= q.startedAfter)
      if (this._opts.order === 'asc') all.reverse()
      this._all = all
    }
    const from = this._nextToken === undefined ? 0 : Number(this._nextToken)
    if (!Number.isInteger(from) || from < 0) throw new InvalidArgumentError('nextToken is not one this paginator gave')
    const page = this._all.slice(from, from + this._limit)
    if (from + this._limit < this._all.length) this._nextToken = String(from + this._limit)
    else {
      this._nextToken = undefined
      this._hasNext = false
    }
    return page
  }
}

// ---- create options --------------------------------------------------------------------

function limitsOf(opts) {
  const net = opts.network
  if (net) {
    const known = new Set(['allowOut', 'denyOut'])
    for (const k of Object.keys(net)) {
      if (net[k] !== undefined && !known.has(k)) throw new InvalidArgumentError(`network.${k} is not in this engine (egress is none, an allowlist of hosts, or open)`)
    }
    const deny = net.denyOut ?? []
    const allow = net.allowOut ?? []
    if (allow.length || deny.length) {
      if (deny.length !== 1 || deny[0] !== '0.0.0.0/0') {
        throw new InvalidArgumentError("network: this engine takes allowOut with denyOut ['0.0.0.0/0'] (an allowlist), or denyOut ['0.0.0.0/0'] alone")
      }
      if (opts.allowInternetAccess === true) throw new InvalidArgumentError('allowInternetAccess: true contradicts denyOut 0.0.0.0/0')
      return allow.length ? { egress: 'allowlist', allow_hosts: [...allow] } : { egress: 'none' }
    }
  }
  return { egress: opts.allowInternetAccess === false ? 'none' : 'open' }
}

const UNSUPPORTED_CREATE = ['mcp', 'volumeMounts', 'iam', 'lifecycle']

// The engine's create takes a name and replaces a sandbox of the same name: each E2B-shape
// create gets one of its own (E2B's sandboxes have none).
function randomName() {
  return `e2b-${randomUUID()}`
}

// ---- Sandbox ---------------------------------------------------------------------------

export class Sandbox {
  // Use Sandbox.create / Sandbox.connect.
  constructor({ sandboxId, client, domain, conn }) {
    this.sandboxId = sandboxId
    this.sandboxDomain = domain
    this._client = client
    this._conn = conn
    this.commands = new Commands(this)
    this.files = new Filesystem(this)
    this.pty = new Pty(this)
  }

  // create(opts) or create(template, opts): { timeoutMs, metadata, envs, allowInternetAccess,
  // network: { allowOut, denyOut }, apiKey, domain, apiUrl, sandboxUrl, logger, signal,
  // requestTimeoutMs }.
  static async create(templateOrOpts, maybeOpts) {
    const template = typeof templateOrOpts === 'string' ? templateOrOpts : undefined
    const opts = (typeof templateOrOpts === 'string' ? maybeOpts : templateOrOpts) ?? {}
    for (const k of UNSUPPORTED_CREATE) if (opts[k] !== undefined) throw new InvalidArgumentError(`Sandbox.create: ${k} is not in this engine`)
    const tpl = template ?? opts.template ?? process.env.E2B_TEMPLATE ?? DEFAULT_TEMPLATE
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const { client, domain, conn } = resolveConn(opts, tpl, timeoutMs)
    const params = clean({
      name: randomName(),
      limits: limitsOf(opts),
      timeout_seconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
      env: opts.envs,
      metadata: opts.metadata,
    })
    const r = await rpc(client, 'create', params, opts)
    return new this({ sandboxId: r.id, client, domain, conn })
  }

  // A running or paused sandbox (a paused one is resumed), by id.
  static async connect(sandboxId, opts = {}) {
    const { client, domain, conn } = resolveConn(opts, undefined, opts.timeoutMs)
    await resumeOrThrow(client, sandboxId, opts)
    return new this({ sandboxId, client, domain, conn })
  }

  async connect(opts) {
    await resumeOrThrow(this._client, this.sandboxId, opts)
    return this
  }

  static list(opts) {
    return new SandboxPaginator(opts)
  }

  // true when it was found and killed, false when there was no such sandbox.
  static async kill(sandboxId, opts = {}) {
    return killById(resolveConn(opts).client, sandboxId, opts)
  }

  static async getInfo(sandboxId, opts = {}) {
    return sandboxInfoOf(await rpc(resolveConn(opts).client, 'info', { id: sandboxId }, opts))
  }

  static async setTimeout(sandboxId, timeoutMs, opts = {}) {
    await setTimeoutById(resolveConn(opts).client, sandboxId, timeoutMs, opts)
  }

  static async pause(sandboxId, opts = {}) {
    return pauseById(resolveConn(opts).client, sandboxId, opts)
  }

  static async getMetrics(sandboxId, opts = {}) {
    return metricsById(resolveConn(opts).client, sandboxId, opts)
  }

  async kill(opts) {
    return killById(this._client, this.sandboxId, opts)
  }

  async pause(opts) {
    return pauseById(this._client, this.sandboxId, opts)
  }

  async setTimeout(timeoutMs, opts) {
    await setTimeoutById(this._client, this.sandboxId, timeoutMs, opts)
  }

  async getInfo(opts) {
    return sandboxInfoOf(await rpc(this._client, 'info', { id: this.sandboxId }, opts))
  }

  async getMetrics(opts) {
    return metricsById(this._client, this.sandboxId, opts)
  }

  async isRunning(opts) {
    try {
      return (await rpc(this._client, 'info', { id: this.sandboxId }, opts)).state === 'running'
    } catch (e) {
      if (e instanceof SandboxNotFoundError) return false
      throw e
    }
  }

  // `${port}-${sandboxId}.${domain}`, as E2B's SDK makes it (no request).
  getHost(port) {
    return `${port}-${this.sandboxId}.${this.sandboxDomain}`
  }

  // ---- the engine's, not E2B's: the URL and traffic token serve's `host` gives ----
  async getHostInfo(port, opts) {
    const r = await rpc(this._client, 'host', { id: this.sandboxId, port }, opts)
    return { url: r.url, hostname: r.hostname, port: r.port, trafficToken: r.traffic_token ?? undefined }
  }
}

async function resumeOrThrow(client, id, opts) {
  const r = await rpc(client, 'resume', { id }, opts)
  if (r.status === 'gone') throw new SandboxNotFoundError(`Sandbox ${id} not found`)
  paused.delete(id)
}

async function killById(client, id, opts) {
  try {
    await rpc(client, 'info', { id }, opts)
  } catch (e) {
    if (e instanceof SandboxNotFoundError) return false
    throw e
  }
  await rpc(client, 'destroy', { id }, opts)
  paused.delete(id)
  return true
}

async function pauseById(client, id, opts) {
  const info = await rpc(client, 'info', { id }, opts)
  if (info.state === 'paused') return false
  paused.add(id)
  try {
    await rpc(client, 'suspend', { id }, opts)
  } catch (e) {
    paused.delete(id)
    throw e
  }
  return true
}

async function setTimeoutById(client, id, timeoutMs, opts) {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new InvalidArgumentError('timeoutMs must be a positive number of milliseconds')
  await rpc(client, 'set_timeout', { id, timeout_seconds: Math.ceil(timeoutMs / 1000) }, opts)
}

async function metricsById(client, id, opts = {}) {
  const secs = (d) => (d === undefined ? undefined : Math.floor(d.getTime() / 1000))
  const r = await rpc(client, 'metrics', clean({ id, start: secs(opts.start), end: secs(opts.end) }), opts)
  return r.metrics.map((m) => ({
    timestamp: new Date(m.timestamp_unix * 1000),
    cpuUsedPct: m.cpu_used_pct,
    cpuCount: m.cpu_count,
    memUsed: m.mem_used,
    memTotal: m.mem_total,
    memCache: m.mem_cache,
    diskUsed: m.disk_used,
    diskTotal: m.disk_total,
  }))
}

// End every serve child the Sandbox shape started (they also end with Node).
export function closeAll() {
  for (const c of clients.values()) c.close()
  clients.clear()
}

