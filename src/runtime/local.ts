// --workers 1: the data plane lives in this process. serveTraffic binds both traffic ports at
// start, HTTPS with the default certificate as a stand-in (a held port fails start-up); the
// first table's certificates replace it at once, before /readyz says ready.
import type { Instruments } from "../admin/instruments.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { DataPlane } from "../serving/plane.ts";
import { serveTraffic } from "../serving/serve.ts";
import { buildPortTls, createTlsBuilder } from "../serving/tls.ts";
import type { TableHolder } from "../table/holder.ts";

export function createLocalPlane(o: { config: Config; log: Logger; inst: Instruments; holder: TableHolder }): DataPlane {
  const { config, log, inst, holder } = o;
  const builder = createTlsBuilder(config, log);
  const standIn = builder.build([]);
  let expiry = standIn.expiry;
  const serving = serveTraffic({
    config,
    log,
    inst,
    table: () => holder.current,
    tls: { entries: standIn.entries, fingerprint: standIn.fingerprint, provisional: true },
    ports: "alone",
  });
  return {
    apply(result) {
      const built = builder.build(result.certificates, result.hostTls);
      expiry = built.expiry;
      serving.setTls(built.entries, built.fingerprint, buildPortTls(builder, result).ports);
      serving.tableChanged();
      return built.diagnostics;
    },
    get expiry() {
      return expiry;
    },
    ready: () =>
      serving.draining
        ? { ready: false, reason: "draining" }
        : serving.tlsProvisional && holder.generation > 0
          ? { ready: false, reason: "TLS listener not serving the first table's certificates yet" }
          : null,
    metrics: () => inst.registry.expose(),
    listening: serving.ports,
    shutdown: (d) => serving.shutdown(d),
  };
}
