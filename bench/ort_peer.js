#!/usr/bin/env node
// ONNX Runtime peer for `ingot bench --against ort` and `ingot compare --against ort`, on npm's
// onnxruntime-node (scripts/install_ort.sh puts it in .deps/ort-node). ingot never links ONNX
// Runtime: it starts this script and talks to it over stdin/stdout, one line per message.
//
//   node bench/ort_peer.js PACKAGE_DIR      (the onnxruntime-node package directory)
//
// Protocol (the same as bench/ort_peer.py). Every request gets exactly one reply line, either
// "ok ..." or "error MESSAGE". Paths are the rest of the line (they may hold spaces).
//   <- hello runtime=onnxruntime-node version=V node=V maxrss_kb=N await_overhead_ms=X
//      (sent once at start; await_overhead_ms: median cost of an empty
//       `await new Promise(r => setImmediate(r))`, the way session.run defers its work)
//   -> load THREADS MODEL     session with intra_op_num_threads=THREADS, inter_op_num_threads=1,
//                             graph optimization "all", sequential execution, CPU provider
//   <- ok maxrss_kb=N
//   -> inputs FILE.npz        the feeds for later runs (keys are input names)
//   <- ok
//   -> run N [IDLE_MS]        N runs, each after IDLE_MS ms asleep (default 0; ingot bench
//                             --idle-time); each latency is wall-clock ms around `await session.run()`
//   <- ok T1 T2 ... TN
//   -> outputs FILE.npz       one run; writes the outputs (keys are output names)
//   <- ok
//   -> stats
//   <- ok maxrss_kb=N
//   -> quit                   exits 0 (so does end of input)
'use strict';

const fs = require('fs');
const zlib = require('zlib');
const readline = require('readline');

const pkgDir = process.argv[2];
let ort;
try {
  ort = require(pkgDir);
} catch (e) {
  process.stdout.write('error cannot load onnxruntime-node from ' + pkgDir + ': ' + String(e.message).split('\n')[0] + '\n');
  process.exit(1);
}

// ---- .npy / .npz ----------------------------------------------------------------------------

const DESCR = {
  // numpy descr (without byte order) -> [ort type, TypedArray, bytes per element]
  f4: ['float32', Float32Array, 4],
  f8: ['float64', Float64Array, 8],
  f2: ['float16', Uint16Array, 2],
  i1: ['int8', Int8Array, 1],
  i2: ['int16', Int16Array, 2],
  i4: ['int32', Int32Array, 4],
  i8: ['int64', BigInt64Array, 8],
  u1: ['uint8', Uint8Array, 1],
  u2: ['uint16', Uint16Array, 2],
  u4: ['uint32', Uint32Array, 4],
  u8: ['uint64', BigUint64Array, 8],
  b1: ['bool', Uint8Array, 1],
};
const ORT_TO_DESCR = {};
for (const [k, v] of Object.entries(DESCR)) ORT_TO_DESCR[v[0]] = (v[2] === 1 ? '|' : '<') + k;

function parseNpy(buf, name) {
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(name + ': not a .npy array');
  }
  const major = buf.readUInt8(6);
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeM) throw new Error(name + ': malformed .npy header');
  if (fortran[1] === 'True') throw new Error(name + ': Fortran-order arrays are not supported');
  const order = descr[1][0];
  const kind = descr[1].slice(1);
  if (order === '>') throw new Error(name + ': big-endian arrays are not supported');
  const info = DESCR[kind];
  if (!info) throw new Error(name + ': dtype ' + descr[1] + ' is not supported');
  const dims = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const numel = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  const bytes = numel * info[2];
  if (buf.length < start + bytes) throw new Error(name + ': truncated data');
  const copy = new ArrayBuffer(bytes);  // aligned copy
  new Uint8Array(copy).set(buf.subarray(start, start + bytes));
  const data = new info[1](copy);
  return new ort.Tensor(info[0], data, dims);
}

function readNpz(path) {
  const buf = fs.readFileSync(path);
  const out = {};
  // Walk the central directory (sizes there are right even when local headers use descriptors).
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65557); --i) {
    if (buf.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
  }
  if (eocd < 0) throw new Error(path + ': not an .npz (zip) file');
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  for (let k = 0; k < count; ++k) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error(path + ': bad zip central directory');
    const method = buf.readUInt16LE(p + 10);
    const csize = buf.readUInt32LE(p + 20);
    const nlen = buf.readUInt16LE(p + 28), elen = buf.readUInt16LE(p + 30), clen = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const fname = buf.toString('utf8', p + 46, p + 46 + nlen);
    p += 46 + nlen + elen + clen;
    const lnlen = buf.readUInt16LE(local + 26), lelen = buf.readUInt16LE(local + 28);
    const dstart = local + 30 + lnlen + lelen;
    let data = buf.subarray(dstart, dstart + csize);
    if (method === 8) data = zlib.inflateRawSync(data);
    else if (method !== 0) throw new Error(path + ': member ' + fname + ' uses zip method ' + method);
    const key = fname.endsWith('.npy') ? fname.slice(0, -4) : fname;
    out[key] = parseNpy(data, path + ':' + fname);
  }
  return out;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; ++n) {
    let c = n;
    for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
function crc32(buf) {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; ++i) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function serializeNpy(tensor, name) {
  const descr = ORT_TO_DESCR[tensor.type];
  if (!descr) throw new Error('output ' + name + ' has type ' + tensor.type + ', which cannot be saved');
  const dims = tensor.dims;
  const shape = dims.length === 0 ? '()' : dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ', }';
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.writeUInt8(0x93, 0);
  head.write('NUMPY', 1, 'latin1');
  head.writeUInt8(1, 6);
  head.writeUInt8(0, 7);
  head.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return Buffer.concat([head, Buffer.from(header, 'latin1'), body]);
}

function writeNpz(path, named) {
  const locals = [], centrals = [];
  let offset = 0;
  for (const [name, tensor] of named) {
    const data = serializeNpy(tensor, name);
    const fname = Buffer.from(name + '.npy', 'utf8');
    const crc = crc32(data);
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0);
    lh.writeUInt16LE(20, 4);
    lh.writeUInt32LE(crc, 14);
    lh.writeUInt32LE(data.length, 18);
    lh.writeUInt32LE(data.length, 22);
    lh.writeUInt16LE(fname.length, 26);
    const ch = Buffer.alloc(46);
    ch.writeUInt32LE(0x02014b50, 0);
    ch.writeUInt16LE(20, 4);
    ch.writeUInt16LE(20, 6);
    ch.writeUInt32LE(crc, 16);
    ch.writeUInt32LE(data.length, 20);
    ch.writeUInt32LE(data.length, 24);
    ch.writeUInt16LE(fname.length, 28);
    ch.writeUInt32LE(offset, 42);
    locals.push(lh, fname, data);
    centrals.push(ch, fname);
    offset += 30 + fname.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(named.length, 8);
  end.writeUInt16LE(named.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  fs.writeFileSync(path, Buffer.concat([...locals, cd, end]));
}

// ---- the loop -------------------------------------------------------------------------------

const maxrss = () => process.resourceUsage().maxRSS;  // KiB
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
let session = null;
let feeds = null;

function reply(line) {
  process.stdout.write(line + '\n');
}

async function awaitOverhead() {
  const t = [];
  for (let i = 0; i < 200; ++i) {
    const t0 = nowMs();
    await new Promise((resolve) => setImmediate(resolve));
    t.push(nowMs() - t0);
  }
  t.sort((a, b) => a - b);
  return t[t.length >> 1];
}

async function handle(line) {
  const sp = line.indexOf(' ');
  const cmd = sp < 0 ? line : line.slice(0, sp);
  const arg = sp < 0 ? '' : line.slice(sp + 1);
  if (cmd === 'load') {
    const sp2 = arg.indexOf(' ');
    const threads = parseInt(arg.slice(0, sp2), 10);
    const model = arg.slice(sp2 + 1);
    session = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
    });
    return 'ok maxrss_kb=' + maxrss();
  }
  if (cmd === 'inputs') {
    if (!session) throw new Error('no model loaded');
    const arrays = readNpz(arg);
    feeds = {};
    for (const name of session.inputNames) {
      if (!(name in arrays)) throw new Error(arg + ' has no array for input ' + name);
      feeds[name] = arrays[name];
    }
    return 'ok';
  }
  if (cmd === 'run') {
    if (!session || !feeds) throw new Error('no model or inputs');
    const [count, idle] = arg.split(' ');
    const n = parseInt(count, 10);
    const idleMs = parseFloat(idle || '0');
    const times = [];
    for (let i = 0; i < n; ++i) {
      if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
      const t0 = nowMs();
      await session.run(feeds);
      times.push((nowMs() - t0).toFixed(6));
    }
    return 'ok ' + times.join(' ');
  }
  if (cmd === 'outputs') {
    if (!session || !feeds) throw new Error('no model or inputs');
    const out = await session.run(feeds);
    writeNpz(arg, session.outputNames.map((n) => [n, out[n]]));
    return 'ok';
  }
  if (cmd === 'stats') return 'ok maxrss_kb=' + maxrss();
  throw new Error('unknown request: ' + cmd);
}

async function main() {
  const version = require(pkgDir + '/package.json').version;
  const overhead = await awaitOverhead();
  reply('hello runtime=onnxruntime-node version=' + version + ' node=' + process.versions.node + ' maxrss_kb=' +
        maxrss() + ' await_overhead_ms=' + overhead.toFixed(6));
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const raw of rl) {
    const line = raw.trim();
    if (!line) continue;
    if (line === 'quit') break;
    try {
      reply(await handle(line));
    } catch (e) {
      reply('error ' + String(e && e.message ? e.message : e).replace(/\s*\n\s*/g, '; '));
    }
  }
  process.exit(0);
}

main().catch((e) => {
  reply('error ' + String(e && e.message ? e.message : e).replace(/\s*\n\s*/g, '; '));
  process.exit(1);
});
