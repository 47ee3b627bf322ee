// sbx.files (E2B's SDK: sandbox/filesystem, with its watchHandle): read, write, list, info,
// makeDir, rename, remove, watchDir, as the sandbox user by default.
import { FileNotFoundError, InvalidArgumentError, SandboxError, TimeoutError } from '../e2b-errors.js'
import { bytesOf, dataToWire } from '../types.js'
import { DEFAULT_COMMAND_TIMEOUT_MS, DEFAULT_MAX_READ_BYTES, clean, dateOf, rpc, userToWire } from './connection.js'

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

export class Filesystem {
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
        return watchError(e)
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

// A watch's failure as E2B's class, from the check's data (docs/watch.md "Errors"), never its
// message: e2bCode 'not_found' (no such directory) is a FileNotFoundError, 'invalid_argument'
// (not a directory) an InvalidArgumentError.
function watchError(e) {
  if (e instanceof SandboxError && e.code === 'sandbox') {
    if (e.e2bCode === 'not_found') return new FileNotFoundError(e.message)
    if (e.e2bCode === 'invalid_argument') return new InvalidArgumentError(e.message)
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
