// Peer test: control-plane calls beyond the basics and gzip on envd's /files, through the
// official e2b SDK (pinned in package.json) and, where the SDK hides the wire, plain fetch:
// GET /v2/sandboxes order / startedAfter / template, metrics time ranges, PUT
// /sandboxes/{id}/network, and Content-Encoding / Accept-Encoding gzip.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test control.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { gunzipSync, gzipSync } from 'node:zlib'
import { get, request } from 'node:http'
import { Sandbox } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
let fake
const made = []

async function create(template, opts = {}) {
  const s = await Sandbox.create(template, opts)
  made.push(s)
  return s
}

// A raw request to the control plane with the server's key.
function api(method, path, body) {
  return fetch(fake.url + path, {
    method,
    headers: { 'X-API-Key': fake.apiKey, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
}

// GET without fetch's transparent decompression: the status and the bytes as sent.
function rawGet(path, headers) {
  return new Promise((resolve, reject) => {
    get(fake.url + path, { headers }, (res) => {
      const parts = []
      res.on('data', (d) => parts.push(d))
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(parts) }))
      res.on('error', reject)
    }).on('error', reject)
  })
}

before(async () => {
  fake = await startFake(fakePath())
})

after(async () => {
  await Promise.all(made.map((s) => s.kill().catch(() => {})))
  if (fake) await fake.stop()
})

describe('list filters and order', { concurrency: false }, () => {
  let older, newer, group
  before(async () => {
    group = `g-${Date.now()}`
    older = await create('base', { metadata: { group } })
    newer = await create('capybara-sandbox', { metadata: { group } })
  })

  test('order asc lists the oldest first, desc (the default) the newest', T, async () => {
    const ids = (xs) => xs.map((x) => x.sandboxId)
    const q = { metadata: { group } }
    assert.deepEqual(ids(await Sandbox.list({ query: q, order: 'asc' }).nextItems()), [older.sandboxId, newer.sandboxId])
    assert.deepEqual(ids(await Sandbox.list({ query: q, order: 'desc' }).nextItems()), [newer.sandboxId, older.sandboxId])
    assert.deepEqual(ids(await Sandbox.list({ query: q }).nextItems()), [newer.sandboxId, older.sandboxId])
  })

  test('order asc pages in the same order', T, async () => {
    const p = Sandbox.list({ query: { metadata: { group } }, order: 'asc', limit: 1 })
    const first = await p.nextItems()
    assert.equal(p.hasNext, true)
    const second = await p.nextItems()
    assert.deepEqual([first[0].sandboxId, second[0].sandboxId], [older.sandboxId, newer.sandboxId])
    assert.equal(p.hasNext, false)
  })

  test('startedAfter is inclusive of a sandbox’s own startedAt', T, async () => {
    const info = await newer.getInfo()
    const at = await Sandbox.list({ query: { metadata: { group }, startedAfter: info.startedAt } }).nextItems()
    assert.ok(at.some((s) => s.sandboxId === newer.sandboxId))
    const later = new Date(info.startedAt.getTime() + 1000)
    const none = await Sandbox.list({ query: { metadata: { group }, startedAfter: later } }).nextItems()
    assert.deepEqual(none, [])
  })

  test('template filters by templateID; an unknown one lists nothing', T, async () => {
    const base = await Sandbox.list({ query: { metadata: { group }, template: 'base' } }).nextItems()
    assert.deepEqual(base.map((s) => s.sandboxId), [older.sandboxId])
    const cap = await Sandbox.list({ query: { metadata: { group }, template: 'capybara-sandbox' } }).nextItems()
    assert.deepEqual(cap.map((s) => s.sandboxId), [newer.sandboxId])
    const unknown = await Sandbox.list({ query: { metadata: { group }, template: 'no-such-template' } }).nextItems()
    assert.deepEqual(unknown, [])
  })

  test('bad values are 400s; X-Total-Running counts every matching running sandbox', T, async () => {
    const meta = encodeURIComponent(`group=${group}`)
    let r = await api('GET', `/v2/sandboxes?metadata=${meta}&order=sideways`)
    assert.equal(r.status, 400)
    assert.match((await r.json()).message, /order/)
    r = await api('GET', `/v2/sandboxes?metadata=${meta}&template=base:v1`)
    assert.equal(r.status, 400)
    assert.match((await r.json()).message, /tags are not supported/)
    r = await api('GET', `/v2/sandboxes?metadata=${meta}&startedAfter=yesterday`)
    assert.equal(r.status, 400)
    r = await api('GET', `/v2/sandboxes?metadata=${meta}&limit=1`)
    assert.equal(r.status, 200)
    assert.equal(r.headers.get('x-total-running'), '2')
    assert.equal((await r.json()).length, 1)
  })
})

describe('metrics time ranges', { concurrency: false }, () => {
  test('samples fall in the range; a range before the sandbox existed is empty; start > end is 400', T, async () => {
    const sbx = await create('base')
    const all = await sbx.getMetrics()
    assert.ok(all.length >= 1) // the sample taken at create
    const start = new Date()
    // the sampler takes one every 5 s: wait for the first in the range
    let some = []
    let end
    for (const deadline = Date.now() + 30000; some.length === 0; ) {
      assert.ok(Date.now() < deadline, 'no sample within 30 s')
      if (end) await new Promise((r) => setTimeout(r, 250))
      end = new Date(Date.now() + 1000)
      some = await sbx.getMetrics({ start, end })
    }
    for (const m of some) {
      // one sample per 5 s bucket, stamped at the bucket's start
      assert.equal(m.timestamp.getTime() % 5000, 0)
      assert.ok(m.timestamp.getTime() > start.getTime() - 5000 - 1000)
      assert.ok(m.timestamp.getTime() <= end.getTime())
      assert.equal(m.cpuCount, 2)
      assert.equal(m.memTotal, 512 * 1024 * 1024)
    }
    const before = await sbx.getMetrics({
      start: new Date(start.getTime() - 3600e3),
      end: new Date(start.getTime() - 1800e3),
    })
    assert.deepEqual(before, [])
    const s = Math.floor(Date.now() / 1000)
    const r = await api('GET', `/sandboxes/${sbx.sandboxId}/metrics?start=${s}&end=${s - 10}`)
    assert.equal(r.status, 400)
    assert.equal((await r.json()).message, 'Invalid time range for metrics')
  })
})

describe('network update', { concurrency: false }, () => {
  test('updateNetwork replaces the egress rules, keeps the ingress ones; paused or gone is 404', T, async () => {
    const sbx = await create('base', {
      network: { allowOut: ['1.1.1.1'], denyOut: ['8.8.8.0/24'], allowPublicTraffic: true },
    })
    await sbx.updateNetwork({ denyOut: ['9.9.9.9'] })
    let info = await sbx.getInfo()
    assert.deepEqual(info.network.denyOut, ['9.9.9.9'])
    assert.equal(info.network.allowOut, undefined)
    assert.equal(info.network.allowPublicTraffic, true)
    await sbx.updateNetwork({ allowInternetAccess: false })
    info = await sbx.getInfo()
    assert.equal(info.allowInternetAccess, false)
    assert.equal(info.network.denyOut, undefined)

    let r = await api('PUT', `/sandboxes/${sbx.sandboxId}/network`, { denyOut: ['example.com'] })
    assert.equal(r.status, 400)
    r = await api('PUT', `/sandboxes/${sbx.sandboxId}/network`, '[1]')
    assert.equal(r.status, 400)

    await sbx.pause()
    r = await api('PUT', `/sandboxes/${sbx.sandboxId}/network`, {})
    assert.equal(r.status, 404)
    r = await api('PUT', `/sandboxes/inosuchsandbox000000000/network`, {})
    assert.equal(r.status, 404)
  })
})

describe('gzip on /files', { concurrency: false }, () => {
  let sbx, envd, auth
  before(async () => {
    // a raw create hands out the envd access token the SDK keeps to itself
    const r = await api('POST', '/v2/sandboxes', { templateID: 'base' })
    assert.equal(r.status, 201)
    const s = await r.json()
    sbx = await Sandbox.connect(s.sandboxID)
    made.push(sbx)
    auth = { 'E2b-Sandbox-Id': s.sandboxID, 'X-Access-Token': s.envdAccessToken }
    envd = (path, init = {}) => fetch(`${fake.url}${path}`, { ...init, headers: { ...auth, ...init.headers } })
  })

  test('the SDK writes gzip and reads gzip; what is stored is the plain text', T, async () => {
    const info = await sbx.files.write('gz/a.txt', 'plain words, sent squeezed', { gzip: true })
    assert.equal(info.path, '/home/user/gz/a.txt')
    assert.equal(await sbx.files.read('gz/a.txt', { gzip: true }), 'plain words, sent squeezed')
    assert.equal(await sbx.files.read('gz/a.txt'), 'plain words, sent squeezed')
    assert.equal((await sbx.commands.run('wc -c < gz/a.txt')).stdout.trim(), '26')
  })

  test('a download with Accept-Encoding: gzip is gzip, typed by extension; Vary says so', T, async () => {
    await sbx.files.write('gz/b.json', '{"k":1}')
    const r = await envd('/files?path=gz/b.json', { headers: { 'Accept-Encoding': 'gzip' } })
    assert.equal(r.status, 200)
    assert.equal(r.headers.get('content-encoding'), 'gzip') // fetch inflates it for us
    assert.equal(r.headers.get('content-type'), 'application/json')
    assert.equal(r.headers.get('vary'), 'Accept-Encoding')
    assert.equal(await r.text(), '{"k":1}')
    const plain = await envd('/files?path=gz/b.json', { headers: { 'Accept-Encoding': 'identity' } })
    assert.equal(plain.headers.get('content-encoding'), null)
    assert.equal(await plain.text(), '{"k":1}')
    const none = await envd('/files?path=gz/b.json', { headers: { 'Accept-Encoding': 'br, identity;q=0' } })
    assert.equal(none.status, 406)
  })

  test('several gzip members in one body are one file; a cut or foreign body is a 400', T, async () => {
    const two = Buffer.concat([gzipSync('first half, '), gzipSync('second half')])
    const up = (body, enc) =>
      envd('/files?path=gz/c.txt', {
        method: 'POST',
        headers: { 'Content-Type': 'application/octet-stream', 'Content-Encoding': enc },
        body,
      })
    let r = await up(two, 'gzip')
    assert.equal(r.status, 200)
    assert.equal(await sbx.files.read('gz/c.txt'), 'first half, second half')
    r = await up(two.subarray(0, two.length - 5), 'gzip')
    assert.equal(r.status, 400)
    assert.match((await r.json()).message, /error decompressing request body/)
    r = await up(Buffer.from('not gzip at all'), 'gzip')
    assert.equal(r.status, 400)
    r = await up(Buffer.from('x'), 'br')
    assert.equal(r.status, 400)
    assert.match((await r.json()).message, /unsupported Content-Encoding: br/)
    // the bytes on the wire are one gzip stream that node's own gunzip reads
    const raw = await rawGet('/files?path=gz/c.txt', { 'Accept-Encoding': 'gzip', ...auth })
    assert.equal(raw.status, 200)
    assert.deepEqual([...raw.body.subarray(0, 2)], [0x1f, 0x8b])
    assert.equal(gunzipSync(raw.body).toString(), 'first half, second half')
  })
})

describe('the port proxy', { concurrency: false }, () => {
  test('network.maskRequestHost is the Host the sandbox’s server sees, ${PORT} its port', T, async () => {
    const sbx = await create('base', { network: { maskRequestHost: 'masked.example:${PORT}' } })
    await sbx.commands.run(
      `python3 -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = self.headers['Host'].encode()
        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(('127.0.0.1', 8123), H)
open('/tmp/ready', 'w').close()
s.handle_request()
"`,
      { background: true },
    )
    await sbx.commands.run('while [ ! -e /tmp/ready ]; do sleep 0.05; done')
    // E2B's address of the port, by the Host alone (fetch cannot set Host: node:http can)
    const u = new URL(fake.url)
    const seen = await new Promise((resolve, reject) => {
      const req = request(
        { host: u.hostname, port: u.port, path: '/', headers: { Host: `8123-${sbx.sandboxId}.e2b.localhost` } },
        (res) => {
          let b = ''
          res.on('data', (d) => (b += d))
          res.on('end', () => resolve({ status: res.statusCode, body: b }))
        },
      )
      req.on('error', reject)
      req.end()
    })
    assert.deepEqual(seen, { status: 200, body: 'masked.example:8123' })
  })
})
