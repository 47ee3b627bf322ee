// createE2BSandbox: the sandbox@1 provider with exactly the seed's method
// names, argument shapes and results, run by the C engine through one
// long-lived `sandbox-e2b serve` child.
import { Client } from './client.js'
import { SandboxError } from './errors.js'
import { bytesOf, dataToWire, execResultOf, limitsToWire } from './types.js'

function abortReason(signal) {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError')
}

// output notifications to the two sinks.
function notifyTo(out, err) {
  return (method, p) => {
    if (method !== 'output') return
    const sink = p.stream === 'stderr' ? err : out
    sink?.push(bytesOf(p, 'data'))
  }
}

// Decodes a stream's chunks into text without splitting a UTF-8 character.
function streamSink(cb) {
  if (typeof cb !== 'function') return undefined
  const dec = new TextDecoder('utf-8')
  return {
    push: (bytes) => {
      const s = dec.decode(bytes, { stream: true })
      if (s) cb(s)
    },
    end: () => {
      const s = dec.decode()
      if (s) cb(s)
    },
  }
}

function infoOf(s) {
  return {
    id: s.id,
    name: s.name,
    state: s.state,
    templateId: s.template_id,
    startedAt: s.started_at,
    endAt: s.end_at,
  }
}

export function createE2BSandbox(config, deps = {}, testOptions = {}) {
  const client = new Client({
    config,
    envdUrl: testOptions.envdUrl,
    log: deps.log,
    bin: testOptions.bin,
    env: testOptions.env,
    logLevel: testOptions.logLevel,
  })

  // One call with the seed's abort rules: an aborted signal throws its reason
  // before anything is sent; an abort while in flight cancels the call on the
  // server and rejects with the reason.
  const call = async (method, params, signal, opts = {}) => {
    signal?.throwIfAborted()
    try {
      return await client.call(method, params, { signal, ...opts })
    } catch (e) {
      if (signal?.aborted && e instanceof SandboxError && e.code === 'aborted') throw abortReason(signal)
      throw e
    }
  }
  const handleId = (h) => (h && typeof h === 'object' ? h.id : h)

  // Sandboxes this provider is suspending or suspended: a command stream of one that breaks
  // (network / protocol) broke because of the pause, said as code 'paused', not curl's words.
  const paused = new Set()
  const pausedError = (id, e, what) =>
    e instanceof SandboxError && (e.code === 'network' || e.code === 'protocol') && paused.has(id)
      ? new SandboxError(
          `sandbox ${id} was paused while ${what} ran; it goes on after a resume: resume(h), then attach(h, pid) for the rest of its output and its exit code`,
          { code: 'paused', rpcCode: e.rpcCode },
        )
      : e
  const waitFor = async (id, pid, params, signal, sinks) => {
    const [out, err] = sinks
    let r
    try {
      r = await call('wait', params, signal, params.stream ? { onNotify: notifyTo(out, err) } : {})
    } catch (e) {
      throw pausedError(id, e, `command ${pid}`)
    }
    out?.end()
    err?.end()
    return { ...execResultOf(r), aborted: r.aborted }
  }

  return {
    concurrentExec: true,

    async create({ name, limits, signal }) {
      const r = await call('create', { name, limits: limitsToWire(limits) }, signal)
      return { id: r.id }
    },
    async resume(h, signal) {
      const status = (await call('resume', { id: handleId(h) }, signal)).status
      paused.delete(handleId(h))
      return status
    },
    async suspend(h, signal) {
      const id = handleId(h)
      paused.add(id)
      await call('suspend', { id }, signal)
    },
    async destroy(h, signal) {
      await call('destroy', { id: handleId(h) }, signal)
    },
    async destroyByName(name, signal) {
      await call('destroy_by_name', { name }, signal)
    },
    async killAll(h, signal) {
      await call('kill_all', { id: handleId(h) }, signal)
    },
    async killTagged(h, tags, signal) {
      await call('kill_tagged', { id: handleId(h), tags: [...tags] }, signal)
    },
    // exec(h, { command, cwd, env, timeoutMs, maxOutputBytes, tag, signal,
    // onStdout, onStderr, stdin }): an abort after start resolves with the output so
    // far and exitCode null (the remote tree is killed first), as the seed does.
    async exec(h, args) {
      const out = streamSink(args.onStdout)
      const err = streamSink(args.onStderr)
      const params = {
        id: handleId(h),
        command: args.command,
        cwd: args.cwd,
        env: args.env,
        timeout_ms: args.timeoutMs,
        max_output_bytes: args.maxOutputBytes,
        tag: args.tag,
      }
      if (out || err) params.stream = true
      if (args.stdin !== undefined) {
        const d = dataToWire(args.stdin)
        if (d.data !== undefined) params.stdin = d.data
        else params.stdin_b64 = d.data_b64
      }
      for (const k of Object.keys(params)) if (params[k] === undefined) delete params[k]
      const onNotify =
        out || err
          ? (method, p) => {
              if (method !== 'output') return
              const sink = p.stream === 'stderr' ? err : out
              sink?.push(bytesOf(p, 'data'))
            }
          : undefined
      let r
      try {
        r = await call('exec', params, args.signal, { onNotify })
      } catch (e) {
        throw pausedError(params.id, e, 'the command')
      }
      out?.end()
      err?.end()
      return execResultOf(r)
    },
    // ---- not in the contract: the live-commands and listing capabilities ----

    // startCommand(h, { command, cwd, env, timeoutMs, maxOutputBytes, tag,
    // stdin: true, onStdout, onStderr, signal }) starts a background command
    // and returns { pid, wait(signal), sendStdin(data, signal),
    // closeStdin(signal), kill(signal) }; wait() resolves with exec's result.
    // The command is killed when the serve child ends (Node exits).
    async startCommand(h, args) {
      const id = handleId(h)
      const out = streamSink(args.onStdout)
      const err = streamSink(args.onStderr)
      const params = {
        id,
        command: args.command,
        cwd: args.cwd,
        env: args.env,
        timeout_ms: args.timeoutMs,
        max_output_bytes: args.maxOutputBytes,
        tag: args.tag,
        background: true,
        stdin_open: args.stdin ? true : undefined,
        stream: out || err ? true : undefined,
      }
      for (const k of Object.keys(params)) if (params[k] === undefined) delete params[k]
      const onNotify = (method, p) => {
        if (method !== 'output') return
        const sink = p.stream === 'stderr' ? err : out
        sink?.push(bytesOf(p, 'data'))
      }
      args.signal?.throwIfAborted()
      const { result, unroute } = await client.call('exec', params, { signal: args.signal, onNotify, routeNotify: true })
      const pid = result.pid
      return {
        pid,
        async wait(signal) {
          // stream: a wait that attaches anew (a pause broke the first stream) streams the rest
          const params = { id, pid, max_output_bytes: args.maxOutputBytes, stream: out || err ? true : undefined }
          for (const k of Object.keys(params)) if (params[k] === undefined) delete params[k]
          try {
            return await waitFor(id, pid, params, signal, [out, err])
          } finally {
            if (!signal?.aborted) unroute()
          }
        },
        async sendStdin(data, signal) {
          await call('send_stdin', { id, pid, ...dataToWire(data) }, signal)
        },
        async closeStdin(signal) {
          await call('close_stdin', { id, pid }, signal)
        },
        async kill(signal) {
          await call('kill_process', { id, pid }, signal)
        },
      }
    },
    // attach(h, pid, { onStdout, onStderr, maxOutputBytes }): a running command by pid (E2B's
    // commands.connect): one started by startCommand, by exec, by another client, or one whose
    // stream a pause broke (after resume). { pid, wait(signal), kill(signal) }; wait() resolves
    // with its result: the output from the attach on, and its end.
    async attach(h, pid, opts = {}) {
      const id = handleId(h)
      if (!Number.isInteger(pid) || pid <= 0) throw new SandboxError('attach: pid must be a positive integer', { code: 'invalid' })
      const out = streamSink(opts.onStdout)
      const err = streamSink(opts.onStderr)
      const params = { id, pid, max_output_bytes: opts.maxOutputBytes, stream: out || err ? true : undefined }
      for (const k of Object.keys(params)) if (params[k] === undefined) delete params[k]
      return {
        pid,
        wait: (signal) => waitFor(id, pid, params, signal, [out, err]),
        async kill(signal) {
          await call('kill_process', { id, pid }, signal)
        },
      }
    },
    // The running commands: [{ pid, tag, command, cmd, args, cwd }].
    async processes(h, signal) {
      return (await call('ps', { id: handleId(h) }, signal)).processes
    },
    // This deployment's sandboxes: [{ id, name, state, templateId, startedAt, endAt }].
    async list({ name, state, signal } = {}) {
      const r = await call('list', { name, state }, signal)
      return r.map(infoOf)
    },
    async info(h, signal) {
      return infoOf(await call('info', { id: handleId(h) }, signal))
    },
    // A directory's entries [{ name, type: 'file'|'dir'|'symlink'|'other', size }], or null.
    async listDir(h, path, signal) {
      const r = await call('list_dir', { id: handleId(h), path }, signal)
      if (r.exists === false) return null
      return {
        entries: r.entries.map((e) => ({ name: bytesOf(e, 'name').toString('utf8'), type: e.type, size: e.size })),
        truncated: r.truncated,
      }
    },

    async readFile(h, path, opts = {}) {
      const r = await call('read_file', { id: handleId(h), path, max_bytes: opts.maxBytes }, opts.signal)
      if (!r.exists) return null
      return { data: new Uint8Array(bytesOf(r, 'content')), truncated: r.truncated }
    },
    async writeFile(h, path, data, signal) {
      await call('write_file', { id: handleId(h), path, ...dataToWire(data) }, signal)
    },
    async stat(h, path, signal) {
      const r = await call('stat', { id: handleId(h), path }, signal)
      if (!r.exists) return null
      return { size: r.size, isDir: r.is_dir }
    },
    // Not in the contract: end the serve child now (it also ends with Node).
    close() {
      client.close()
    },
  }
}
