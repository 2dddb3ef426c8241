// Builds a kustomization the way `kubectl kustomize` does, for the subset of
// Kustomize that deploy/kubernetes uses: resources (files and directories),
// components, strategic-merge patches (with or without a target), namespace
// and images. The tests build overlays with this, and check that it agrees with
// `kubectl kustomize` (kubectl is one of the programs scripts/preflight.mjs checks
// for).
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { parse, parseAllDocuments } from 'yaml';

export type Resource = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
};

interface PatchSpec {
  path?: string;
  patch?: string;
  target?: { kind?: string; name?: string; labelSelector?: string };
}

interface Kustomization {
  kind?: string;
  namespace?: string;
  resources?: string[];
  components?: string[];
  patches?: PatchSpec[];
  images?: { name: string; newName?: string; newTag?: string }[];
  [k: string]: unknown;
}

const SUPPORTED = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'components', 'patches', 'images']);

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Strategic merge as the Kubernetes types define it for the fields used here:
 * maps merge key by key, lists of named objects (containers, initContainers,
 * env, volumes, volumeMounts, ports) merge by `name` keeping the original's
 * order and appending new entries, other lists are replaced, null deletes.
 */
export function strategicMerge(base: Json, patch: Json): Json {
  if (isObject(base) && isObject(patch)) {
    const out: Record<string, Json> = { ...base };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete out[k];
      else out[k] = k in out ? strategicMerge(out[k] ?? null, v) : v;
    }
    return out;
  }
  if (Array.isArray(base) && Array.isArray(patch) && [...base, ...patch].every((e) => isObject(e) && typeof e.name === 'string')) {
    const out = base.map((e) => e);
    for (const p of patch) {
      const i = out.findIndex((e) => isObject(e) && isObject(p) && e.name === p.name);
      if (i >= 0) out[i] = strategicMerge(out[i] ?? null, p);
      else out.push(p);
    }
    return out;
  }
  return patch;
}

/** Kustomize matches a target's kind and name as anchored regular expressions. */
function matchesPattern(value: string, pattern: string): boolean {
  return new RegExp(`^(?:${pattern})$`).test(value);
}

function matchesTarget(r: Resource, target: NonNullable<PatchSpec['target']>): boolean {
  if (target.kind && !matchesPattern(r.kind, target.kind)) return false;
  if (target.name && !matchesPattern(r.metadata.name, target.name)) return false;
  if (target.labelSelector) {
    for (const term of target.labelSelector.split(',')) {
      const [k, v] = term.split('=').map((s) => s.trim());
      if (!k || r.metadata.labels?.[k] !== v) return false;
    }
  }
  return true;
}

function applyPatch(resources: Resource[], spec: PatchSpec, dir: string): Resource[] {
  const text = spec.path ? readFileSync(join(dir, spec.path), 'utf8') : spec.patch ?? '';
  const patch = parse(text) as Resource;
  const target = spec.target ?? { kind: patch.kind, name: patch.metadata.name };
  let hits = 0;
  const out = resources.map((r) => {
    if (!matchesTarget(r, target)) return r;
    hits++;
    // With a target, the patch's own kind and name are placeholders (Kustomize
    // applies it to each target as it is, a StatefulSet staying a StatefulSet).
    const body = spec.target ? { ...patch, apiVersion: r.apiVersion, kind: r.kind, metadata: { ...patch.metadata, name: r.metadata.name } } : patch;
    return strategicMerge(r as unknown as Json, body as unknown as Json) as unknown as Resource;
  });
  if (hits === 0 && !spec.target) throw new Error(`${dir}: patch ${spec.path ?? ''} matches no resource`);
  return out;
}

function setImages(node: Json, images: NonNullable<Kustomization['images']>): Json {
  if (Array.isArray(node)) return node.map((n) => setImages(n, images));
  if (!isObject(node)) return node;
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(node)) {
    if ((k === 'containers' || k === 'initContainers') && Array.isArray(v)) {
      out[k] = v.map((c) => {
        if (!isObject(c) || typeof c.image !== 'string') return c;
        const [name = '', tag] = c.image.split(':');
        const rule = images.find((i) => i.name === name);
        if (!rule) return c;
        return { ...c, image: `${rule.newName ?? name}:${rule.newTag ?? tag ?? 'latest'}` };
      });
    } else {
      out[k] = setImages(v, images);
    }
  }
  return out;
}

function readKustomization(dir: string): Kustomization {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  for (const key of Object.keys(k)) if (!SUPPORTED.has(key)) throw new Error(`${dir}: kustomization field ${key} is not supported by the test's builder`);
  return k;
}

function readResources(path: string): Resource[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((d) => d.toJS() as Resource | null)
    .filter((r): r is Resource => r !== null);
}

function build(dir: string, expectKind: 'Kustomization' | 'Component', accumulated: Resource[] = []): Resource[] {
  const k = readKustomization(dir);
  const kind = k.kind ?? 'Kustomization';
  if (kind !== expectKind) throw new Error(`${dir}: expected a ${expectKind}, found ${kind}`);
  let resources = [...accumulated];
  for (const entry of k.resources ?? []) {
    const path = resolve(dir, entry);
    if (statSync(path).isDirectory()) resources.push(...build(path, 'Kustomization'));
    else {
      if (!path.startsWith(dir + '/')) throw new Error(`${dir}: resource file ${entry} is outside the kustomization (Kustomize refuses it)`);
      resources.push(...readResources(path));
    }
  }
  for (const c of k.components ?? []) resources = build(resolve(dir, c), 'Component', resources);
  for (const p of k.patches ?? []) resources = applyPatch(resources, p, dir);
  if (k.namespace) resources = resources.map((r) => ({ ...r, metadata: { ...r.metadata, namespace: k.namespace } }));
  if (k.images) resources = resources.map((r) => setImages(r as unknown as Json, k.images ?? []) as unknown as Resource);
  return resources;
}

/** The resources `kubectl kustomize dir` would print. */
export function kustomize(dir: string): Resource[] {
  return build(resolve(dir), 'Kustomization');
}

/** `kubectl kustomize dir` itself: Debian's `kubectl`, which `npm test` installs with the other programs it drives. */
export function kubectlKustomize(dir: string): Resource[] {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('kubectl is not on PATH: apt-get install kubectl (scripts/preflight.mjs names it)');
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Resource);
}

/** Sorts what Kustomize may order differently: resources, and named list entries. */
export function canonical(resources: Resource[]): string {
  const sortNamed = (n: Json): Json => {
    if (Array.isArray(n)) {
      const items = n.map(sortNamed);
      return items.every((e) => isObject(e) && typeof e.name === 'string')
        ? [...items].sort((a, b) => String((a as { name: string }).name).localeCompare(String((b as { name: string }).name)))
        : items;
    }
    if (isObject(n)) return Object.fromEntries(Object.keys(n).sort().map((k) => [k, sortNamed(n[k] ?? null)]));
    return n;
  };
  const key = (r: Resource): string => `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`;
  return JSON.stringify([...resources].sort((a, b) => key(a).localeCompare(key(b))).map((r) => sortNamed(r as unknown as Json)), null, 1);
}
