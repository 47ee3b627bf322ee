// sbx.commands (E2B's SDK: sandbox/commands): run, list, kill, connect, stdin; and the
// engine's killTagged / killAll.
import { CommandExitError, InvalidArgumentError, SandboxError } from '../e2b-errors.js'
import { dataToWire } from '../types.js'
import { CommandHandle, TextSink, commandResultOf, commandTimeout, isStreamBreak, outputTo, pausedError } from './commandHandle.js'
import {
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  NO_TIMEOUT_MS,
  clean,
  live,
  liveKey,
  paused,
  rpc,
  userToWire,
} from './connection.js'

export class Commands {
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
