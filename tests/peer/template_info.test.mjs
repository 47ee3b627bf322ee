// Peer test: what E2B's API tells of templates beyond building them, against fake-e2b:
// GET /templates (the listing), GET /templates/{templateID} (with its builds, paged),
// PATCH /templates/{id} and /v2/templates/{id} (public), a build's logs
// (GET /templates/{id}/builds/{buildID}/logs with cursor, direction, level, limit) and
// DELETE /templates/{id} while sandboxes use the template. The npm SDK builds the templates
// and makes the sandboxes; it has no call for the routes above, so they are plain fetches
// with the SDK's headers.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test template_info.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { BuildError, Sandbox, Template } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
const TEAM_ID = '6d9c3b4e-2a1f-4c8e-9b7a-e2b0fa4e0001' // fake-e2b's one team (README)
const ZERO_BUILD = '00000000-0000-0000-0000-000000000000'
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/
let fake
const made = []
let seq = 0
const uniqueName = (what) => `info-${what}-${process.pid}-${++seq}`

function api(method, path, body) {
  return fetch(fake.url + path, {
    method,
    headers: { 'X-API-Key': fake.apiKey, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
}

async function json(method, path, body) {
  const r = await api(method, path, body)
  return { status: r.status, body: await r.json(), headers: r.headers }
}

async function track(p) {
  const s = await p
  made.push(s)
  return s
}

// A build of `base` whose RUN writes 3 MiB into the template's files and prints two lines.
function threeMiB() {
  return Template()
    .fromBaseImage()
    .runCmd('head -c 3145728 /dev/zero > /home/user/three-mib && echo first-line && echo second-line')
}

before(async () => {
  fake = await startFake(fakePath())
})

after(async () => {
  await Promise.all(made.map((s) => s.kill().catch(() => {})))
  if (fake) await fake.stop()
})

describe('templates: listing, details, updates, build logs, deletion', { concurrency: false }, () => {
  let name, first, second

  before(async () => {
    name = uniqueName('listed')
    first = await Template.build(threeMiB(), name, { cpuCount: 1, memoryMB: 512 })
    second = await Template.build(threeMiB(), name)
  })

  test('GET /templates lists the built templates with E2B fields; spawns are counted', T, async () => {
    const tagOnly = uniqueName('tagonly')
    const v1 = await Template.build(Template().fromBaseImage(), `${tagOnly}:v1`)
    let r = await json('GET', '/templates')
    assert.equal(r.status, 200)
    const mine = r.body.find((t) => t.templateID === first.templateId)
    assert.deepEqual(Object.keys(mine).sort(), [
      'aliases', 'buildCount', 'buildID', 'buildStatus', 'cpuCount', 'createdAt', 'createdBy', 'diskSizeMB',
      'envdVersion', 'lastSpawnedAt', 'memoryMB', 'names', 'public', 'spawnCount', 'templateID', 'updatedAt',
    ])
    assert.equal(mine.buildID, second.buildId) // the `default` tag's build: the second
    assert.equal(mine.cpuCount, 2)
    assert.equal(mine.memoryMB, 1024)
    // the build's files: 3 MiB written by the RUN, and little else (MiB, rounded up)
    assert.ok(mine.diskSizeMB >= 3 && mine.diskSizeMB <= 8, String(mine.diskSizeMB))
    assert.equal(mine.public, false)
    assert.deepEqual(mine.aliases, [name])
    assert.deepEqual(mine.names, [name])
    assert.equal(mine.createdBy, null)
    assert.equal(mine.lastSpawnedAt, null)
    assert.equal(mine.spawnCount, 0)
    assert.equal(mine.buildCount, 2)
    assert.equal(mine.envdVersion, '0.6.13')
    assert.equal(mine.buildStatus, 'ready')
    assert.match(mine.createdAt, TIME)
    assert.ok(mine.updatedAt >= mine.createdAt)
    // oldest first: the tag-only template came later
    const ids = r.body.map((t) => t.templateID)
    assert.ok(ids.indexOf(first.templateId) < ids.indexOf(v1.templateId))
    // a template without a `default` tag has no build to show (E2B's zero values)
    const other = r.body.find((t) => t.templateID === v1.templateId)
    assert.equal(other.buildID, ZERO_BUILD)
    assert.equal(other.cpuCount, 0)
    assert.equal(other.memoryMB, 0)
    assert.equal(other.diskSizeMB, 0)
    assert.equal(other.envdVersion, '')
    assert.equal(other.buildStatus, 'waiting')
    assert.equal(r.body.some((t) => t.templateID === 'base'), false)

    const sbx = await track(Sandbox.create(name))
    r = await json('GET', '/templates')
    const spawned = r.body.find((t) => t.templateID === first.templateId)
    assert.equal(spawned.spawnCount, 1)
    assert.match(spawned.lastSpawnedAt, TIME)
    assert.ok(spawned.lastSpawnedAt > mine.updatedAt)
    await sbx.kill()

    r = await json('GET', `/templates?teamID=${TEAM_ID}`)
    assert.equal(r.status, 200)
    r = await json('GET', '/templates?teamID=another-team')
    assert.deepEqual(r.body, { code: 400, message: 'Team ID param mismatch with the API key' })
  })

  test('GET /templates/{templateID}: the template with its builds, newest first, in pages', T, async () => {
    let r = await json('GET', `/templates/${first.templateId}`)
    assert.equal(r.status, 200)
    assert.equal(r.headers.get('x-next-token'), null)
    const t = r.body
    assert.deepEqual(Object.keys(t).sort(), [
      'aliases', 'builds', 'createdAt', 'lastSpawnedAt', 'names', 'public', 'spawnCount', 'templateID', 'updatedAt',
    ])
    assert.equal(t.templateID, first.templateId)
    assert.deepEqual(t.names, [name])
    assert.deepEqual(t.builds.map((b) => b.buildID), [second.buildId, first.buildId])
    const b1 = t.builds[1]
    assert.deepEqual(Object.keys(b1).sort(), [
      'buildID', 'cpuCount', 'createdAt', 'diskSizeMB', 'envdVersion', 'finishedAt', 'memoryMB', 'status', 'updatedAt',
    ])
    assert.equal(b1.status, 'ready')
    assert.equal(b1.cpuCount, 1)
    assert.equal(b1.memoryMB, 512)
    assert.equal(b1.envdVersion, '0.6.13')
    assert.ok(b1.diskSizeMB >= 3, String(b1.diskSizeMB))
    assert.ok(b1.finishedAt >= b1.createdAt)

    r = await json('GET', `/templates/${first.templateId}?limit=1`)
    assert.deepEqual(r.body.builds.map((b) => b.buildID), [second.buildId])
    const token = r.headers.get('x-next-token')
    assert.match(token, /^[A-Za-z0-9_-]+$/)
    r = await json('GET', `/templates/${first.templateId}?limit=1&nextToken=${token}`)
    assert.deepEqual(r.body.builds.map((b) => b.buildID), [first.buildId])
    assert.equal(r.headers.get('x-next-token'), null)

    r = await json('GET', `/templates/${first.templateId}?nextToken=bm9wZQ`)
    assert.deepEqual(r.body, { code: 400, message: 'Invalid next token' })
    r = await json('GET', `/templates/${first.templateId}?limit=101`)
    assert.equal(r.status, 400)
    r = await json('GET', '/templates/base')
    assert.deepEqual(r.body, { code: 403, message: "You don't have access to this sandbox template (base)" })
    r = await json('GET', '/templates/nosuchtemplate')
    assert.deepEqual(r.body, { code: 404, message: 'Template nosuchtemplate not found' })
    r = await json('GET', `/templates/${name}`) // E2B looks it up by templateID only
    assert.equal(r.status, 404)
  })

  test('PATCH /v2/templates/{id} and /templates/{id} set public; the alias lookup shows it', T, async () => {
    let r = await json('PATCH', `/v2/templates/${name}`, { public: true })
    assert.deepEqual(r, { status: 200, body: { names: [name] }, headers: r.headers })
    r = await json('GET', `/templates/aliases/${name}`)
    assert.deepEqual(r.body, { templateID: first.templateId, public: true })
    r = await json('GET', `/templates/${first.templateId}`)
    assert.equal(r.body.public, true)
    assert.ok(r.body.updatedAt > r.body.createdAt)

    let raw = await api('PATCH', `/templates/${first.templateId}`, { public: false })
    assert.equal(raw.status, 200)
    assert.equal(await raw.text(), 'null')
    r = await json('GET', '/templates')
    assert.equal(r.body.find((t) => t.templateID === first.templateId).public, false)

    raw = await api('PATCH', `/v2/templates/${name}`, {}) // no field: nothing changes
    assert.deepEqual(await raw.json(), { names: [name] })
    r = await json('GET', `/templates/aliases/${name}`)
    assert.equal(r.body.public, false)

    r = await json('PATCH', `/v2/templates/${name}`, { public: 'yes' })
    assert.equal(r.status, 400)
    r = await json('PATCH', `/v2/templates/${name}`, '[')
    assert.equal(r.status, 400)
    r = await json('PATCH', '/v2/templates/base', { public: false })
    assert.deepEqual(r.body, { code: 403, message: "You don't have access to template 'base'" })
    r = await json('PATCH', '/v2/templates/nosuchtemplate', { public: true })
    assert.deepEqual(r.body, { code: 404, message: "template 'nosuchtemplate' not found" })
  })

  test('build logs: the status route\'s entries, with cursor, direction, level and limit', T, async () => {
    const base = `/templates/${first.templateId}/builds/${first.buildId}`
    const status = await json('GET', `${base}/status`)
    const all = status.body.logEntries
    assert.ok(all.length >= 5, JSON.stringify(all))
    let r = await json('GET', `${base}/logs`)
    assert.deepEqual(r, { status: 200, body: { logs: all }, headers: r.headers })
    assert.ok(all.some((e) => e.message === '[builder 1/1] [stdout]: first-line'), JSON.stringify(all))
    // each entry names its step as E2B's builder does (base, the step's number, finalize);
    // the build's own lines have none
    const stepOf = (m) => all.find((e) => e.message === m)?.step
    assert.equal(stepOf(`Building template ${first.templateId}/${first.buildId}`), undefined)
    assert.equal(stepOf('[base] FROM e2bdev/base'), 'base')
    assert.equal(stepOf('[builder 1/1] [stdout]: second-line'), '1')
    assert.equal(all[all.length - 1].step, undefined)
    assert.match(all[all.length - 1].message, /^Build finished/)
    for (const e of all) assert.ok(e.step === undefined || /^(base|\d+|finalize)$/.test(e.step), JSON.stringify(e))

    r = await json('GET', `${base}/logs?direction=backward&limit=2`)
    assert.deepEqual(r.body.logs, [all[all.length - 1], all[all.length - 2]])
    r = await json('GET', `${base}/logs?limit=0`)
    assert.deepEqual(r.body.logs, [])
    r = await json('GET', `${base}/logs?level=warn`)
    assert.deepEqual(r.body.logs, all.filter((e) => e.level === 'warn' || e.level === 'error'))

    // the cursor (ms): forward from it on, backward before it
    const k = Math.floor(all.length / 2)
    const ms = (e) => Math.floor(Date.parse(e.timestamp))
    const cursor = ms(all[k])
    r = await json('GET', `${base}/logs?cursor=${cursor}`)
    assert.deepEqual(r.body.logs, all.filter((e) => ms(e) >= cursor))
    r = await json('GET', `${base}/logs?cursor=${cursor}&direction=backward`)
    assert.deepEqual(r.body.logs, all.filter((e) => ms(e) < cursor).reverse())
    assert.ok(r.body.logs.length >= 1 && r.body.logs.length < all.length)

    // a failed build: its error entry at level error, also through the status's level
    let failed
    await assert.rejects(
      Template.build(Template().fromBaseImage().runCmd('exit 3'), uniqueName('fails')),
      (e) => {
        failed = e
        return e instanceof BuildError
      },
    )
    const list = await json('GET', '/templates')
    const ft = list.body.find((t) => t.buildStatus === 'error')
    const fb = (await json('GET', `/templates/${ft.templateID}`)).body.builds[0]
    assert.equal(fb.status, 'error')
    assert.equal('envdVersion' in fb, false)
    r = await json('GET', `/templates/${ft.templateID}/builds/${fb.buildID}/logs?level=error`)
    const why = "failed to run command 'exit 3': exit status 3"
    assert.deepEqual(
      r.body.logs.map((e) => [e.level, e.message, e.step]),
      [['error', `[builder 1/1] ${why}`, '1'], ['error', `Build failed: ${why}`, undefined]],
    )
    assert.match(failed.message, /exit status 3/)
    r = await json('GET', `/templates/${ft.templateID}/builds/${fb.buildID}/status?level=error`)
    assert.deepEqual(r.body.logEntries.map((e) => e.message), [`[builder 1/1] ${why}`, `Build failed: ${why}`])
    assert.deepEqual(r.body.logs, []) // plain lines are for E2B's v1 builds only
    // the reason carries the failed step's entries at warn or above
    assert.deepEqual(r.body.reason.step, '1')
    assert.deepEqual(r.body.reason.logEntries.map((e) => [e.message, e.step]), [[`[builder 1/1] ${why}`, '1']])

    r = await json('GET', `/templates/${first.templateId}/builds/not-a-uuid/logs`)
    assert.deepEqual(r.body, { code: 400, message: 'Invalid build id' })
    const unknown = '0a1b2c3d-0000-4000-8000-000000000000'
    r = await json('GET', `/templates/${first.templateId}/builds/${unknown}/logs`)
    assert.deepEqual(r.body, { code: 400, message: `Build '${unknown}' not found` })
    for (const q of ['limit=101', 'direction=sideways', 'level=loud', 'cursor=-1', 'source=elsewhere']) {
      r = await json('GET', `${base}/logs?${q}`)
      assert.equal(r.status, 400, q)
    }
  })

  test('a sandbox reports its template build\'s cpuCount and memoryMB and its alias, and gets them', T, async () => {
    const small = uniqueName('small')
    await Template.build(Template().fromBaseImage(), small, { cpuCount: 1, memoryMB: 384 })
    const sbx = await track(Sandbox.create(small))
    const info = await sbx.getInfo()
    assert.equal(info.cpuCount, 1)
    assert.equal(info.memoryMB, 384)
    assert.equal(info.name, small) // E2B's `alias`: the template's first alias
    assert.deepEqual(info.metadata, {})
    const page = await Sandbox.list({ query: { metadata: {} } }).nextItems()
    const row = page.find((s) => s.sandboxId === sbx.sandboxId)
    assert.equal(row.cpuCount, 1)
    assert.equal(row.memoryMB, 384)
    assert.equal(row.name, small)
    const [m] = await sbx.getMetrics()
    assert.equal(m.cpuCount, 1) // what its box got
    assert.equal(m.memTotal, 384 * 1024 * 1024)
    const plain = await track(Sandbox.create('base'))
    const base = await plain.getInfo()
    assert.equal(base.cpuCount, 2)
    assert.equal(base.memoryMB, 512)
    assert.equal(base.name, 'base')
    await sbx.kill()
    await plain.kill()
  })

  test('a snapshot is a template of its own: GET /templates/{id} shows it, the listing does not', T, async () => {
    const sbx = await track(Sandbox.create('base'))
    const snap = await sbx.createSnapshot()
    const [templateID, tag] = snap.snapshotId.split(':')
    assert.equal(tag, 'default')
    const r = await json('GET', `/templates/${templateID}`)
    assert.equal(r.status, 200)
    assert.deepEqual(r.body.names, []) // unnamed: E2B gives it no name
    assert.equal(r.body.builds.length, 1)
    const b = r.body.builds[0]
    assert.equal(b.status, 'ready')
    assert.equal(b.cpuCount, 2) // the snapshotted sandbox's limits
    assert.equal(b.memoryMB, 512)
    assert.equal(b.envdVersion, '0.6.13')
    const list = await json('GET', '/templates')
    assert.equal(list.body.some((t) => t.templateID === templateID), false)
    await sbx.kill()
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
  })

  test('a snapshot is in use while sandboxes made from it exist; its source template is not', T, async () => {
    const held = uniqueName('held')
    const built = await Template.build(Template().fromBaseImage(), held)
    const src = await track(Sandbox.create(held))
    const snap = await src.createSnapshot()
    const fromSnap = await track(Sandbox.create(snap.snapshotId))
    const [snapTemplateID] = snap.snapshotId.split(':')
    assert.equal((await fromSnap.getInfo()).templateId, snapTemplateID) // its base template
    await src.kill()
    const inUse = (state) =>
      new RegExp(`cannot delete template '${snapTemplateID}' because there are ${state} sandboxes using it`)
    await assert.rejects(Sandbox.deleteSnapshot(snap.snapshotId), inUse('running'))
    await fromSnap.pause()
    await assert.rejects(Sandbox.deleteSnapshot(snap.snapshotId), inUse('paused'))
    // the template the snapshot was taken from is free: nothing has it as its base
    const raw = await api('DELETE', `/templates/${built.templateId}`)
    assert.equal(raw.status, 204)
    await fromSnap.kill()
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false)
  })

  test('DELETE /templates/{id}: refused while a running or paused sandbox uses it, as E2B', T, async () => {
    const sbx = await track(Sandbox.create(name))
    const words = (state) =>
      `cannot delete template '${first.templateId}' because there are ${state} sandboxes using it`
    let r = await json('DELETE', `/templates/${name}`)
    assert.deepEqual(r.body, { code: 400, message: words('running') })
    await sbx.pause()
    r = await json('DELETE', `/templates/${first.templateId}`)
    assert.deepEqual(r.body, { code: 400, message: words('paused') })
    await sbx.kill()
    let raw = await api('DELETE', `/templates/${name}`)
    assert.equal(raw.status, 204)
    r = await json('GET', `/templates/${first.templateId}`)
    assert.equal(r.status, 404)
    assert.equal((await json('GET', '/templates')).body.some((t) => t.templateID === first.templateId), false)
    r = await json('DELETE', '/templates/base')
    assert.deepEqual(r.body, { code: 403, message: "You don't have access to template 'base'" })
  })
})
