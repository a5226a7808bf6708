// Start-up failures in Portico's words. Bun's listen errors name neither the address nor the
// flag ("EADDRNOTAVAIL: address not available, listen"): the operator gets the flag to change
// instead. A port in use is already said that way where it is bound (serving/ports.ts).
import type { Config } from "../config/types.ts";

type ListenConfig = Pick<Config, "bind" | "httpPort" | "httpsPort" | "adminPort">;

/** One line for the `start-up failed` log record. */
export function startupErrorMessage(err: unknown, c: ListenConfig): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = String((err as { code?: unknown } | null)?.code ?? "");
  const syscall = String((err as { syscall?: unknown } | null)?.syscall ?? "");
  if (code === "EADDRNOTAVAIL" && syscall === "listen") return `cannot listen on --bind ${c.bind}: it is not an address of this host (EADDRNOTAVAIL)`;
  if (code === "EACCES" && syscall === "listen") {
    return `cannot listen on ${c.bind}: permission denied; ports below 1024 need root or CAP_NET_BIND_SERVICE (--http-port ${c.httpPort}, --https-port ${c.httpsPort}, --admin-port ${c.adminPort}) (EACCES)`;
  }
  return message;
}
