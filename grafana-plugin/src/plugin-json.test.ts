// plugin.json's catalogue entry: every link into the repository names a file
// or folder that exists, and every
// logo and screenshot is an image the build copies into dist/ (src/img).
import { existsSync, readFileSync, readdirSync } from 'fs';
import { join, resolve } from 'path';

const SRC = __dirname;
const REPO = resolve(SRC, '..', '..');
const REPO_URL = 'https://github.com/rpcscope/rpcscope/';

interface PluginJson {
  info: {
    links: Array<{ name: string; url: string }>;
    screenshots: Array<{ name: string; path: string }>;
    logos: { small: string; large: string };
  };
}

const plugin: PluginJson = JSON.parse(readFileSync(join(SRC, 'plugin.json'), 'utf8'));

// The first bytes of the image formats Grafana's catalogue shows.
const MAGIC: Record<string, Buffer> = {
  png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  svg: Buffer.from('<svg'),
};

function isImage(path: string): boolean {
  const ext = path.split('.').pop() ?? '';
  const magic = MAGIC[ext];
  if (!magic || !existsSync(path)) {
    return false;
  }
  const head = readFileSync(path).subarray(0, 200);
  return ext === 'svg' ? head.includes(magic) : head.subarray(0, magic.length).equals(magic);
}

describe('plugin.json', () => {
  it('links to the documentation, source, changelog and licence in the repository, each of which exists', () => {
    const { links } = plugin.info;
    expect(links.map((l) => l.name)).toEqual(expect.arrayContaining(['Documentation', 'Source', 'Changelog', 'License']));
    for (const link of links) {
      expect(link.name.trim()).not.toBe('');
      expect(link.url.startsWith(REPO_URL)).toBe(true);
      const [, kind, ref, path] = /^[^/]+\/\/[^/]+\/[^/]+\/[^/]+\/(blob|tree)\/([^/]+)\/([^#?]+)$/.exec(link.url) ?? [];
      expect({ link: link.name, kind, ref }).toEqual({ link: link.name, kind: expect.stringMatching(/^(blob|tree)$/), ref: 'main' });
      expect(path).toBeDefined();
      const local = join(REPO, path ?? '');
      expect({ link: link.name, exists: existsSync(local) }).toEqual({ link: link.name, exists: true });
      if (kind === 'tree') {
        expect(readdirSync(local).length).toBeGreaterThan(0);
      }
    }
  });

  it('shows every screenshot in src/img, each a named PNG, and its logos are images there', () => {
    const { screenshots, logos } = plugin.info;
    const pngs = readdirSync(join(SRC, 'img')).filter((f) => f.endsWith('.png'));
    expect(pngs.length).toBeGreaterThan(0);
    expect(screenshots.map((s) => s.path).sort()).toEqual(pngs.map((f) => `img/${f}`).sort());
    for (const s of screenshots) {
      expect(s.name.trim()).not.toBe('');
      expect({ path: s.path, image: isImage(join(SRC, s.path)) }).toEqual({ path: s.path, image: true });
    }
    for (const logo of [logos.small, logos.large]) {
      expect({ path: logo, image: isImage(join(SRC, logo)) }).toEqual({ path: logo, image: true });
    }
  });
});
