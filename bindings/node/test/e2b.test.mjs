// Sandbox, the official e2b SDK's shape, over sandbox-e2b serve against fake-e2b: results and
// error classes as E2B gives them, the engine's options (output cap, tags, kill-all, tree kill
// on timeout), commands across pause and resume, the paginator, and the five ported E2B
// examples (examples/e2b-*.mjs). The same calls through the official SDK: side-by-side.test.mjs.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { startFake } from '../../../tests/peer/fake.mjs'
import {
  CommandExitError,
  FileNotFoundError,
  InvalidArgumentError,
  NotFoundError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
  closeAll,
} from '../src/index.js'

const TEMPLATE = 'capybara-sandbox'
let fake, sbx

const until = async (fn, what, ms = 30000) => {
  const end = Date.now() + ms
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

// A command that answers each /tmp/<n>.ping with "pong" and ends on /tmp/<n>.go: the test knows
// when an attach is live (a pong arrived) without sleeping.
const ponger = (n, end) =>
  `while :; do if [ -e /tmp/${n}.ping ]; then rm -f /tmp/${n}.ping; echo pong; fi; [ -e /tmp/${n}.go ] && break; sleep 0.02; done; ${end}`
async function pingUntilPong(s, n, seen) {
  const end = Date.now() + 60000
  for (;;) {
    if (Date.now() > end) throw new Error(`no pong from ${n} in 60 s; seen ${JSON.stringify(seen())}`)
    const before = seen().split('pong').length
    await s.files.write(`/tmp/${n}.ping`, '')
    try {
      await until(async () => seen().split('pong').length > before || !(await s.files.exists(`/tmp/${n}.ping`)), 'the ping taken', 10000)
    } catch {
      continue
    }
    if (seen().split('pong').length > before) return
    // taken before the attach was live (its pong went nowhere), or the pong is slow: wait, then again
    try {
      await until(() => seen().split('pong').length > before, 'a late pong', 3000)
      return
    } catch {
      // ping again
    }
  }
}

before(async () => {
  if (!process.env.SANDBOX_E2B_BIN) throw new Error('set SANDBOX_E2B_BIN to the sandbox-e2b binary')
  fake = await startFake(process.env.FAKE_E2B, { apiKey: 'e2b_node_e2b' })
  sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 600_000, envs: { FROM_CREATE: 'yes' }, metadata: { suite: 'node-e2b' } })
})

after(async () => {
  closeAll()
  await fake?.stop()
})

describe('Sandbox: create, connect, info, list, kill', () => {
  test('create gives an id; getInfo, isRunning, getHost as E2B', async () => {
    assert.match(sbx.sandboxId, /^i[a-z0-9]+$/)
    const info = await sbx.getInfo()
    assert.deepEqual(Object.keys(info), ['sandboxId', 'templateId', 'startedAt', 'endAt', 'state'])
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.equal(info.templateId, TEMPLATE)
    assert.equal(info.state, 'running')
    assert.ok(info.startedAt instanceof Date && info.endAt instanceof Date)
    assert.equal(await sbx.isRunning(), true)
    assert.equal(sbx.getHost(3000), `3000-${sbx.sandboxId}.e2b.app`)
  })

  test('envs of create reach commands; metadata is accepted', async () => {
    assert.equal((await sbx.commands.run('echo $FROM_CREATE')).stdout, 'yes\n')
  })

  test('timeoutMs of create and setTimeout set the end', async () => {
    const t = await Sandbox.create(TEMPLATE, { timeoutMs: 90_000 })
    try {
      const i = await t.getInfo()
      assert.equal(Math.round((i.endAt - i.startedAt) / 1000), 90)
      await t.setTimeout(120_000)
      const j = await t.getInfo()
      assert.ok(Math.abs(j.endAt - Date.now() - 120_000) < 15_000, `${j.endAt.toISOString()}`)
    } finally {
      await t.kill()
    }
  })

  test('pause, isRunning, connect resumes; kill true then false; gone is SandboxNotFoundError', async () => {
    const t = await Sandbox.create(TEMPLATE)
    await t.files.write('/tmp/kept', 'kept')
    assert.equal(await t.pause(), true)
    assert.equal(await t.pause(), false, 'already paused')
    assert.equal((await t.getInfo()).state, 'paused')
    assert.equal(await t.isRunning(), false)
    const same = await Sandbox.connect(t.sandboxId)
    assert.equal(same.sandboxId, t.sandboxId)
    assert.equal(await same.isRunning(), true)
    assert.equal(await same.files.read('/tmp/kept'), 'kept')
    assert.equal(await t.kill(), true)
    assert.equal(await t.kill(), false)
    assert.equal(await Sandbox.kill(t.sandboxId), false)
    assert.equal(await t.isRunning(), false)
    await assert.rejects(Sandbox.connect(t.sandboxId), (e) => e instanceof SandboxNotFoundError && e instanceof NotFoundError && e instanceof SandboxError && e.name === 'SandboxNotFoundError')
    await assert.rejects(t.commands.run('true'), { name: 'SandboxNotFoundError' })
    await assert.rejects(Sandbox.getInfo(t.sandboxId), { name: 'SandboxNotFoundError' })
  })

  test('list: E2B paginator, state filter, limit pages, order', async () => {
    const t = await Sandbox.create(TEMPLATE)
    try {
      await t.pause()
      const all = []
      const p = Sandbox.list({ limit: 1 })
      assert.equal(p.hasNext, true)
      while (p.hasNext) {
        const page = await p.nextItems()
        assert.equal(page.length, 1)
        all.push(...page)
      }
      assert.equal(p.nextToken, undefined)
      await assert.rejects(p.nextItems(), /No more items to fetch/)
      const ids = all.map((s) => s.sandboxId)
      assert.ok(ids.includes(sbx.sandboxId) && ids.includes(t.sandboxId))
      const running = await Sandbox.list({ query: { state: ['running'] } }).nextItems()
      assert.ok(running.some((s) => s.sandboxId === sbx.sandboxId))
      assert.ok(!running.some((s) => s.sandboxId === t.sandboxId))
      const pausedOnly = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
      assert.deepEqual(pausedOnly.map((s) => [s.sandboxId, s.state]), [[t.sandboxId, 'paused']])
      const asc = await Sandbox.list({ order: 'asc' }).nextItems()
      assert.deepEqual(asc.map((s) => s.sandboxId), [...ids].reverse())
      assert.throws(() => Sandbox.list({ query: { metadata: { a: 'b' } } }), InvalidArgumentError)
    } finally {
      await t.kill()
    }
  })
})

describe('Sandbox: commands', () => {
  test('run: { exitCode, error, stdout, stderr } and streamed callbacks', async () => {
    const out = []
    const err = []
    const r = await sbx.commands.run('echo one; echo two >&2; echo three', { onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) })
    assert.deepEqual(r, { exitCode: 0, error: undefined, stdout: 'one\nthree\n', stderr: 'two\n' })
    assert.equal(out.join(''), 'one\nthree\n')
    assert.equal(err.join(''), 'two\n')
  })

  test('a non-zero exit throws CommandExitError as E2B does', async () => {
    await assert.rejects(sbx.commands.run('echo out; echo bad >&2; exit 3'), (e) => {
      assert.ok(e instanceof CommandExitError && e instanceof SandboxError)
      assert.equal(e.name, 'CommandExitError')
      assert.deepEqual([e.exitCode, e.error, e.stdout, e.stderr, e.message], [3, 'exit status 3', 'out\n', 'bad\n', 'exit status 3'])
      return true
    })
  })

  test('cwd, envs, user root', async () => {
    const r = await sbx.commands.run('pwd; echo $X; id -u', { cwd: '/tmp', envs: { X: 'x1' }, user: 'root' })
    assert.equal(r.stdout, '/tmp\nx1\n0\n')
    assert.equal((await sbx.commands.run('id -un')).stdout, 'sandbox\n')
    await assert.rejects(sbx.commands.run('true', { user: 'nobody' }), InvalidArgumentError)
  })

  test('timeoutMs: a TimeoutError, and the whole tree is killed (the engine)', async () => {
    await assert.rejects(sbx.commands.run('(sleep 300; echo late > /tmp/late) & sleep 300', { timeoutMs: 500 }), (e) => e instanceof TimeoutError && e.name === 'TimeoutError')
    const procs = await sbx.commands.list()
    assert.ok(!procs.some((p) => p.args.join(' ').includes('sleep 300')), JSON.stringify(procs))
  })

  test('maxOutputBytes cuts at a UTF-8 boundary and says truncated', async () => {
    const r = await sbx.commands.run("printf 'aé€'", { maxOutputBytes: 5 })
    assert.deepEqual(r, { exitCode: 0, error: undefined, stdout: 'aé', stderr: '', truncated: true })
  })

  test('background: handle pid, stdout so far, wait, list, connect(pid), kill', async () => {
    const seen = []
    const h = await sbx.commands.run(ponger('bg1', 'echo done; exit 0'), { background: true, onStdout: (d) => seen.push(d) })
    assert.ok(Number.isInteger(h.pid) && h.pid > 0)
    assert.equal(h.exitCode, undefined)
    await pingUntilPong(sbx, 'bg1', () => seen.join(''))
    assert.equal(h.stdout, 'pong\n')
    assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid))
    const other = []
    const c = await sbx.commands.connect(h.pid, { onStdout: (d) => other.push(d) })
    await pingUntilPong(sbx, 'bg1', () => other.join(''))
    await sbx.files.write('/tmp/bg1.go', '')
    assert.deepEqual(await h.wait(), { exitCode: 0, error: undefined, stdout: 'pong\npong\ndone\n', stderr: '' })
    assert.equal(h.exitCode, 0)
    assert.deepEqual(await c.wait(), { exitCode: 0, error: undefined, stdout: 'pong\ndone\n', stderr: '' })
    const k = await sbx.commands.run('sleep 300', { background: true })
    assert.equal(await k.kill(), true)
    await assert.rejects(k.wait(), (e) => e instanceof CommandExitError && e.exitCode === -1 && e.error === 'signal: killed')
    assert.equal(await sbx.commands.kill(k.pid), false)
    await assert.rejects(sbx.commands.connect(k.pid), /not found/)
  })

  test('connect(pid) to a command another serve child started resolves once the attach is live', async () => {
    // stdin through the starting child is one quick request: before the attach was awaited, the
    // line came out before the other child's attach was live
    const h = await sbx.commands.run('read line; echo after; exit 6', { background: true, stdin: true })
    // another connection config (timeoutMs): another serve child, which did not start it
    const other = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 610_000 })
    assert.notEqual(other._client, sbx._client)
    const seen = []
    const c = await other.commands.connect(h.pid, { onStdout: (d) => seen.push(d) })
    await h.sendStdin('go\n')
    await assert.rejects(c.wait(), (e) => e instanceof CommandExitError && e.exitCode === 6 && e.stdout === 'after\n')
    assert.equal(seen.join(''), 'after\n')
    await assert.rejects(h.wait(), { exitCode: 6, stdout: 'after\n' })
  })

  test('stdin: sendStdin and closeStdin to a background command', async () => {
    const h = await sbx.commands.run('cat', { background: true, stdin: true })
    await h.sendStdin('hello ')
    await sbx.commands.sendStdin(h.pid, 'world\n')
    await h.closeStdin()
    assert.deepEqual(await h.wait(), { exitCode: 0, error: undefined, stdout: 'hello world\n', stderr: '' })
    const n = await sbx.commands.run('true', { background: true })
    await assert.rejects(n.sendStdin('x'), /stdin: true/)
    await n.wait()
  })

  test('killTagged and killAll (the engine)', async () => {
    const a = await sbx.commands.run('sleep 300', { background: true, tag: 'ta' })
    const b = await sbx.commands.run('sleep 301', { background: true, tag: 'tb' })
    // the engine's wrapper ends a command killed by tag or kill-all as 128 + SIGKILL
    const killed = (e) => e instanceof CommandExitError && e.exitCode === 137 && e.error === 'exit status 137'
    await sbx.commands.killTagged(['ta'])
    await assert.rejects(a.wait(), killed)
    assert.ok((await sbx.commands.list()).some((p) => p.pid === b.pid))
    await sbx.commands.killAll()
    await assert.rejects(b.wait(), killed)
    assert.deepEqual(await sbx.commands.list(), [])
  })
})

describe('Sandbox: request options', () => {
  test('requestTimeoutMs passing is a TimeoutError; an aborted signal rejects with its reason', async () => {
    await sbx.commands.run('rm -f /tmp/rt.fifo; mkfifo /tmp/rt.fifo') // a read of it blocks
    await assert.rejects(sbx.files.read('/tmp/rt.fifo', { requestTimeoutMs: 300 }), (e) => e instanceof TimeoutError && /requestTimeoutMs/.test(e.message))
    const ac = new AbortController()
    const run = sbx.commands.run('sleep 30', { signal: ac.signal })
    setTimeout(() => ac.abort(new Error('stop here')), 200)
    await assert.rejects(run, /stop here/)
    assert.deepEqual((await sbx.commands.list()).filter((p) => p.args.join(' ').includes('sleep 30')), [])
    await assert.rejects(sbx.getInfo({ signal: AbortSignal.abort(new Error('before')) }), /before/)
  })

  test('disconnect: no more output to the handle; the command goes on and connect(pid) follows it', async () => {
    const seen = []
    const h = await sbx.commands.run(ponger('dc', 'echo end'), { background: true, onStdout: (d) => seen.push(d) })
    await pingUntilPong(sbx, 'dc', () => seen.join(''))
    await h.disconnect()
    assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid))
    const c = await sbx.commands.connect(h.pid)
    await pingUntilPong(sbx, 'dc', () => c.stdout)
    await sbx.files.write('/tmp/dc.go', '')
    const r = await c.wait()
    assert.equal(r.exitCode, 0)
    assert.match(r.stdout, /^(?:pong\n)+end\n$/)
    assert.equal(seen.join(''), 'pong\n')
  })
})

describe('Sandbox: files', () => {
  test('write, read in every format, getInfo, exists, list, makeDir, rename, remove', async () => {
    assert.deepEqual(await sbx.files.write('/tmp/f/a.txt', 'héllo'), { path: '/tmp/f/a.txt', name: 'a.txt', type: 'file', metadata: undefined })
    assert.deepEqual(
      await sbx.files.write([
        { path: '/tmp/f/b.bin', data: new Uint8Array([0, 255, 1]) },
        { path: '/tmp/f/c.txt', data: new Blob(['blob']) },
      ]),
      [
        { path: '/tmp/f/b.bin', name: 'b.bin', type: 'file', metadata: undefined },
        { path: '/tmp/f/c.txt', name: 'c.txt', type: 'file', metadata: undefined },
      ],
    )
    assert.equal(await sbx.files.read('/tmp/f/a.txt'), 'héllo')
    assert.deepEqual(await sbx.files.read('/tmp/f/b.bin', { format: 'bytes' }), new Uint8Array([0, 255, 1]))
    assert.equal(await (await sbx.files.read('/tmp/f/c.txt', { format: 'blob' })).text(), 'blob')
    assert.equal(await new Response(await sbx.files.read('/tmp/f/a.txt', { format: 'stream' })).text(), 'héllo')
    const info = await sbx.files.getInfo('/tmp/f/a.txt')
    assert.deepEqual(
      { ...info, modifiedTime: info.modifiedTime instanceof Date },
      { name: 'a.txt', type: 'file', path: '/tmp/f/a.txt', size: 6, mode: info.mode, permissions: info.permissions, owner: 'sandbox', group: 'sandbox', modifiedTime: true, symlinkTarget: undefined, metadata: undefined },
    )
    assert.equal(await sbx.files.exists('/tmp/f/a.txt'), true)
    assert.equal(await sbx.files.exists('/tmp/f/none'), false)
    assert.equal(await sbx.files.makeDir('/tmp/f/d'), true)
    assert.equal(await sbx.files.makeDir('/tmp/f/d'), false)
    assert.deepEqual((await sbx.files.list('/tmp/f')).map((e) => [e.name, e.type, e.path, e.size]), [
      ['a.txt', 'file', '/tmp/f/a.txt', 6],
      ['b.bin', 'file', '/tmp/f/b.bin', 3],
      ['c.txt', 'file', '/tmp/f/c.txt', 4],
      ['d', 'dir', '/tmp/f/d', (await sbx.files.getInfo('/tmp/f/d')).size],
    ])
    const moved = await sbx.files.rename('/tmp/f/a.txt', '/tmp/f/d/a2.txt')
    assert.deepEqual([moved.name, moved.path, moved.type], ['a2.txt', '/tmp/f/d/a2.txt', 'file'])
    assert.deepEqual((await sbx.files.list('/tmp/f', { depth: 2 })).map((e) => e.path), ['/tmp/f/b.bin', '/tmp/f/c.txt', '/tmp/f/d', '/tmp/f/d/a2.txt'])
    await sbx.files.remove('/tmp/f')
    assert.equal(await sbx.files.exists('/tmp/f'), false)
  })

  test('watchDir: live once it resolves, E2B event names, recursive, stop, timeoutMs, errors', async () => {
    await sbx.commands.run('mkdir -p /tmp/wd')
    const ev = []
    let exit = 'running'
    const w = await sbx.files.watchDir('/tmp/wd', (e) => ev.push(e), { onExit: (e) => (exit = e ?? 'clean') })
    await sbx.commands.run('mkdir /tmp/wd/d; rmdir /tmp/wd/d')
    await until(() => ev.length >= 2, 'two events')
    await w.stop()
    assert.deepEqual(ev, [
      { name: 'd', type: 'create' },
      { name: 'd', type: 'remove' },
    ])
    assert.equal(exit, 'clean')
    const deep = []
    const r = await sbx.files.watchDir('/tmp/wd', (e) => deep.push(e), { recursive: true })
    await sbx.commands.run('mkdir /tmp/wd/s; sleep 0.2; mkdir /tmp/wd/s/t')
    await until(() => deep.some((e) => e.name === 's/t'), 'the event below')
    await r.stop()
    assert.deepEqual(deep.filter((e) => e.type === 'create').map((e) => e.name), ['s', 's/t'])
    let timedOut
    await sbx.files.watchDir('/tmp/wd', () => {}, { timeoutMs: 200, onExit: (e) => (timedOut = e) })
    await until(() => timedOut !== undefined, 'the watch timeout')
    assert.ok(timedOut instanceof TimeoutError, String(timedOut))
    await assert.rejects(sbx.files.watchDir('/tmp/none', () => {}), FileNotFoundError)
    await assert.rejects(sbx.files.watchDir('/etc/hostname', () => {}), InvalidArgumentError)
    await sbx.commands.run('rm -rf /tmp/wd')
  })

  test('watchDir: its error class comes from the data, not from a message a name can hold', async () => {
    const odd = '/tmp/no such directory'
    await sbx.commands.run(`touch '${odd}'; mkdir -m 700 '/tmp/not a directory'`, { user: 'root' })
    const refused = async (path) => {
      try {
        await sbx.files.watchDir(path, () => {})
      } catch (e) {
        return [e.constructor.name, e.message]
      }
      return ['watching']
    }
    assert.deepEqual(await refused(odd), ['InvalidArgumentError', `cannot watch ${odd}: not a directory`])
    assert.deepEqual(await refused('/tmp/not a directory'), [
      'SandboxError',
      'cannot watch /tmp/not a directory: permission denied for /tmp/not a directory',
    ])
    assert.deepEqual(await refused('/tmp/not a directory/x'), ['FileNotFoundError', 'cannot watch /tmp/not a directory/x: no such directory'])
    await sbx.commands.run(`rm -rf '${odd}' '/tmp/not a directory'`, { user: 'root' })
  })

  test('a relative path is the user\'s home\'s, as in E2B (the engine\'s user: /workspace)', async () => {
    assert.deepEqual(await sbx.files.write('rel/x.txt', 'r'), { path: '/workspace/rel/x.txt', name: 'x.txt', type: 'file', metadata: undefined })
    assert.equal(await sbx.files.read('/workspace/rel/x.txt'), 'r')
    assert.equal(await sbx.files.read('./rel/x.txt'), 'r')
    assert.equal((await sbx.files.getInfo('rel')).path, '/workspace/rel')
    assert.deepEqual((await sbx.files.list('rel')).map((e) => e.path), ['/workspace/rel/x.txt'])
    await sbx.files.remove('rel')
    assert.equal(await sbx.files.exists('/workspace/rel'), false)
  })

  test('missing paths are FileNotFoundError; a directory read is InvalidArgumentError', async () => {
    await assert.rejects(sbx.files.read('/tmp/none'), (e) => e instanceof FileNotFoundError && e instanceof NotFoundError && e.name === 'FileNotFoundError')
    await assert.rejects(sbx.files.getInfo('/tmp/none'), FileNotFoundError)
    await assert.rejects(sbx.files.list('/tmp/none'), FileNotFoundError)
    await assert.rejects(sbx.files.rename('/tmp/none', '/tmp/x'), FileNotFoundError)
    await assert.rejects(sbx.files.read('/tmp'), InvalidArgumentError)
    await assert.rejects(sbx.files.list('/etc/hostname'), InvalidArgumentError)
    await assert.rejects(sbx.files.read('/tmp/x', { user: 'root' }), InvalidArgumentError)
    // write as root (serve's write_files takes a user): root's home for a relative path
    assert.deepEqual(await sbx.files.write('r.txt', 'as root', { user: 'root' }), { path: '/root/r.txt', name: 'r.txt', type: 'file', metadata: undefined })
    assert.equal((await sbx.commands.run('stat -c %U /root/r.txt; cat /root/r.txt', { user: 'root' })).stdout, 'root\nas root')
    assert.deepEqual(await sbx.files.write([]), [])
  })
})

describe('Sandbox: pty (serve pty_*)', () => {
  test('create, onData, resize, sendInput, wait with the exit code; kill true then false; connect', async () => {
    const dec = new TextDecoder()
    let got = ''
    const t = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => (got += dec.decode(d, { stream: true })) })
    assert.ok(Number.isInteger(t.pid) && t.pid > 0)
    await sbx.pty.resize(t.pid, { cols: 100, rows: 30 })
    await sbx.pty.sendInput(t.pid, new TextEncoder().encode('stty size; echo $TERM $LC_ALL; exit 3\n'))
    await assert.rejects(t.wait(), (e) => e instanceof CommandExitError && e.exitCode === 3 && e.error === 'exit status 3' && e.stdout === '')
    assert.equal(t.exitCode, 3)
    assert.match(got, /\r30 100\r\nxterm-256color C\.UTF-8\r\n/)
    const k = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
    let more = ''
    const c = await sbx.pty.connect(k.pid, { onData: (d) => (more += dec.decode(d)) })
    await sbx.pty.sendInput(k.pid, new TextEncoder().encode('echo via-$((40+2))\n'))
    await until(() => more.includes('via-42'), 'the attached terminal output')
    assert.equal(await sbx.pty.kill(k.pid), true)
    await assert.rejects(c.wait(), (e) => e instanceof CommandExitError && e.exitCode === -1 && e.error === 'signal: killed')
    assert.equal(await sbx.pty.kill(k.pid), false)
  })
})

describe('Sandbox: commands across pause and resume', () => {
  test('a background command: wait() rejects with code paused; after Sandbox.connect, wait() gets the rest and the exit code', async () => {
    const t = await Sandbox.create(TEMPLATE)
    try {
      const seen = []
      const h = await t.commands.run(`echo a; ${ponger('p1', 'echo b; exit 7')}`, { background: true, onStdout: (d) => seen.push(d) })
      await until(() => h.stdout === 'a\n', 'the first line')
      const w = h.wait()
      w.catch(() => {})
      assert.equal(await t.pause(), true)
      const paused = (e) => {
        assert.ok(e instanceof SandboxError)
        assert.equal(e.code, 'paused')
        assert.equal(
          e.message,
          `sandbox ${t.sandboxId} was paused while command ${h.pid} ran; it goes on after a resume: Sandbox.connect(id), then handle.wait() again or commands.connect(${h.pid}) for the rest of its output and its exit code`,
        )
        return true
      }
      await assert.rejects(w, paused)
      await assert.rejects(h.wait(), paused, 'still paused: the same answer, no request')
      await Sandbox.connect(t.sandboxId)
      const w2 = h.wait()
      w2.catch(() => {})
      await pingUntilPong(t, 'p1', () => seen.join(''))
      await t.files.write('/tmp/p1.go', '')
      await assert.rejects(w2, (e) => {
        assert.ok(e instanceof CommandExitError)
        assert.deepEqual([e.exitCode, e.error, e.stderr], [7, 'exit status 7', ''])
        assert.match(e.stdout, /^a\n(?:pong\n)+b\n$/)
        assert.equal(e.stdout, seen.join(''))
        return true
      })
      assert.equal(h.exitCode, 7)
    } finally {
      await t.kill()
    }
  })

  test('resumed by another process: the paused handle\'s wait() sees it running and attaches anew', async () => {
    const t = await Sandbox.create(TEMPLATE)
    try {
      const h = await t.commands.run(`echo a; ${ponger('p3', 'echo z; exit 2')}`, { background: true })
      await until(() => h.stdout === 'a\n', 'the first line')
      const w = h.wait()
      w.catch(() => {})
      await t.pause()
      await assert.rejects(w, { code: 'paused' })
      const src = `import { Sandbox, closeAll } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)}; await Sandbox.connect(${JSON.stringify(t.sandboxId)}); closeAll()`
      await new Promise((resolve, reject) =>
        execFile(process.execPath, ['--input-type=module', '-e', src], { env: process.env, timeout: 60000 }, (e, o, err) => (e ? reject(new Error(err)) : resolve())),
      )
      const w2 = h.wait()
      w2.catch(() => {})
      await pingUntilPong(t, 'p3', () => h.stdout)
      await t.files.write('/tmp/p3.go', '')
      await assert.rejects(w2, (e) => e instanceof CommandExitError && e.exitCode === 2 && /^a\n(?:pong\n)+z\n$/.test(e.stdout))
    } finally {
      await t.kill()
    }
  })

  test('a foreground run: rejects with code paused; after connect, commands.connect(pid) gets the rest and the end', async () => {
    const t = await Sandbox.create(TEMPLATE)
    try {
      const seen = []
      const run = t.commands.run(`echo c; ${ponger('p2', 'echo d')}`, { onStdout: (d) => seen.push(d) })
      run.catch(() => {})
      await until(() => seen.join('') === 'c\n', 'the first line')
      await t.pause()
      await assert.rejects(run, (e) => {
        assert.equal(e.code, 'paused')
        assert.equal(
          e.message,
          `sandbox ${t.sandboxId} was paused while the command ran; it goes on after a resume: Sandbox.connect(id), then commands.connect(pid) (pid from commands.list()) for the rest of its output and its exit code`,
        )
        return true
      })
      await t.connect()
      const procs = await t.commands.list()
      assert.equal(procs.length, 1, JSON.stringify(procs))
      const more = []
      const a = await t.commands.connect(procs[0].pid, { onStdout: (d) => more.push(d) })
      await pingUntilPong(t, 'p2', () => more.join(''))
      await t.files.write('/tmp/p2.go', '')
      const r = await a.wait()
      assert.deepEqual(Object.keys(r), ['exitCode', 'error', 'stdout', 'stderr'])
      assert.deepEqual([r.exitCode, r.error, r.stderr], [0, undefined, ''])
      assert.match(r.stdout, /^(?:pong\n)+d\n$/)
    } finally {
      await t.kill()
    }
  })
})

describe('the five E2B examples, only the import changed', () => {
  const dir = new URL('../examples/', import.meta.url)
  const examples = readdirSync(dir).filter((f) => /^e2b-.*\.mjs$/.test(f)).sort()
  test('there are five', () => assert.equal(examples.length, 5, examples.join(' ')))
  for (const f of examples) {
    test(f, async () => {
      const out = await new Promise((resolve, reject) =>
        execFile(process.execPath, [new URL(f, dir).pathname], { env: process.env, timeout: 120000 }, (e, stdout, stderr) =>
          e ? reject(new Error(`${e.message}\n${stderr}`)) : resolve(stdout),
        ),
      )
      assert.match(out, EXPECTED[f])
    })
  }
})

// What each example prints (the official SDK prints the same: side-by-side.test.mjs). The
// background one kills its command at once: 'hello' arrives first or not at all, in E2B too.
const ID = '(i[a-z0-9]+)'
const EXPECTED = {
  'e2b-background.mjs': /^(?:hello\n\n)?$/,
  'e2b-lifecycle.mjs': new RegExp(
    `^\\{\\n  sandboxId: '${ID}',\\n  templateId: 'capybara-sandbox',\\n  startedAt: \\S+Z,\\n  endAt: \\S+Z,\\n  state: 'running'\\n\\}\\n$`,
  ),
  'e2b-persistence.mjs': new RegExp(`^Sandbox created ${ID}\\nSandbox paused \\1\\nConnected to the sandbox \\1\\n$`),
  'e2b-readme.mjs': /^Hello from E2B!\n\n$/,
  'e2b-streaming.mjs': /^hello\n\nworld\n\n\{ exitCode: 0, error: undefined, stdout: 'hello\\nworld\\n', stderr: '' \}\n$/,
}
