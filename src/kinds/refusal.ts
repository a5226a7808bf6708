// The answer a kind gives when it refuses a request: Portico's own short body (or nginx's page
// under --ingress-nginx-compat), never anything from the request.
import { ownBody } from "../http/status-page.ts";
import type { PolicyFlow } from "./types.ts";

/**
 * A short fixed body (never anything from the request; nginx's page for the status under
 * --ingress-nginx-compat) with the headers every answer carries.
 */
export function refusal(flow: PolicyFlow, status: number, body: string, extra: Record<string, string> = {}, certificate: string | null = null): Response {
  const own = ownBody(status, body, flow.config.ingressNginxCompat, flow.req, certificate);
  return new Response(own.body, {
    status,
    headers: { ...flow.responseHeaders, "content-type": own.type, "cache-control": "no-store", ...extra },
  });
}
