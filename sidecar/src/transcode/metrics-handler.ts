// The translation metrics served on /metrics beside the call metrics, in one
// exposition. The call metrics' handler answers with a Content-Length, so the
// families here are added to its body and the length set for the whole.
import type http from 'node:http';
import type { TranscodeMetrics } from './transcode-metrics.ts';

export function withTranslationMetrics(handler: http.RequestListener, metrics: TranscodeMetrics): http.RequestListener {
  return (req, res) => {
    const writeHead = res.writeHead.bind(res) as (status: number, headers?: http.OutgoingHttpHeaders) => http.ServerResponse;
    const end = res.end.bind(res) as (body?: string | Buffer) => http.ServerResponse;
    let ok = false;
    let headers: http.OutgoingHttpHeaders = {};
    let status = 200;
    res.writeHead = ((s: number, h?: http.OutgoingHttpHeaders) => {
      status = s;
      ok = s === 200;
      headers = { ...h };
      return res;
    }) as typeof res.writeHead;
    res.end = ((body?: string | Buffer) => {
      const text = ok ? `${body === undefined ? '' : String(body)}${metrics.render()}` : body;
      if (text !== undefined) headers['content-length'] = Buffer.byteLength(text);
      writeHead(status, headers);
      return end(text);
    }) as typeof res.end;
    handler(req, res);
  };
}
