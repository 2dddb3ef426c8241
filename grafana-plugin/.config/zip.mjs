// Packs dist/ as the archive Grafana installs: `grafana cli --pluginUrl <zip> plugins install
// rpcscope-protocolcompare-panel` and provisioning's plugin URLs unpack it into the plugins
// directory, where the top-level folder, named by the plugin id, becomes the plugin's folder.
// Whatever dist/ holds goes in, so a MANIFEST.txt written there by `npx @grafana/sign-plugin`
// is packed too: sign dist/, then run this again.
//
// A small writer on node:zlib rather than a dependency: one folder of a dozen files needs
// deflate, CRC-32 and the three record types of APPNOTE.TXT (PKWARE's .ZIP File Format
// Specification, 6.3.10), sections 4.3.7 (local file header), 4.3.12 (central directory
// header) and 4.3.16 (end of central directory record), and nothing of ZIP64.
import { Buffer } from 'node:buffer';
import { crc32, deflateRawSync } from 'node:zlib';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// 4.4.2, 4.4.3: made by Unix (3), so that external attributes carry Unix modes; 2.0 is the
// version deflate and directory entries need.
const VERSION_MADE_BY = (3 << 8) | 20;
const VERSION_NEEDED = 20;
// 4.4.4 bit 11: names are UTF-8.
const FLAGS = 0x0800;
const STORED = 0;
const DEFLATED = 8;
// 4.4.15: the Unix mode in the high 16 bits. Grafana's installer creates each file with the
// mode it reads here; a mode of 0 would leave the files unreadable to the Grafana process.
const FILE_ATTRS = (0o100644 << 16) >>> 0;
// 0x10: the MS-DOS directory bit, for unzippers that do not read Unix modes.
const DIR_ATTRS = ((0o40755 << 16) | 0x10) >>> 0;

/** MS-DOS date and time (4.4.6) of a Date, in UTC so that the archive is the same everywhere. */
function dosDateTime(date) {
  const time = (date.getUTCHours() << 11) | (date.getUTCMinutes() << 5) | Math.floor(date.getUTCSeconds() / 2);
  const day = ((date.getUTCFullYear() - 1980) << 9) | ((date.getUTCMonth() + 1) << 5) | date.getUTCDate();
  return { time, day };
}

/** Every file and folder under dir, folders before their contents, names sorted. */
function walk(dir, prefix, out) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      out.push({ name: `${prefix}${name}/`, path: null });
      walk(path, `${prefix}${name}/`, out);
    } else {
      out.push({ name: `${prefix}${name}`, path });
    }
  }
  return out;
}

/**
 * A zip of dir's contents under one folder named `folder`, every entry dated `date`.
 * @param {string} dir
 * @param {string} folder
 * @param {Date} date
 * @returns {Buffer}
 */
export function zipFolder(dir, folder, date) {
  const { time, day } = dosDateTime(date);
  const entries = [{ name: `${folder}/`, path: null }, ...walk(dir, `${folder}/`, [])];
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const data = entry.path === null ? Buffer.alloc(0) : readFileSync(entry.path);
    const packed = entry.path === null ? data : deflateRawSync(data, { level: 9 });
    // Deflate can grow data that does not compress (the PNG screenshots); store those.
    const method = entry.path !== null && packed.length < data.length ? DEFLATED : STORED;
    const body = method === DEFLATED ? packed : data;
    const crc = entry.path === null ? 0 : crc32(data);

    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(VERSION_NEEDED, 4);
    local.writeUInt16LE(FLAGS, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(time, 10);
    local.writeUInt16LE(day, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    locals.push(local, name, body);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(VERSION_MADE_BY, 4);
    central.writeUInt16LE(VERSION_NEEDED, 6);
    central.writeUInt16LE(FLAGS, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(time, 12);
    central.writeUInt16LE(day, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    // Extra field, comment, disk number start, internal attributes: none.
    central.writeUInt32LE(entry.path === null ? DIR_ATTRS : FILE_ATTRS, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);

    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The archive's path for the plugin's id and version: where `npm run build` leaves it. */
export function zipPath() {
  const { id, info } = JSON.parse(readFileSync(join(root, 'dist', 'plugin.json'), 'utf8'));
  return { id, path: join(root, 'artifacts', `${id}-${info.version}.zip`) };
}

/** Writes artifacts/<id>-<version>.zip from dist/ and returns its path. */
export function packDist() {
  const { id, path } = zipPath();
  const { mtime } = statSync(join(root, 'dist', 'plugin.json'));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, zipFolder(join(root, 'dist'), id, mtime));
  return path;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`${packDist()}: dist/ under one folder named by the plugin id, unsigned unless dist/ was signed`);
}
