// The REST routes file: the templates requests are matched against before any
// is learned. Three forms, chosen by the file's extension:
//
//   routes.txt (any extension but the two below), one route a line, `#` comments:
//     GET /v1/orders/{id}
//     POST /v1/orders
//
//   routes.yaml / routes.json, a list of the same strings, bare or under `routes:`:
//     routes:
//       - GET /v1/orders/{id}
//
//   an OpenAPI 3 document (.yaml, .yml or .json): every operation under `paths`,
//   prefixed with the path of its `servers` URLs (`https://api.example.com/shop`
//   serves `/shop/v1/orders/{id}`), server variables taking their defaults.
import { extname } from 'node:path';
import { isRecord, readDocument, readText } from './config-document.ts';
import { parseRoute } from './route-template.ts';
import type { RestRoute } from './route-template.ts';

/** OpenAPI 3 path item fields that are operations (OpenAPI 3.1 §4.8.9). */
const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export function loadRouteFile(file: string): RestRoute[] {
  const ext = extname(file).toLowerCase();
  if (ext === '.yaml' || ext === '.yml' || ext === '.json') return routesFromDocument(readDocument(file), file);
  return routesFromLines(readText(file), file);
}

function routesFromLines(text: string, file: string): RestRoute[] {
  const routes: RestRoute[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    try {
      routes.push(parseRoute(line));
    } catch (e) {
      throw new Error(`${file}:${i + 1}: ${(e as Error).message}`, { cause: e });
    }
  });
  return routes;
}

function routesFromDocument(doc: unknown, file: string): RestRoute[] {
  if (isRecord(doc) && 'openapi' in doc) return routesFromOpenApi(doc, file);
  if (isRecord(doc) && 'swagger' in doc) throw new Error(`${file}: Swagger 2.0 documents are not read; convert it to OpenAPI 3`);
  const list = isRecord(doc) ? doc.routes : doc;
  if (!Array.isArray(list)) {
    throw new Error(`${file}: expected a list of routes ("GET /v1/orders/{id}"), bare or under "routes:", or an OpenAPI 3 document`);
  }
  return list.map((item, i) => {
    if (typeof item !== 'string') throw new Error(`${file}: routes[${i}] is not a string like "GET /v1/orders/{id}"`);
    try {
      return parseRoute(item);
    } catch (e) {
      throw new Error(`${file}: routes[${i}]: ${(e as Error).message}`, { cause: e });
    }
  });
}

function routesFromOpenApi(doc: Record<string, unknown>, file: string): RestRoute[] {
  const version = String(doc.openapi);
  if (!version.startsWith('3.')) throw new Error(`${file}: openapi "${version}" is not supported; expected 3.x`);
  if (!isRecord(doc.paths)) throw new Error(`${file}: "paths" is missing or not an object`);
  const bases = serverBasePaths(doc.servers, file);
  const routes: RestRoute[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isRecord(item)) throw new Error(`${file}: paths["${path}"] is not an object`);
    for (const method of OPENAPI_METHODS) {
      if (!(method in item)) continue;
      const httpMethod = method.toUpperCase();
      for (const base of bases) {
        try {
          routes.push(parseRoute(`${httpMethod} ${base}${path}`));
        } catch (e) {
          throw new Error(`${file}: paths["${path}"].${method}: ${(e as Error).message}`, { cause: e });
        }
      }
    }
  }
  return routes;
}

/** The distinct path prefixes of the document's servers ('' when there are none). */
function serverBasePaths(servers: unknown, file: string): string[] {
  if (servers === undefined) return [''];
  if (!Array.isArray(servers)) throw new Error(`${file}: "servers" is not a list`);
  const bases = new Set<string>();
  servers.forEach((server, i) => {
    if (!isRecord(server) || typeof server.url !== 'string') throw new Error(`${file}: servers[${i}].url is missing`);
    const vars = isRecord(server.variables) ? server.variables : {};
    const url = server.url.replace(/\{([^}]*)\}/g, (_, name: string) => {
      const v = vars[name];
      if (!isRecord(v) || typeof v.default !== 'string') throw new Error(`${file}: servers[${i}] variable "${name}" has no default`);
      return v.default;
    });
    let pathname: string;
    try {
      pathname = new URL(url, 'http://server.invalid').pathname;
    } catch (e) {
      throw new Error(`${file}: servers[${i}].url "${server.url}" is not a URL`, { cause: e });
    }
    bases.add(pathname.replace(/\/+$/, ''));
  });
  return bases.size === 0 ? [''] : [...bases];
}
