// Step 3, policies: the route's stages in ingress-nginx's phase order (proxy/policies/run.ts),
// with the built-in checks at their place (checks.ts). A stage's answer (a redirect, 401,
// 403, a preflight's 204) ends the request here.
import type { Exchange } from "./context.ts";
import { httpsRedirectStage } from "./checks.ts";
import { NGINX_PAGE_TYPE, nginxRedirectPage } from "../../http/status-page.ts";

/**
 * The answer that ends the request at this step, or null. A route without policies pays one
 * null check and runs its one built-in stage synchronously, so the plain request waits for no
 * promise here (docs/design.md, "Annotations and policies").
 */
export function policies(x: Exchange): Response | null | Promise<Response | null> {
  const stages = x.route.options.stages;
  const answer = stages === null ? httpsRedirectStage(x) : x.p.runPolicies(stages, x);
  return answer instanceof Promise ? later(x, answer) : answered(x, answer);
}

// Its own function: a closure over `x` written in policies() above made JSC build a scope
// object for every call of it, the plain request's too (one JSLexicalEnvironment per request,
// bench/allocations.ts).
function later(x: Exchange, answer: Promise<Response | null>): Promise<Response | null> {
  return answer.then((a) => answered(x, a));
}

function answered(x: Exchange, answer: Response | null): Response | null {
  if (answer === null) return null;
  if (x.p.compat && answer.body === null) answer = withRedirectPage(answer);
  x.addCookies(answer.headers, answer.status);
  x.finish(answer.status, null);
  return answer;
}

/**
 * Under --ingress-nginx-compat a redirect a stage made (a Location and no body) carries the page
 * nginx sends with its own redirects (status-page.ts nginxRedirectPage), as every other answer
 * Portico makes itself carries nginx's page for its status (docs/design.md, "One request").
 */
function withRedirectPage(answer: Response): Response {
  const page = nginxRedirectPage(answer.status);
  if (page === null || !answer.headers.has("location")) return answer;
  const headers = new Headers(answer.headers);
  headers.delete("content-length");
  headers.set("content-type", NGINX_PAGE_TYPE);
  return new Response(page, { status: answer.status, headers });
}
