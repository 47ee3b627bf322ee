// Type-level test of index.d.ts, compiled by `tsc --strict --noEmit` (run.sh), never run:
// 1. every call with only its required arguments type-checks (the runtime defaults the rest);
// 2. the provider stays assignable to the seed's sandbox@1 contract as the seed's callers use it
//    (every argument passed, the same results), so code written for the seed compiles unchanged.
import {
  createE2BSandbox,
  type ExecResult,
  type FileContent,
  type FileStat,
  type SandboxHandle,
  type SandboxLimits,
} from '../../index.js'

const p = createE2BSandbox({ apiKey: 'e2b_x', template: 't' })
const h: SandboxHandle = { id: 'x' }

export async function onlyRequired(): Promise<void> {
  const c: SandboxHandle = await p.create({ name: 'n' })
  const r: ExecResult = await p.exec(c, { command: 'true' })
  const f: FileContent | null = await p.readFile(h, '/workspace/a')
  const g: FileContent | null = await p.readFile(h, '/workspace/a', { maxBytes: 10 })
  await p.writeFile(h, '/workspace/a', 'x')
  const s: FileStat | null = await p.stat(h, '/workspace/a')
  const st: 'resumed' | 'gone' = await p.resume(h)
  await p.suspend(h)
  await p.killAll(h)
  await p.killTagged(h, ['t'])
  await p.destroyByName('n')
  await p.destroy(h)
  const cmd = await p.startCommand(h, { command: 'sleep 1' })
  const w: ExecResult & { aborted: boolean } = await cmd.wait()
  const a = await p.attach(h, cmd.pid)
  const aw: ExecResult & { aborted: boolean } = await a.wait()
  void aw
  void [r, f, g, s, st, w]
}

// The seed's contract (plugin-sandbox-e2b 0.1.0-rc.1's provider as its callers use it): every
// argument required, exactly these results.
interface SeedExecArgs {
  command: string
  cwd?: string
  env?: Record<string, string>
  timeoutMs: number
  maxOutputBytes: number
  tag?: string
  signal: AbortSignal
  onStdout?: (data: string) => void
  onStderr?: (data: string) => void
}
interface SeedProvider {
  readonly concurrentExec: true
  create(args: { name: string; limits: SandboxLimits; signal: AbortSignal }): Promise<SandboxHandle>
  resume(h: SandboxHandle, signal: AbortSignal): Promise<'resumed' | 'gone'>
  suspend(h: SandboxHandle, signal: AbortSignal): Promise<void>
  destroy(h: SandboxHandle, signal: AbortSignal): Promise<void>
  destroyByName(name: string, signal: AbortSignal): Promise<void>
  killAll(h: SandboxHandle, signal: AbortSignal): Promise<void>
  killTagged(h: SandboxHandle, tags: readonly string[], signal: AbortSignal): Promise<void>
  exec(h: SandboxHandle, args: SeedExecArgs): Promise<{
    exitCode: number | null
    stdout: string
    stderr: string
    truncated: boolean
    timedOut: boolean
  }>
  readFile(
    h: SandboxHandle,
    path: string,
    opts: { maxBytes: number; signal: AbortSignal },
  ): Promise<{ data: Uint8Array; truncated: boolean } | null>
  writeFile(h: SandboxHandle, path: string, data: Uint8Array | ArrayBuffer | string, signal: AbortSignal): Promise<void>
  stat(h: SandboxHandle, path: string, signal: AbortSignal): Promise<{ size: number; isDir: boolean } | null>
}

export const seed: SeedProvider = p

// And a call written for the seed, every argument passed, compiles as it is.
export async function seedCall(s: SeedProvider, q: typeof p): Promise<void> {
  const signal = AbortSignal.timeout(1000)
  const limits: SandboxLimits = { cpu: 1, memoryMb: 512, diskMb: 1024, egress: 'none', allowHosts: [] }
  for (const x of [s, q]) {
    const c = await x.create({ name: 'n', limits, signal })
    await x.exec(c, { command: 'true', timeoutMs: 1000, maxOutputBytes: 100, signal })
    await x.readFile(c, '/a', { maxBytes: 1, signal })
    await x.writeFile(c, '/a', new Uint8Array(1), signal)
    await x.destroy(c, signal)
  }
}

// 3. The E2B shape (Sandbox, as the official `e2b` SDK 2.51.0 types it): every call with only
//    its required arguments, and the result types E2B's callers rely on.
import DefaultSandbox, {
  CommandExitError,
  FileNotFoundError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
  type CommandHandle,
  type CommandResult,
  type EntryInfo,
  type SandboxInfo,
  type SandboxMetrics,
  type WriteInfo,
} from '../../index.js'

export async function e2bShape(): Promise<void> {
  const a: Sandbox = await Sandbox.create()
  const b: Sandbox = await DefaultSandbox.create('capybara-sandbox', { timeoutMs: 60_000, metadata: { k: 'v' }, envs: { A: 'b' } })
  const c: Sandbox = await Sandbox.connect(a.sandboxId)
  const id: string = a.sandboxId
  const r: CommandResult = await a.commands.run('echo hi')
  const r2: CommandResult = await a.commands.run('echo hi', { onStdout: (d: string) => void d, user: 'root', cwd: '/', envs: {}, timeoutMs: 0, maxOutputBytes: 10, tag: 't' })
  const h: CommandHandle = await a.commands.run('sleep 1', { background: true })
  const pid: number = h.pid
  const hr: CommandResult = await h.wait()
  const killed: boolean = await h.kill()
  const h2: CommandHandle = await a.commands.connect(pid)
  await a.commands.sendStdin(pid, 'x')
  const procs: { pid: number; cmd: string; args: string[] }[] = await a.commands.list()
  const k: boolean = await a.commands.kill(pid)
  await a.commands.killTagged(['t'])
  await a.commands.killAll()
  const text: string = await a.files.read('/workspace/a')
  const bytes: Uint8Array = await a.files.read('/workspace/a', { format: 'bytes' })
  const w: WriteInfo = await a.files.write('/workspace/a', 'x')
  const ws: WriteInfo[] = await a.files.write([{ path: '/workspace/a', data: new Uint8Array(1) }])
  const ls: EntryInfo[] = await a.files.list('/workspace')
  const ex: boolean = await a.files.exists('/workspace/a')
  const gi: EntryInfo = await a.files.getInfo('/workspace/a')
  const md: boolean = await a.files.makeDir('/workspace/d')
  const rn: EntryInfo = await a.files.rename('/workspace/a', '/workspace/b')
  await a.files.remove('/workspace/b')
  const wh = await a.files.watchDir('/workspace', (e) => void [e.name, e.type])
  await wh.stop()
  const term = await a.pty.create({ cols: 80, rows: 24, onData: (d: Uint8Array) => void d })
  await a.pty.sendInput(term.pid, new Uint8Array([10]))
  await a.pty.resize(term.pid, { cols: 100, rows: 30 })
  const tr: CommandResult = await term.wait()
  const tk: boolean = await a.pty.kill(term.pid)
  const tc = await a.pty.connect(term.pid)
  void [tr, tk, tc]
  const paused: boolean = await a.pause()
  await a.setTimeout(60_000)
  const info: SandboxInfo = await a.getInfo()
  const m: SandboxMetrics[] = await a.getMetrics()
  const host: string = a.getHost(3000)
  const up: boolean = await a.isRunning()
  const gone: boolean = await Sandbox.kill(id)
  const p = Sandbox.list({ query: { state: ['running'] } })
  while (p.hasNext) {
    const page: SandboxInfo[] = await p.nextItems()
    void page
  }
  await b.kill()
  try {
    await c.commands.run('exit 1')
  } catch (e) {
    if (e instanceof CommandExitError) {
      const code: number = e.exitCode
      const err: string = e.stderr
      void [code, err]
    }
    if (e instanceof TimeoutError || e instanceof SandboxNotFoundError || e instanceof FileNotFoundError) {
      const s: SandboxError = e
      void s
    }
  }
  void [r, r2, hr, killed, h2, procs, k, text, bytes, w, ws, ls, ex, gi, md, rn, paused, info, m, host, up, gone]
}
