// Peer test: snapshots and forks through the official e2b SDK (pinned in package.json):
// createSnapshot (named and not), listSnapshots with its filters, Sandbox.create from a snapshot,
// deleteSnapshot, fork (one and several), and their refusals.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test snapshots.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
let fake
const made = []

async function track(p) {
  const s = await p
  made.push(s)
  return s
}

function api(method, path, body) {
  return fetch(fake.url + path, {
    method,
    headers: { 'X-API-Key': fake.apiKey, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

before(async () => {
  fake = await startFake(fakePath())
})

after(async () => {
  await Promise.all(made.map((s) => s.kill().catch(() => {})))
  if (fake) await fake.stop()
})

describe('snapshots', { concurrency: false }, () => {
  test('a snapshot keeps the files; sandboxes made from it start from them, apart', T, async () => {
    const src = await track(Sandbox.create('base', { envs: { FROM_CREATE: 'kept' } }))
    await src.files.write('/home/user/notes/a.txt', 'before the snapshot')
    await src.commands.run('sudo sh -c "echo root-owned > /etc/snapshot-marker"')
    await src.commands.run('sleep 300', { background: true })
    const snap = await src.createSnapshot()
    assert.match(snap.snapshotId, /^[a-z0-9]{20}:default$/)
    assert.deepEqual(snap.names, [])
    // the source runs on (its process too), and later changes are not in the snapshot
    assert.equal(await src.isRunning(), true)
    assert.equal((await src.commands.run('ps -eo comm= | grep -c "^sleep$"')).stdout, '1\n')
    await src.files.write('/home/user/notes/a.txt', 'after the snapshot')

    const one = await track(Sandbox.create(snap.snapshotId))
    const two = await track(Sandbox.create(snap.snapshotId))
    assert.equal((await one.getInfo()).templateId, snap.snapshotId.split(':')[0])
    assert.equal(await one.files.read('/home/user/notes/a.txt'), 'before the snapshot')
    assert.equal((await one.commands.run('cat /etc/snapshot-marker')).stdout, 'root-owned\n')
    assert.equal((await one.commands.run('id -un')).stdout, 'user\n') // the template's user
    await one.files.write('/home/user/notes/a.txt', 'changed in one')
    assert.equal(await two.files.read('/home/user/notes/a.txt'), 'before the snapshot')
    // a sandbox from a snapshot boots anew: no process of the source runs in it
    const ps = await one.commands.run('ps -eo comm= | grep -c "^sleep$" || true')
    assert.equal(ps.stdout, '0\n')
  })

  test('named snapshots, the list and its filters, delete', T, async () => {
    const a = await track(Sandbox.create('base'))
    const b = await track(Sandbox.create('base'))
    const named = await a.createSnapshot({ name: 'peer-snap' })
    assert.equal(named.snapshotId, 'peer-snap:default')
    assert.deepEqual(named.names, ['peer-snap'])
    const tagged = await a.createSnapshot({ name: 'peer-snap:v2' })
    assert.equal(tagged.snapshotId, 'peer-snap:v2')
    const fromB = await b.createSnapshot()

    const ids = async (opts) => (await Sandbox.listSnapshots(opts).nextItems()).map((s) => s.snapshotId).sort()
    assert.deepEqual(await ids({ sandboxId: a.sandboxId }), ['peer-snap:default', 'peer-snap:v2'])
    assert.deepEqual(await ids({ sandboxId: b.sandboxId }), [fromB.snapshotId])
    assert.deepEqual(await ids({ name: 'peer-snap:v2' }), ['peer-snap:v2'])
    assert.deepEqual(await ids({ name: 'no-such-snap' }), [])
    const p = b.listSnapshots({ limit: 1 }) // the instance method filters by its sandbox
    assert.equal((await p.nextItems()).length, 1)
    assert.equal(p.hasNext, false)
    // both tags boot
    const fromTag = await track(Sandbox.create('peer-snap:v2'))
    // a sandbox made from the snapshot holds it (E2B: its base template)
    await assert.rejects(Sandbox.deleteSnapshot(named.snapshotId), /because there are running sandboxes using it/)
    await fromTag.kill()

    assert.equal(await Sandbox.deleteSnapshot(named.snapshotId), true)
    assert.equal(await Sandbox.deleteSnapshot(named.snapshotId), false)
    assert.deepEqual(await ids({ sandboxId: a.sandboxId }), [])
    await assert.rejects(Sandbox.create('peer-snap'), /not found/)
    assert.equal(await Sandbox.deleteSnapshot(fromB.snapshotId), true)
  })

  test('refusals: bad names, runtime templates, paused or unknown sandboxes', T, async () => {
    const s = await track(Sandbox.create('base'))
    let r = await api('POST', `/sandboxes/${s.sandboxId}/snapshots`, { name: 'Bad Name' })
    assert.equal(r.status, 400)
    r = await api('POST', `/sandboxes/${s.sandboxId}/snapshots`, { name: 'base' })
    assert.equal(r.status, 400)
    r = await api('DELETE', '/templates/base')
    assert.equal(r.status, 403) // E2B: another team's template
    await s.pause()
    await assert.rejects(s.createSnapshot(), SandboxNotFoundError)
    await assert.rejects(Sandbox.createSnapshot('inosuchsandbox0000000'), SandboxNotFoundError)
  })
})

describe('forks', { concurrency: false }, () => {
  test('fork: running copies with the files, metadata and envs; the source runs on', T, async () => {
    const src = await track(Sandbox.create('base', { metadata: { who: 'source' }, envs: { CARRIED: 'yes' } }))
    await src.files.write('/home/user/state.txt', 'at fork time')
    const forks = await src.fork({ count: 2, timeoutMs: 60_000 })
    assert.equal(forks.length, 2)
    for (const f of forks) {
      assert.ok(f instanceof Sandbox)
      made.push(f)
      assert.notEqual(f.sandboxId, src.sandboxId)
      assert.equal(await f.files.read('/home/user/state.txt'), 'at fork time')
      assert.equal((await f.commands.run('echo $CARRIED')).stdout, 'yes\n')
      const info = await f.getInfo()
      assert.deepEqual(info.metadata, { who: 'source' })
      assert.equal(info.templateId, 'base')
      // the fork's own timeout: about 60 s from now
      const left = info.endAt.getTime() - Date.now()
      assert.ok(left > 40_000 && left <= 61_000, `endAt in ${left} ms`)
    }
    await forks[0].files.write('/home/user/state.txt', 'changed in a fork')
    assert.equal(await src.files.read('/home/user/state.txt'), 'at fork time')
    assert.equal(await forks[1].files.read('/home/user/state.txt'), 'at fork time')
    assert.equal(await src.isRunning(), true)
  })

  test('fork refusals: count out of range is 400, a killed sandbox is not found', T, async () => {
    const s = await track(Sandbox.create('base'))
    let r = await api('POST', `/sandboxes/${s.sandboxId}/fork`, { count: 0 })
    assert.equal(r.status, 400)
    assert.equal((await r.json()).message, 'Count must be at least 1')
    r = await api('POST', `/sandboxes/${s.sandboxId}/fork`, { count: 101 })
    assert.equal(r.status, 400)
    await s.kill()
    await assert.rejects(s.fork(), SandboxNotFoundError)
  })
})
