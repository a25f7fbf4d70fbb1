/** A response of the gateway: status code, body text and parsed JSON (if any). */
export interface HttpResult {
  status: number;
  text: string;
  json: Record<string, unknown>;
  headers: Headers;
}

/** Calls the gateway with a bearer token. */
export async function http(base: string, token: string, method: string, path: string, body?: unknown, contentType = "application/json"): Promise<HttpResult> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": contentType } : {}), accept: "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: res.status, text, json, headers: res.headers };
}
