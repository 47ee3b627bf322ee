// Peer test: envd's filesystem service beyond the basics, through the official e2b SDK
// (pinned in package.json): WatchDir (inotify), file metadata (X-Metadata-* upload headers kept as
// user.e2b.* extended attributes) and where a symlink leads.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test filesystem.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { FileNotFoundError, FilesystemEventType, InvalidArgumentError, Sandbox } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
let fake
let sbx

// Resolves once `pred` holds for an event seen by the watch (or rejects after 20 s).
function waiter(events, pred, what) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no ${what} in ${JSON.stringify(events)}`)), 20000)
    const check = () => {
      const e = events.find(pred)
      if (e) {
        clearTimeout(t)
        resolve(e)
        return true
      }
      return false
    }
    if (!check()) events.onPush = () => check() && (events.onPush = null)
  })
}

function collector() {
  const events = []
  const push = (e) => {
    events.push(e)
    events.onPush?.()
  }
  return { events, push }
}

before(async () => {
  fake = await startFake(fakePath())
  sbx = await Sandbox.create('base')
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  if (fake) await fake.stop()
})

describe('filesystem', { concurrency: false }, () => {
  test('watchDir: create, write, remove and rename with names relative to the path', T, async () => {
    await sbx.files.makeDir('w1')
    const { events, push } = collector()
    const h = await sbx.files.watchDir('w1', push)
    await sbx.files.write('w1/a.txt', 'one')
    await waiter(events, (e) => e.type === FilesystemEventType.WRITE && e.name === 'a.txt', 'write a.txt')
    assert.ok(events.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'a.txt'))
    await sbx.files.rename('w1/a.txt', 'w1/b.txt')
    await waiter(events, (e) => e.type === FilesystemEventType.RENAME && e.name === 'a.txt', 'rename a.txt')
    await waiter(events, (e) => e.type === FilesystemEventType.CREATE && e.name === 'b.txt', 'create b.txt')
    await sbx.files.remove('w1/b.txt')
    await waiter(events, (e) => e.type === FilesystemEventType.REMOVE && e.name === 'b.txt', 'remove b.txt')
    // not recursive: a file in a subdirectory is not reported
    await sbx.files.makeDir('w1/sub')
    await waiter(events, (e) => e.type === FilesystemEventType.CREATE && e.name === 'sub', 'create sub')
    await sbx.files.write('w1/sub/deep.txt', 'x')
    await sbx.files.write('w1/after.txt', 'x') // a later event in the watched directory itself
    await waiter(events, (e) => e.type === FilesystemEventType.WRITE && e.name === 'after.txt', 'write after.txt')
    assert.equal(events.filter((e) => e.name.startsWith('sub/')).length, 0)
    await h.stop()
  })

  test('watchDir recursive: existing and new subdirectories, with entries', T, async () => {
    await sbx.files.makeDir('w2/old')
    const { events, push } = collector()
    const h = await sbx.files.watchDir('w2', push, { recursive: true, includeEntry: true })
    await sbx.files.write('w2/old/f.txt', 'x')
    const w = await waiter(events, (e) => e.type === FilesystemEventType.WRITE && e.name === 'old/f.txt', 'write old/f.txt')
    assert.equal(w.entry?.path, '/home/user/w2/old/f.txt')
    assert.equal(w.entry?.name, 'f.txt')
    assert.equal(w.entry?.type, 'file')
    await sbx.files.makeDir('w2/new')
    await waiter(events, (e) => e.type === FilesystemEventType.CREATE && e.name === 'new', 'create new')
    await sbx.files.write('w2/new/g.txt', 'y')
    await waiter(events, (e) => e.type === FilesystemEventType.WRITE && e.name === 'new/g.txt', 'write new/g.txt')
    await h.stop()
  })

  test('metadata: returned by the upload, Stat, ListDir and Move; an overwrite replaces it', T, async () => {
    const meta = { author: 'peer', purpose: 'test' }
    let info = await sbx.files.write('meta/a.txt', 'x', { metadata: meta })
    assert.deepEqual(info.metadata, meta)
    assert.deepEqual((await sbx.files.getInfo('meta/a.txt')).metadata, meta)
    info = await sbx.files.write('meta/b.txt', 'y', { metadata: { k: 'v' }, useOctetStream: true })
    assert.deepEqual(info.metadata, { k: 'v' })
    const listed = Object.fromEntries((await sbx.files.list('meta')).map((e) => [e.name, e.metadata]))
    assert.deepEqual(listed, { 'a.txt': meta, 'b.txt': { k: 'v' } })
    assert.deepEqual((await sbx.files.rename('meta/b.txt', 'meta/c.txt')).metadata, { k: 'v' })
    // stored as extended attributes, visible to the sandbox's own tools
    const attr = await sbx.commands.run(
      `python3 -c "import os; print(os.getxattr('/home/user/meta/a.txt', 'user.e2b.author').decode())"`,
    )
    assert.equal(attr.stdout, 'peer\n')
    // an upload without metadata clears what the file had
    info = await sbx.files.write('meta/a.txt', 'z')
    assert.equal(info.metadata, undefined)
    assert.equal((await sbx.files.getInfo('meta/a.txt')).metadata, undefined)
  })

  test('symlinkTarget: absolute, every link on the way resolved', T, async () => {
    await sbx.commands.run(
      'mkdir -p ln/d/e && touch ln/f && cd ln && ln -s f l1 && ln -s d l2 && ln -s l2/e l3 && ln -s /no/where l4 && cd d && ln -s ../l1 l5',
    )
    const target = async (p) => (await sbx.files.getInfo(p)).symlinkTarget
    assert.equal(await target('ln/l1'), '/home/user/ln/f')
    assert.equal(await target('ln/l3'), '/home/user/ln/d/e')
    assert.equal(await target('ln/l4'), '/no/where')
    assert.equal(await target('ln/d/l5'), '/home/user/ln/f')
  })

  test('watchDir: a missing path and a file are errors', T, async () => {
    await assert.rejects(sbx.files.watchDir('no-such-dir', () => {}), FileNotFoundError)
    await sbx.files.write('plain.txt', 'x')
    await assert.rejects(sbx.files.watchDir('plain.txt', () => {}), InvalidArgumentError)
  })

  test('signed URLs: a plain fetch from E2B_SANDBOX_URL finds its sandbox by the signature; envd\'s 401s', T, async () => {
    const other = await Sandbox.create('base') // two sandboxes: the signature picks the right one
    try {
      const up = await sbx.uploadUrl('signed/up.txt')
      assert.ok(up.startsWith(fake.url + '/files?'))
      const form = new FormData()
      form.append('file', 'sent by a signed URL')
      let r = await fetch(up, { method: 'POST', body: form })
      assert.equal(r.status, 200)
      assert.equal((await r.json())[0].path, '/home/user/signed/up.txt')
      r = await fetch(await sbx.downloadUrl('signed/up.txt', { useSignatureExpiration: 60_000 }))
      assert.equal(r.status, 200)
      assert.equal(await r.text(), 'sent by a signed URL')
      assert.equal(await other.files.exists('signed/up.txt'), false)

      r = await fetch(await sbx.downloadUrl('signed/up.txt', { useSignatureExpiration: -100_000 }))
      assert.equal(r.status, 401)
      assert.deepEqual(await r.json(), { code: 401, message: 'signature is already expired' })
      const tampered = (await sbx.downloadUrl('signed/up.txt')).replace('signed%2Fup.txt', 'signed%2Fother.txt')
      r = await fetch(tampered, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } })
      assert.deepEqual(await r.json(), { code: 401, message: 'invalid signature' })
      r = await fetch(`${fake.url}/files?path=signed/up.txt`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } })
      assert.deepEqual(await r.json(), { code: 401, message: 'missing signature query parameter' })
      // a signature no sandbox made names none: the proxy's 502
      r = await fetch(`${fake.url}/files?path=x&signature=v1_AAAA`)
      assert.equal(r.status, 502)
    } finally {
      await other.kill()
    }
  })
})
