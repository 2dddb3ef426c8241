// The Prometheus HTTP API as a Grafana data source calls it, returning the answer whole (status,
// resultType, result), which is what the panel harness turns into DataFrames.

/** The answer of /api/v1/query_range (or /api/v1/query), as Prometheus sends it. */
export interface PromApiResponse {
  status: 'success' | 'error';
  data:
    | { resultType: 'matrix'; result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> }
    | { resultType: 'vector'; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  error?: string;
  errorType?: string;
}

/** /api/v1/query_range; times in Unix seconds. */
export async function queryRange(url: string, query: string, start: number, end: number, stepSeconds: number): Promise<PromApiResponse> {
  const params = { query, start: String(start), end: String(end), step: String(stepSeconds) };
  const res = await fetch(`${url}/api/v1/query_range`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
  const body = (await res.json()) as PromApiResponse;
  if (body.status !== 'success') {
    throw new Error(`prometheus query_range ${query}: ${body.errorType ?? res.status}: ${body.error ?? ''}`);
  }
  return body;
}
