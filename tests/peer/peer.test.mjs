// Peer test: the official E2B JS SDK (npm e2b, pinned in package.json) against
// fake-e2b. Every assertion here is what the SDK does against real E2B; a
// failure means fake-e2b differs from E2B on the wire (docs/internals/wire.md
// "Pointing an SDK at a local server").
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test   (or tests/peer/run.sh <path>)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import {
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  InvalidArgumentError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
} from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const TEMPLATE = 'capybara-sandbox'
const RUN = `r${process.pid}x${Date.now().toString(36)}`
const T = { timeout: 120000 }

let fake
const created = new Set()

async function create(metadata = {}, opts = {}) {
  const sbx = await Sandbox.create(TEMPLATE, { metadata: { suite: 'peer', run: RUN, ...metadata }, ...opts })
  created.add(sbx.sandboxId)
  return sbx
}

const sha256 = (b) => createHash('sha256').update(b).digest('hex')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

before(async () => {
  fake = await startFake(fakePath())
})

after(async () => {
  for (const id of created) {
    try {
      await Sandbox.kill(id)
    } catch {
      // best effort
    }
  }
  if (fake) await fake.stop()
})

describe('e2b SDK against fake-e2b', { concurrency: false }, () => {
  let sbx

  test('create with metadata', T, async () => {
    sbx = await create({ purpose: 'main', 'odd key': 'v&w=x y/é' })
    assert.match(sbx.sandboxId, /^i[a-z0-9]+$/)
    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.equal(info.state, 'running')
    assert.deepEqual(info.metadata, { suite: 'peer', run: RUN, purpose: 'main', 'odd key': 'v&w=x y/é' })
    assert.ok(info.startedAt instanceof Date && !Number.isNaN(info.startedAt.getTime()))
    assert.ok(info.endAt.getTime() > info.startedAt.getTime())
    assert.equal(await sbx.isRunning(), true)
  })

  test('commands.run: stdout, stderr, exit code 0', T, async () => {
    const r = await sbx.commands.run('echo hello; echo oops >&2')
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, 'hello\n')
    assert.equal(r.stderr, 'oops\n')
    assert.equal(r.error, undefined)
  })

  test('commands.run: non-zero exit raises CommandExitError', T, async () => {
    await assert.rejects(sbx.commands.run('echo out; echo err >&2; exit 7'), (e) => {
      assert.ok(e instanceof CommandExitError, `got ${e?.constructor?.name}: ${e?.message}`)
      assert.equal(e.exitCode, 7)
      assert.equal(e.stdout, 'out\n')
      assert.equal(e.stderr, 'err\n')
      assert.equal(e.error, 'exit status 7')
      return true
    })
    await assert.rejects(sbx.commands.run('exit 1'), (e) => e instanceof CommandExitError && e.exitCode === 1)
  })

  test('commands.run: a command killed by a signal', T, async () => {
    await assert.rejects(sbx.commands.run('kill -9 $$'), (e) => {
      assert.ok(e instanceof CommandExitError, `got ${e?.constructor?.name}: ${e?.message}`)
      assert.equal(e.exitCode, -1)
      assert.equal(e.error, 'signal: killed')
      return true
    })
  })

  test('commands.run: cwd and envs', T, async () => {
    let r = await sbx.commands.run('pwd', { cwd: '/tmp' })
    assert.equal(r.stdout, '/tmp\n')
    r = await sbx.commands.run('printf "%s|%s" "$FOO" "$BAR"', { envs: { FOO: 'a b', BAR: 'c=d"é' } })
    assert.equal(r.stdout, 'a b|c=d"é')
    await assert.rejects(sbx.commands.run('pwd', { cwd: '/no/such/dir' }))
  })

  test('commands.run: user root vs default user', T, async () => {
    const root = await sbx.commands.run('id -un; id -u; echo $HOME', { user: 'root' })
    assert.equal(root.stdout, 'root\n0\n/root\n')
    const def = await sbx.commands.run('id -un; id -u')
    const [name, uid] = def.stdout.trim().split('\n')
    assert.notEqual(name, 'root', 'E2B runs commands as the template user, not root, by default')
    assert.notEqual(uid, '0')
    const sb = await sbx.commands.run('id -un; id -u; echo $HOME', { user: 'sandbox' })
    assert.equal(sb.stdout, 'sandbox\n1000\n/workspace\n')
  })

  test('commands.run: large and streamed output', T, async () => {
    const chunks = []
    const r = await sbx.commands.run("head -c 3000000 /dev/zero | tr '\\0' a; printf 'h\\303\\251llo'", {
      onStdout: (d) => chunks.push(d),
    })
    assert.equal(r.stdout.length, 3000000 + 'héllo'.length)
    assert.ok(r.stdout.endsWith('aahéllo'))
    assert.equal(chunks.join(''), r.stdout)
  })

  test('files.write / files.read: text', T, async () => {
    const text = 'hello ünïcode ✓\nline 2\n'
    const w = await sbx.files.write('/tmp/peer/a.txt', text)
    assert.equal(w.path, '/tmp/peer/a.txt')
    assert.equal(w.name, 'a.txt')
    assert.equal(w.type, 'file')
    assert.equal(await sbx.files.read('/tmp/peer/a.txt'), text)
    const r = await sbx.commands.run('cat /tmp/peer/a.txt')
    assert.equal(r.stdout, text)
    // overwrite is a truncate
    await sbx.files.write('/tmp/peer/a.txt', 'short')
    assert.equal(await sbx.files.read('/tmp/peer/a.txt'), 'short')
    // empty file
    await sbx.files.write('/tmp/peer/empty', '')
    assert.equal(await sbx.files.read('/tmp/peer/empty'), '')
  })

  test('files.write / files.read: bytes', T, async () => {
    const all = new Uint8Array(256 * 4)
    for (let i = 0; i < all.length; i++) all[i] = i & 0xff
    await sbx.files.write('/tmp/peer/b.bin', all.buffer)
    const back = await sbx.files.read('/tmp/peer/b.bin', { format: 'bytes' })
    assert.ok(back instanceof Uint8Array)
    assert.deepEqual(Buffer.from(back), Buffer.from(all))
    const r = await sbx.commands.run('sha256sum < /tmp/peer/b.bin')
    assert.equal(r.stdout.split(' ')[0], sha256(all))
  })

  test('files.write / files.read: 10 MiB byte-exact', T, async () => {
    const big = randomBytes(10 * 1024 * 1024)
    await sbx.files.write('/tmp/peer/big.bin', new Uint8Array(big).buffer)
    const r = await sbx.commands.run('stat -c %s /tmp/peer/big.bin; sha256sum < /tmp/peer/big.bin')
    const [size, sum] = r.stdout.split('\n')
    assert.equal(size, String(big.length))
    assert.equal(sum.split(' ')[0], sha256(big))
    const back = await sbx.files.read('/tmp/peer/big.bin', { format: 'bytes' })
    assert.equal(back.length, big.length)
    assert.equal(sha256(back), sha256(big))
  })

  test('files.read: missing file raises FileNotFoundError', T, async () => {
    await assert.rejects(sbx.files.read('/tmp/peer/nope'), (e) => {
      assert.ok(e instanceof FileNotFoundError, `got ${e?.constructor?.name}: ${e?.message}`)
      return true
    })
  })

  test('files.list', T, async () => {
    await sbx.commands.run('mkdir -p /tmp/peer/sub')
    const entries = await sbx.files.list('/tmp/peer')
    const byName = Object.fromEntries(entries.map((e) => [e.name, e]))
    assert.deepEqual(Object.keys(byName).sort(), ['a.txt', 'b.bin', 'big.bin', 'empty', 'sub'])
    assert.equal(byName['a.txt'].type, 'file')
    assert.equal(byName['a.txt'].path, '/tmp/peer/a.txt')
    assert.equal(byName['a.txt'].size, 5)
    assert.equal(byName['big.bin'].size, 10 * 1024 * 1024)
    assert.equal(byName['sub'].type, 'dir')
    assert.equal(byName['sub'].path, '/tmp/peer/sub')
    await assert.rejects(sbx.files.list('/tmp/peer/missing'))
  })

  test('files.exists', T, async () => {
    assert.equal(await sbx.files.exists('/tmp/peer/a.txt'), true)
    assert.equal(await sbx.files.exists('/tmp/peer/sub'), true)
    assert.equal(await sbx.files.exists('/tmp/peer/missing'), false)
  })

  test('commands.run in the background + commands.kill', T, async () => {
    const out = []
    const h = await sbx.commands.run('echo started; sleep 60; echo never', {
      background: true,
      onStdout: (d) => out.push(d),
    })
    assert.ok(Number.isInteger(h.pid) && h.pid > 0)
    for (let i = 0; i < 200 && out.join('') === ''; i++) await sleep(50)
    assert.equal(out.join(''), 'started\n', 'output streamed before the kill')
    const listed = await sbx.commands.list()
    assert.ok(listed.some((p) => p.pid === h.pid), 'background process listed')
    const t0 = Date.now()
    assert.equal(await sbx.commands.kill(h.pid), true)
    await assert.rejects(h.wait(), (e) => {
      assert.ok(e instanceof CommandExitError, `got ${e?.constructor?.name}: ${e?.message}`)
      assert.equal(e.exitCode, -1)
      assert.equal(e.error, 'signal: killed')
      return true
    })
    assert.ok(Date.now() - t0 < 30000, 'killed well before the sleep ends')
    assert.equal(out.join(''), 'started\n')
    assert.equal(await sbx.commands.kill(h.pid), false, 'kill of a gone pid returns false')

    // A background command that finishes by itself.
    const h2 = await sbx.commands.run('echo one; sleep 0.2; echo two >&2; exit 0', { background: true })
    const r = await h2.wait()
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, 'one\n')
    assert.equal(r.stderr, 'two\n')
  })

  test('pause, then Sandbox.connect: files and a background process survive', T, async () => {
    const id = sbx.sandboxId
    await sbx.files.write('/tmp/peer/keep.txt', 'kept across pause')
    const bg = await sbx.commands.run('while :; do echo tick >> /tmp/peer/ticks; sleep 0.1; done', {
      background: true,
    })
    await bg.disconnect()
    assert.equal(await sbx.pause(), true)
    assert.equal(await Sandbox.pause(id), false, 'second pause: 409, already paused')
    const info = await Sandbox.getInfo(id)
    assert.equal(info.state, 'paused')
    const paused = Sandbox.list({ query: { state: ['paused'], metadata: { run: RUN } } })
    const pausedIds = (await paused.nextItems()).map((s) => s.sandboxId)
    assert.ok(pausedIds.includes(id), 'listed as paused')

    const sbx2 = await Sandbox.connect(id)
    assert.equal(sbx2.sandboxId, id)
    assert.equal((await sbx2.getInfo()).state, 'running')
    assert.equal(await sbx2.files.read('/tmp/peer/keep.txt'), 'kept across pause')
    const procs = await sbx2.commands.list()
    assert.ok(
      procs.some((p) => p.pid === bg.pid),
      `background pid ${bg.pid} still listed after resume: ${JSON.stringify(procs.map((p) => p.pid))}`,
    )
    // It keeps running: the tick file grows (generous bound, no timing assertion).
    const count = async () => Number((await sbx2.commands.run('cat /tmp/peer/ticks 2>/dev/null | wc -l')).stdout.trim())
    const n0 = await count()
    let n1 = n0
    for (let i = 0; i < 100 && n1 <= n0; i++) {
      await sleep(100)
      n1 = await count()
    }
    assert.ok(n1 > n0, 'background process still running after resume')
    assert.equal(await sbx2.commands.kill(bg.pid), true)
    // Connecting to a running sandbox works too (TTL extension only).
    const sbx3 = await Sandbox.connect(id)
    assert.equal((await sbx3.commands.run('echo again')).stdout, 'again\n')
    sbx = sbx3
  })

  test('Sandbox.list: metadata filter across pages (limit 2, 5 sandboxes)', T, async () => {
    const group = `list-${RUN}`
    const odd = 'a&b=c d/é%'
    const mine = []
    for (let i = 0; i < 5; i++) mine.push((await create({ group, odd, idx: String(i) })).sandboxId)
    await create({ group: `${group}-other`, odd }) // must not match
    await create({ group, odd: 'different' }) // must not match (AND of pairs)

    const pager = Sandbox.list({ query: { metadata: { group, odd } }, limit: 2 })
    const pages = []
    while (pager.hasNext) {
      pages.push(await pager.nextItems())
      assert.ok(pages.length <= 10, 'paginator terminates')
    }
    assert.deepEqual(
      pages.map((p) => p.length),
      [2, 2, 1],
    )
    const ids = pages.flat().map((s) => s.sandboxId)
    assert.deepEqual([...ids].sort(), [...mine].sort())
    for (const s of pages.flat()) {
      assert.equal(s.metadata.group, group)
      assert.equal(s.metadata.odd, odd)
      assert.equal(s.state, 'running')
      assert.equal(s.templateId.length > 0, true)
    }
    // state filter: none of them is paused
    const pausedPager = Sandbox.list({ query: { metadata: { group }, state: ['paused'] } })
    assert.deepEqual(await pausedPager.nextItems(), [])
    for (const id of mine) assert.equal(await Sandbox.kill(id), true)
  })

  test('kill', T, async () => {
    const id = sbx.sandboxId
    assert.equal(await sbx.kill(), true)
    assert.equal(await Sandbox.kill(id), false, 'second kill: 404')
    await assert.rejects(Sandbox.connect(id), (e) => {
      assert.ok(e instanceof SandboxNotFoundError, `got ${e?.constructor?.name}: ${e?.message}`)
      return true
    })
    await assert.rejects(Sandbox.getInfo(id), (e) => e instanceof SandboxNotFoundError)
    const left = await Sandbox.list({ query: { metadata: { run: RUN, purpose: 'main' } } }).nextItems()
    assert.deepEqual(left, [])
    // A paused sandbox can be killed too.
    const p = await create({ purpose: 'paused-kill' })
    assert.equal(await p.pause(), true)
    assert.equal(await Sandbox.kill(p.sandboxId), true)
    await assert.rejects(Sandbox.connect(p.sandboxId), (e) => e instanceof SandboxNotFoundError)
  })
})

// Beyond the required scenarios: more of the SDK surface the fake should serve
// as E2B does (docs/internals/wire.md "Process start", "envd's HTTP routes",
// "Pointing an SDK at a local server").
describe('e2b SDK against fake-e2b: more of the surface', { concurrency: false }, () => {
  let sbx

  before(async () => {
    sbx = await create({ purpose: 'extras' }, { envs: { PEER_CREATE_ENV: 'from create' } })
  })

  test('create-time envs and the E2B default environment', T, async () => {
    const r = await sbx.commands.run('printf "%s|%s|%s" "$PEER_CREATE_ENV" "$E2B_SANDBOX" "$E2B_SANDBOX_ID"')
    assert.equal(r.stdout, `from create|true|${sbx.sandboxId}`)
    const o = await sbx.commands.run('printf "%s" "$PEER_CREATE_ENV"', { envs: { PEER_CREATE_ENV: 'override' } })
    assert.equal(o.stdout, 'override', 'request envs win over create-time envs')
  })

  // FINDINGS.md #4 (fixed in fake-e2b fd4a58d): the deadline must bound the process even
  // though the SDK's own deadline detaches the stream at the same moment.
  test('commands.run: timeoutMs ends the command (deadline_exceeded)', T, async () => {
    const t0 = Date.now()
    await assert.rejects(sbx.commands.run('sleep 30; echo never', { timeoutMs: 1000 }), (e) => {
      assert.ok(e instanceof TimeoutError, `got ${e?.constructor?.name}: ${e?.message}`)
      return true
    })
    assert.ok(Date.now() - t0 < 20000, 'returned long before the sleep ends')
    let procs = []
    for (let i = 0; i < 50; i++) {
      procs = (await sbx.commands.list()).filter((p) => p.args?.some((x) => x.includes('sleep 30')))
      if (!procs.length) break
      await sleep(100)
    }
    assert.deepEqual(procs, [], 'envd killed the timed-out process')
  })

  test('commands: stdin, sendStdin and closeStdin', T, async () => {
    const h = await sbx.commands.run('cat; echo done', { background: true, stdin: true })
    await sbx.commands.sendStdin(h.pid, 'line 1\n')
    await sbx.commands.sendStdin(h.pid, new TextEncoder().encode('line 2\n'))
    await sbx.commands.closeStdin(h.pid)
    const r = await h.wait()
    assert.equal(r.stdout, 'line 1\nline 2\ndone\n')
  })

  test('commands.connect to a running process', T, async () => {
    // Output made while no client is attached is dropped (docs/internals/wire.md "Process start"), so the process
    // waits for a go file written after the reconnect.
    const h = await sbx.commands.run('while [ ! -e /tmp/go ]; do sleep 0.05; done; echo after; exit 3', {
      background: true,
    })
    await h.disconnect()
    const h2 = await sbx.commands.connect(h.pid)
    assert.equal(h2.pid, h.pid)
    await sbx.files.write('/tmp/go', '')
    await assert.rejects(h2.wait(), (e) => {
      assert.ok(e instanceof CommandExitError, `got ${e?.constructor?.name}: ${e?.message}`)
      assert.equal(e.exitCode, 3)
      assert.equal(e.stdout, 'after\n')
      return true
    })
  })

  test('files: ownership follows the user', T, async () => {
    await sbx.files.write('/tmp/own-default', 'x')
    await sbx.files.write('/tmp/own-root', 'x', { user: 'root' })
    const def = (await sbx.commands.run('id -un')).stdout.trim()
    const r = await sbx.commands.run('stat -c %U /tmp/own-default /tmp/own-root')
    assert.equal(r.stdout, `${def}\nroot\n`)
  })

  test('files: makeDir, getInfo, rename, remove', T, async () => {
    assert.equal(await sbx.files.makeDir('/tmp/px/deep/dir'), true)
    assert.equal(await sbx.files.makeDir('/tmp/px/deep/dir'), false, 'already exists')
    await sbx.files.write('/tmp/px/f.txt', 'abc')
    const info = await sbx.files.getInfo('/tmp/px/f.txt')
    assert.equal(info.type, 'file')
    assert.equal(info.size, 3)
    assert.equal(info.name, 'f.txt')
    const dinfo = await sbx.files.getInfo('/tmp/px/deep')
    assert.equal(dinfo.type, 'dir')
    const moved = await sbx.files.rename('/tmp/px/f.txt', '/tmp/px/deep/g.txt')
    assert.equal(moved.path, '/tmp/px/deep/g.txt')
    assert.equal(await sbx.files.read('/tmp/px/deep/g.txt'), 'abc')
    assert.equal(await sbx.files.exists('/tmp/px/f.txt'), false)
    await sbx.files.remove('/tmp/px')
    assert.equal(await sbx.files.exists('/tmp/px'), false)
    await sbx.files.remove('/tmp/px') // missing path is not an error
    await assert.rejects(sbx.files.getInfo('/tmp/px'), (e) => e instanceof FileNotFoundError)
  })

  test('getMetrics', T, async () => {
    const m = await sbx.getMetrics()
    assert.ok(Array.isArray(m))
    for (const x of m) assert.ok(x.timestamp instanceof Date && Number.isFinite(x.cpuCount))
  })

  test('setTimeout moves endAt', T, async () => {
    await sbx.setTimeout(600_000)
    const a = await sbx.getInfo()
    const left = a.endAt.getTime() - Date.now()
    assert.ok(left > 500_000 && left <= 610_000, `endAt in ${left} ms`)
    await sbx.setTimeout(120_000) // /timeout may shorten
    const b = await sbx.getInfo()
    assert.ok(b.endAt.getTime() < a.endAt.getTime())
  })

  test('sandbox timeout: onTimeout pause pauses (files kept), the default kills', T, async () => {
    // Created with a long timeout and shortened only once set up (POST /sandboxes/{id}/timeout sets
    // the end time exactly), so a slow machine cannot expire them before the file is written.
    const a = await create({ purpose: 'ttl-pause' }, { timeoutMs: 300_000, lifecycle: { onTimeout: 'pause' } })
    const k = await create({ purpose: 'ttl-kill' }, { timeoutMs: 300_000 })
    await a.files.write('/tmp/ttl', 'kept')
    await a.setTimeout(1000)
    await k.setTimeout(1000)
    const stateOf = (id) => Sandbox.getInfo(id).then((i) => i.state, (e) => (e instanceof SandboxNotFoundError ? 'gone' : e))
    let sa, sk
    for (let i = 0; i < 300; i++) {
      ;[sa, sk] = [await stateOf(a.sandboxId), await stateOf(k.sandboxId)]
      if (sa === 'paused' && sk === 'gone') break
      await sleep(100)
    }
    assert.equal(sa, 'paused')
    assert.equal(sk, 'gone')
    const a2 = await Sandbox.connect(a.sandboxId)
    assert.equal(await a2.files.read('/tmp/ttl'), 'kept')
    assert.deepEqual((await a2.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: false })
    assert.equal(await a2.kill(), true)
  })

  test('errors map to the SDK classes E2B gives', T, async () => {
    const is = (cls) => (e) => {
      assert.ok(e instanceof cls, `want ${cls.name}, got ${e?.constructor?.name}: ${e?.message}`)
      return true
    }
    await sbx.files.write('/tmp/errf', 'x')
    await assert.rejects(sbx.commands.run('pwd', { cwd: '/no/such' }), is(InvalidArgumentError))
    await assert.rejects(sbx.commands.run('id', { user: 'nosuchuser' }), is(AuthenticationError))
    await assert.rejects(sbx.files.read('/etc/hostname', { user: 'nosuchuser' }), is(AuthenticationError))
    await assert.rejects(sbx.files.read('/tmp'), is(InvalidArgumentError))
    await assert.rejects(sbx.files.write('/tmp', 'x'), is(InvalidArgumentError))
    await assert.rejects(sbx.files.list('/tmp/errf'), is(InvalidArgumentError))
    await assert.rejects(sbx.files.makeDir('/tmp/errf'), is(InvalidArgumentError))
    await assert.rejects(sbx.files.rename('/tmp/nope', '/tmp/nope2'), is(FileNotFoundError))
    await assert.rejects(Sandbox.pause('izzzzzzzzzzzzzzzzzzzz'), is(SandboxNotFoundError))
    await assert.rejects(Sandbox.connect('izzzzzzzzzzzzzzzzzzzz'), is(SandboxNotFoundError))
    await assert.rejects(Sandbox.list({ limit: 101 }).nextItems(), (e) => {
      assert.ok(e instanceof SandboxError && /^400: /.test(e.message), `${e?.constructor?.name}: ${e?.message}`)
      return true
    })
  })

  test('relative paths and the default cwd resolve to the user home', T, async () => {
    assert.equal((await sbx.commands.run('pwd')).stdout, '/workspace\n')
    await sbx.files.write('rel.txt', 'rel')
    assert.equal(await sbx.files.read('/workspace/rel.txt'), 'rel')
    assert.equal(await sbx.files.read('rel.txt'), 'rel')
  })

  test('a bad API key is an AuthenticationError', T, async () => {
    await assert.rejects(Sandbox.create(TEMPLATE, { apiKey: 'not-a-key' }), (e) => {
      assert.ok(e instanceof AuthenticationError, `got ${e?.constructor?.name}: ${e?.message}`)
      return true
    })
  })

  test('isRunning is false after kill', T, async () => {
    assert.equal(await sbx.isRunning(), true)
    assert.equal(await sbx.kill(), true)
    assert.equal(await sbx.isRunning(), false)
  })
})
