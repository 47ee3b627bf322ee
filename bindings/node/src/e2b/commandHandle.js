// A running command (E2B's SDK: sandbox/commands/commandHandle): its output as text, its end,
// and what a pause of its sandbox does to it.
import { CommandExitError, SandboxError, TimeoutError } from '../e2b-errors.js'
import { bytesOf } from '../types.js'
import { clean, live, liveKey, paused, rpc } from './connection.js'

// A stream's text: decoded without splitting a UTF-8 character, kept and passed to the callback.
export class TextSink {
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

export function outputTo(out, err) {
  return (method, p) => {
    if (method !== 'output') return
    ;(p.stream === 'stderr' ? err : out).push(bytesOf(p, 'data'))
  }
}

// serve's exec result as E2B's CommandResult (+ truncated when the cap cut the output).
export function commandResultOf(r, stdout, stderr) {
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

export function commandTimeout(ms) {
  return new TimeoutError(
    `The command did not end in ${ms} ms (timeoutMs); it was killed with its whole process tree. Pass a larger 'timeoutMs', or 0 for none.`,
  )
}

// pid: a background command's; undefined: a foreground one (its pid is in commands.list()).
export function pausedError(id, pid) {
  const what = pid === undefined ? 'the command' : `command ${pid}`
  const then = pid === undefined ? 'commands.connect(pid) (pid from commands.list())' : `handle.wait() again or commands.connect(${pid})`
  return new SandboxError(
    `sandbox ${id} was paused while ${what} ran; it goes on after a resume: Sandbox.connect(id), then ${then} for the rest of its output and its exit code`,
    { code: 'paused' },
  )
}

export function isStreamBreak(e) {
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
